"""The PaddleNLP/FlagPerf GPT dataset format, synthesised offline when absent.

Format (PaddleNLP ``create_pretraining_data.py``): ``<prefix>_ids.npy`` is one flat array of
token ids of all documents; ``<prefix>_idx.npz`` holds ``lens`` (tokens per document) and
``docs`` (cumulative sentence count per document, here one sentence each).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

DEFAULT_TOKENS = 1 << 22  # 4M tokens: plenty for smoke runs; longer runs wrap into epochs


def dataset_prefix(vocab_size: int, num_tokens: int, seed: int) -> str:
    return f"synthetic_gpt_v{vocab_size}_t{num_tokens}_s{seed}"


def synthesize_tokens(vocab_size: int, num_tokens: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic token stream with learnable structure, and its document lengths.

    Documents are sequences of "phrases": 8-token snippets drawn Zipf-like from a fixed
    phrase book. A model can learn phrase continuations, so the loss falls as on real text.
    """
    rng = np.random.default_rng(seed)
    phrase_len, n_phrases = 8, max(64, vocab_size // 4)
    book = rng.integers(0, vocab_size, size=(n_phrases, phrase_len), dtype=np.int64)
    weights = 1.0 / np.arange(1, n_phrases + 1) ** 1.1
    picks = rng.choice(n_phrases, size=num_tokens // phrase_len + 1, p=weights / weights.sum())
    tokens = book[picks].reshape(-1)[:num_tokens]
    lens = []
    remaining = num_tokens
    while remaining > 0:
        length = int(min(remaining, rng.integers(256, 4096)))
        lens.append(length)
        remaining -= length
    dtype = np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.int32
    return tokens.astype(dtype), np.asarray(lens, dtype=np.int32)


def ensure_gpt_dataset(root: Path, vocab_size: int, seed: int,
                       num_tokens: int = DEFAULT_TOKENS) -> tuple[Path, list[str], bool]:
    """Return (folder, files, synthesized_now). Writes atomically: a folder rename."""
    prefix = dataset_prefix(vocab_size, num_tokens, seed)
    target = root / "gpt-npy" / prefix
    files = [f"{prefix}_ids.npy", f"{prefix}_idx.npz"]
    if all((target / f).exists() for f in files):
        return target, files, False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{prefix}."))
    try:
        tokens, lens = synthesize_tokens(vocab_size, num_tokens, seed)
        np.save(staging / files[0], tokens)
        np.savez(staging / files[1], lens=lens, docs=np.arange(len(lens) + 1, dtype=np.int64))
        try:
            os.replace(staging, target)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target, files, True


def find_real_gpt_dataset(root: Path) -> tuple[Path, list[str]] | None:
    """A dataset the user placed in ``--data-dir`` (or its ``gpt-npy/``), if there is one.

    Any ``<prefix>_ids.npy`` with its ``<prefix>_idx.npz`` that harness did not synthesise,
    e.g. PaddleNLP's ``gpt_en_dataset_300m``; the first in name order is used.
    """
    for folder in (root, root / "gpt-npy"):
        if not folder.is_dir():
            continue
        for ids in sorted(folder.glob("*_ids.npy")):
            prefix = ids.name.removesuffix("_ids.npy")
            if not prefix.startswith("synthetic_") and (folder / f"{prefix}_idx.npz").is_file():
                return folder, [ids.name, f"{prefix}_idx.npz"]
    return None
