"""The PaddleNLP/FlagPerf GPT dataset format, synthesised offline when absent.

Format (PaddleNLP ``create_pretraining_data.py``): ``<prefix>_ids.npy`` is one flat array of
token ids of all documents; ``<prefix>_idx.npz`` holds ``lens`` (tokens per document) and
``docs`` (cumulative sentence count per document, here one sentence each).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness_cases.atomic_folder import ensure_folder

DEFAULT_TOKENS = 1 << 22  # 4M tokens: plenty for smoke runs; longer runs wrap into epochs

# The source: a first-order Markov chain over the vocabulary. Token frequencies follow
# Zipf's law (s = 1.1, as in English text); each token has a fixed set of likely successors
# (SUCCESSORS of them, Zipf-weighted, s = 1.2), followed with probability FOLLOW, otherwise
# the next token is drawn from the unigram distribution. Documents start from the chain's
# stationary distribution. Its entropy rate lies far below
# ln(vocab), so a model's loss falls from ln(vocab) towards it as on real text: first the
# token frequencies are learnt, then the successors. The stream is stationary and its
# tables depend only on the vocabulary size, so every seed and every window of the stream
# has the same statistics (the earlier phrase-book data let a large model memorise whole
# 8-token phrases within a few steps and then diverge under the warm-up's rising rate).
UNIGRAM_ZIPF, SUCCESSOR_ZIPF = 1.1, 1.2
SUCCESSORS, FOLLOW = 16, 0.85
_SOURCE_SEED = 20261123  # the source's tables; the run's seed only picks the sample
SOURCE_VERSION = 1  # part of the cache key: change it whenever the source changes


def dataset_prefix(vocab_size: int, num_tokens: int, seed: int) -> str:
    return f"synthetic_gpt_markov{SOURCE_VERSION}_v{vocab_size}_t{num_tokens}_s{seed}"


def _zipf(n: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    return weights / weights.sum()


def markov_source(vocab_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unigram probabilities, successor table [vocab, SUCCESSORS], successor probabilities).

    Token ids are a fixed permutation of frequency ranks, so frequent ids are spread over
    the vocabulary (as in a real BPE vocabulary) rather than being the lowest numbers.
    """
    rng = np.random.default_rng([_SOURCE_SEED, vocab_size])
    unigram = np.empty(vocab_size)
    unigram[rng.permutation(vocab_size)] = _zipf(vocab_size, UNIGRAM_ZIPF)
    # Successors favour frequent tokens, tempered (square root) so the chain's stationary
    # distribution stays close to the unigram instead of piling onto the commonest tokens.
    tempered = np.sqrt(unigram) / np.sqrt(unigram).sum()
    successors = rng.choice(vocab_size, size=(vocab_size, SUCCESSORS), p=tempered)
    return unigram, successors, _zipf(SUCCESSORS, SUCCESSOR_ZIPF)


def stationary_distribution(vocab_size: int) -> np.ndarray:
    """The chain's stationary token distribution (power iteration; the chain mixes fast
    because every step restarts from the unigram with probability 1 - FOLLOW)."""
    unigram, successors, follow_p = markov_source(vocab_size)
    pi = unigram.copy()
    for _ in range(200):
        nxt = (1 - FOLLOW) * unigram
        np.add.at(nxt, successors, FOLLOW * pi[:, None] * follow_p[None, :])
        done = np.abs(nxt - pi).sum() < 1e-12
        pi = nxt
        if done:
            break
    return pi / pi.sum()


def entropy_rate(vocab_size: int) -> float:
    """The source's entropy per token in nats: the loss a perfect model would approach."""
    unigram, successors, follow_p = markov_source(vocab_size)
    pi = stationary_distribution(vocab_size)
    base = (1 - FOLLOW) * unigram
    base_terms = -base * np.log(base)
    base_entropy = float(base_terms.sum())
    total = 0.0
    for state in range(vocab_size):
        # Only the successors' probabilities differ from the base distribution.
        ids, inverse = np.unique(successors[state], return_inverse=True)
        mixed = base[ids] + np.bincount(inverse, weights=FOLLOW * follow_p)
        entropy = base_entropy - float(base_terms[ids].sum()) - float((mixed * np.log(mixed)).sum())
        total += pi[state] * entropy
    return total


def synthesize_tokens(vocab_size: int, num_tokens: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic token stream from the Markov source, and its document lengths.

    Documents (256 to 4095 tokens) start from the stationary distribution, so every
    position of every document has the same statistics; they are generated side by side,
    one vectorised step per token position.
    """
    unigram, successors, follow_p = markov_source(vocab_size)
    start = np.cumsum(stationary_distribution(vocab_size))
    start[-1] = 1.0
    rng = np.random.default_rng(seed)
    lens = []
    remaining = num_tokens
    while remaining > 0:
        length = int(min(remaining, rng.integers(256, 4096)))
        lens.append(length)
        remaining -= length
    lens_arr = np.asarray(lens, dtype=np.int32)
    width = int(lens_arr.max())
    docs = np.empty((len(lens), width), dtype=np.int64)
    cumulative = np.cumsum(unigram)
    cumulative[-1] = 1.0
    docs[:, 0] = np.searchsorted(start, rng.random(len(lens)), side="right")
    for pos in range(1, width):
        follow = rng.random(len(lens)) < FOLLOW
        succ = successors[docs[:, pos - 1], rng.choice(SUCCESSORS, size=len(lens), p=follow_p)]
        fresh = np.searchsorted(cumulative, rng.random(len(lens)), side="right")
        docs[:, pos] = np.where(follow, succ, fresh)
    mask = np.arange(width)[None, :] < lens_arr[:, None]
    tokens = docs[mask]  # row-major: document after document
    dtype = np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.int32
    return tokens.astype(dtype), lens_arr


def ensure_gpt_dataset(root: Path, vocab_size: int, seed: int,
                       num_tokens: int = DEFAULT_TOKENS) -> tuple[Path, list[str], bool]:
    """Return (folder, files, synthesized_now). Writes atomically: a folder rename."""
    prefix = dataset_prefix(vocab_size, num_tokens, seed)
    files = [f"{prefix}_ids.npy", f"{prefix}_idx.npz"]

    def write(folder: Path) -> None:
        tokens, lens = synthesize_tokens(vocab_size, num_tokens, seed)
        np.save(folder / files[0], tokens)
        np.savez(folder / files[1], lens=lens, docs=np.arange(len(lens) + 1, dtype=np.int64))

    return ensure_folder(root / "gpt-npy" / prefix, files, write)


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
