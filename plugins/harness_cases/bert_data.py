"""The NGC BERT pre-training HDF5 format, synthesised deterministically when absent.

One file holds ``input_ids``, ``input_mask``, ``segment_ids`` (``[N, seq_len]``),
``masked_lm_positions``, ``masked_lm_ids`` (``[N, max_pred]``, zero padded: position 0 is
``[CLS]`` and never masked) and ``next_sentence_labels`` (``[N]``, 0 = B follows A,
1 = B is random), as written by NVIDIA's ``create_pretraining_data.py``.

The text is synthetic but learnable: documents are strings of "phrases" (fixed 6-token
snippets drawn Zipf-like from a phrase book), so masked tokens can be predicted from their
neighbours and a true next sentence continues its phrase, as in real text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness_cases.atomic_folder import ensure_folder
from harness_cases.shared_scripts.bert_hdf5 import FIELDS  # the reader's: one list of datasets

PAD, UNK, CLS, SEP, MASK = 0, 100, 101, 102, 103  # the bert-base-uncased special ids
FIRST_WORD_ID = 104


def dataset_name(vocab_size: int, seq_len: int, max_pred: int, num_samples: int, seed: int) -> str:
    return f"synthetic_bert_v{vocab_size}_s{seq_len}_p{max_pred}_n{num_samples}_seed{seed}"


def _phrase_stream(rng: np.random.Generator, book: np.ndarray, weights: np.ndarray, length: int
                   ) -> np.ndarray:
    picks = rng.choice(len(book), size=length // book.shape[1] + 2, p=weights)
    start = int(rng.integers(0, book.shape[1]))
    return book[picks].reshape(-1)[start:start + length]


def synthesize(vocab_size: int, seq_len: int, max_pred: int, num_samples: int, seed: int
               ) -> dict[str, np.ndarray]:
    if vocab_size <= FIRST_WORD_ID + 16:
        raise ValueError(f"vocab_size {vocab_size} leaves no room for words after the special ids")
    rng = np.random.default_rng(seed)
    n_phrases = max(64, (vocab_size - FIRST_WORD_ID) // 4)
    book = rng.integers(FIRST_WORD_ID, vocab_size, size=(n_phrases, 6))
    weights = 1.0 / np.arange(1, n_phrases + 1) ** 1.1
    weights /= weights.sum()
    out = {
        "input_ids": np.zeros((num_samples, seq_len), np.int32),
        "input_mask": np.zeros((num_samples, seq_len), np.int32),
        "segment_ids": np.zeros((num_samples, seq_len), np.int32),
        "masked_lm_positions": np.zeros((num_samples, max_pred), np.int32),
        "masked_lm_ids": np.zeros((num_samples, max_pred), np.int32),
        "next_sentence_labels": np.zeros((num_samples,), np.int32),
    }
    budget = seq_len - 3  # [CLS] A [SEP] B [SEP]
    for i in range(num_samples):
        total = int(rng.integers(budget // 2, budget + 1))  # some samples are padded
        len_a = int(rng.integers(1, total))
        len_b = total - len_a
        stream = _phrase_stream(rng, book, weights, len_a + len_b)
        a = stream[:len_a]
        is_random = bool(rng.random() < 0.5)
        b = _phrase_stream(rng, book, weights, len_b) if is_random else stream[len_a:]
        tokens = np.concatenate([[CLS], a, [SEP], b, [SEP]])
        n = len(tokens)
        segments = np.concatenate([np.zeros(len_a + 2, np.int32), np.ones(len_b + 1, np.int32)])
        candidates = np.array([j for j in range(n) if tokens[j] not in (CLS, SEP)])
        n_pred = min(max_pred, max(1, int(round(0.15 * len(candidates)))))
        positions = np.sort(rng.choice(candidates, size=n_pred, replace=False))
        original = tokens[positions].copy()
        masked = tokens.copy()
        roll = rng.random(n_pred)
        masked[positions[roll < 0.8]] = MASK  # 80% [MASK], 10% random word, 10% unchanged
        random_pos = positions[(roll >= 0.8) & (roll < 0.9)]
        masked[random_pos] = rng.integers(FIRST_WORD_ID, vocab_size, size=len(random_pos))
        out["input_ids"][i, :n] = masked
        out["input_mask"][i, :n] = 1
        out["segment_ids"][i, :n] = segments
        out["masked_lm_positions"][i, :n_pred] = positions
        out["masked_lm_ids"][i, :n_pred] = original
        out["next_sentence_labels"][i] = int(is_random)
    return out


def ensure_bert_dataset(root: Path, vocab_size: int, seq_len: int, max_pred: int,
                        num_samples: int, seed: int) -> tuple[Path, list[str], bool]:
    """Return (folder, files, synthesized_now); the folder appears atomically (a rename)."""
    import h5py

    name = dataset_name(vocab_size, seq_len, max_pred, num_samples, seed)
    files = ["training_0.hdf5"]

    def write(folder: Path) -> None:
        data = synthesize(vocab_size, seq_len, max_pred, num_samples, seed)
        with h5py.File(folder / files[0], "w") as handle:
            for key in FIELDS:
                handle.create_dataset(key, data=data[key], compression="gzip", compression_opts=1)

    return ensure_folder(root / "bert-hdf5" / name, files, write)
