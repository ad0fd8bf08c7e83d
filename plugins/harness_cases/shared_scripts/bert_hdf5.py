"""Reads the NGC BERT pre-training HDF5 files (numpy and h5py only).

Like NVIDIA's ``pretraining_dataset``: the padded ``masked_lm_positions``/``masked_lm_ids``
become a ``[seq_len]`` label row, -1 except at the masked positions.
"""

from __future__ import annotations

import h5py
import numpy as np

FIELDS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
          "next_sentence_labels")


class BertSamples:
    def __init__(self, path: str):
        with h5py.File(path, "r") as handle:
            missing = [key for key in FIELDS if key not in handle]
            if missing:
                raise ValueError(f"{path}: not an NGC BERT HDF5 file, missing {missing}")
            self.data = {key: np.asarray(handle[key][:]) for key in FIELDS}
        self.seq_len = self.data["input_ids"].shape[1]

    def __len__(self) -> int:
        return len(self.data["input_ids"])

    def sample(self, index: int) -> tuple[np.ndarray, ...]:
        d = self.data
        positions = d["masked_lm_positions"][index]
        ids = d["masked_lm_ids"][index]
        labels = np.full(self.seq_len, -1, np.int64)
        count = len(positions)
        padded = np.nonzero(positions == 0)[0]
        if len(padded):
            count = int(padded[0])  # position 0 is [CLS]: a 0 marks the end of the list
        labels[positions[:count]] = ids[:count]
        return (d["input_ids"][index].astype(np.int64), d["segment_ids"][index].astype(np.int64),
                d["input_mask"][index].astype(np.int64), labels,
                np.int64(d["next_sentence_labels"][index]))
