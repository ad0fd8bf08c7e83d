"""Reads the NGC BERT pre-training HDF5 files (numpy and h5py only).

Like NVIDIA's ``pretraining_dataset``: the padded ``masked_lm_positions``/``masked_lm_ids``
become a ``[seq_len]`` label row, -1 except at the masked positions (``sample``), or stay a
fixed-width list of positions with -1 labels past the end (``sample_positions``).
"""

from __future__ import annotations

import numpy as np

#: The datasets of an NGC BERT HDF5 file; ``harness_cases.bert_data`` writes these same ones.
FIELDS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
          "next_sentence_labels")


class BertSamples:
    def __init__(self, path: str):
        import h5py  # here: harness imports FIELDS without loading h5py

        with h5py.File(path, "r") as handle:
            missing = [key for key in FIELDS if key not in handle]
            if missing:
                raise ValueError(f"{path}: not an NGC BERT HDF5 file, missing {missing}")
            self.data = {key: np.asarray(handle[key][:]) for key in FIELDS}
        self.seq_len = self.data["input_ids"].shape[1]

    def __len__(self) -> int:
        return len(self.data["input_ids"])

    def _masked(self, index: int) -> tuple[np.ndarray, np.ndarray, int]:
        """The masked positions, their token ids, and how many of them are real."""
        positions = self.data["masked_lm_positions"][index].astype(np.int64)
        ids = self.data["masked_lm_ids"][index].astype(np.int64)
        count = len(positions)
        padded = np.nonzero(positions == 0)[0]
        if len(padded):
            count = int(padded[0])  # position 0 is [CLS]: a 0 marks the end of the list
        return positions, ids, count

    def _inputs(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d = self.data
        return (d["input_ids"][index].astype(np.int64), d["segment_ids"][index].astype(np.int64),
                d["input_mask"][index].astype(np.int64))

    def sample(self, index: int) -> tuple[np.ndarray, ...]:
        """input ids, segment ids, input mask, a ``[seq_len]`` MLM label row (-1 where not
        masked) and the next-sentence label."""
        positions, ids, count = self._masked(index)
        labels = np.full(self.seq_len, -1, np.int64)
        labels[positions[:count]] = ids[:count]
        return (*self._inputs(index), labels, np.int64(self.data["next_sentence_labels"][index]))

    def sample_positions(self, index: int) -> tuple[np.ndarray, ...]:
        """As ``sample``, with the masked positions and their labels (``max_predictions`` wide;
        past the real ones position 0 and label -1) in place of the label row: a trainer that
        gathers these rows has fixed shapes, where selecting by the label row has a
        data-dependent size (a device synchronisation every step)."""
        positions, ids, count = self._masked(index)
        labels = np.where(np.arange(len(positions)) < count, ids, -1)
        positions = np.where(labels >= 0, positions, 0)
        return (*self._inputs(index), positions, labels, np.int64(self.data["next_sentence_labels"][index]))
