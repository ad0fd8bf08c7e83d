"""Reads the PaddleNLP GPT format (``*_ids.npy`` + ``*_idx.npz``) as token windows (numpy only)."""

from __future__ import annotations

import numpy as np


class GPTWindows:
    """Documents in a seeded shuffled order, concatenated, cut into ``seq_len + 1`` windows."""

    def __init__(self, prefix: str, seq_len: int, seed: int, vocab_size: int | None = None):
        self.tokens = np.load(f"{prefix}_ids.npy", mmap_mode="r")
        lens = np.load(f"{prefix}_idx.npz")["lens"].astype(np.int64)
        if lens.sum() != len(self.tokens):
            raise ValueError(f"{prefix}: document lengths sum to {lens.sum()}, ids hold {len(self.tokens)}")
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        order = np.random.default_rng(seed).permutation(len(lens))
        self.doc_starts, self.doc_lens = starts[order], lens[order]
        self.doc_ends = np.cumsum(self.doc_lens)
        self.seq_len = seq_len
        self.num_samples = (int(self.doc_ends[-1]) - 1) // seq_len
        if self.num_samples < 1:
            raise ValueError(f"{prefix}: {len(self.tokens)} tokens are fewer than one sequence")
        self.vocab_size = vocab_size

    def __len__(self) -> int:
        return self.num_samples

    def window(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        begin, length = index * self.seq_len, self.seq_len + 1
        out = np.empty(length, dtype=np.int64)
        filled = 0
        doc = int(np.searchsorted(self.doc_ends, begin, side="right"))
        offset = begin - (int(self.doc_ends[doc - 1]) if doc else 0)
        while filled < length:
            take = min(length - filled, int(self.doc_lens[doc]) - offset)
            start = int(self.doc_starts[doc]) + offset
            out[filled:filled + take] = self.tokens[start:start + take]
            filled += take
            doc, offset = doc + 1, 0
        if self.vocab_size is not None and int(out.max()) >= self.vocab_size:
            raise ValueError(f"token id {int(out.max())} >= vocab size {self.vocab_size}")
        return out[:-1], out[1:]
