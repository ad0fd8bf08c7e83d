"""Reads the uint8 image records of ``harness_cases.image_data`` (numpy only).

Training augmentation as in ImageNet recipes, at the record's own size: random crop from a
zero-padded image, random horizontal flip, per-channel normalisation to float32 CHW.
"""

from __future__ import annotations

import json
import os

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1) * 255.0
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1) * 255.0


class ImageRecords:
    def __init__(self, folder: str, seed: int = 0):
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as handle:
            self.meta = json.load(handle)
        size = int(self.meta["image_size"])
        self.image_size = size
        self.num_classes = int(self.meta["num_classes"])
        record = np.dtype([("label", "<u2"), ("pixels", "u1", (3, size, size))])
        if record.itemsize != int(self.meta["record_bytes"]):
            raise ValueError(f"{folder}: record size {record.itemsize} != meta {self.meta['record_bytes']}")
        self.records = np.memmap(os.path.join(folder, "images.bin"), dtype=record, mode="r")
        if len(self.records) != int(self.meta["num_samples"]):
            raise ValueError(f"{folder}: {len(self.records)} records, meta says {self.meta['num_samples']}")
        self.pad = max(1, size // 16)
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.records)

    def sample_uint8(self, index: int) -> tuple[np.ndarray, int]:
        """The augmented image as uint8 CHW, not yet normalised, and its label.

        Cropping and flipping commute with the per-channel normalisation, so a trainer may
        normalise on its device (``normalise``): a quarter of the bytes to copy and no float
        work in the loader's workers.
        """
        item = self.records[index]
        pad, size = self.pad, self.image_size
        padded = np.pad(item["pixels"], ((0, 0), (pad, pad), (pad, pad)))  # zeros, as before normalising
        top, left = self.rng.integers(0, 2 * pad + 1, size=2)
        image = padded[:, top:top + size, left:left + size]
        if self.rng.random() < 0.5:
            image = image[:, :, ::-1]
        return np.ascontiguousarray(image), int(item["label"])

    def sample(self, index: int) -> tuple[np.ndarray, int]:
        """The augmented, normalised float32 CHW image and its label."""
        image, label = self.sample_uint8(index)
        return normalise(image), label


def normalise(image: np.ndarray) -> np.ndarray:
    """uint8 CHW pixels to float32 with the ImageNet per-channel mean and deviation."""
    return np.ascontiguousarray((image.astype(np.float32) - MEAN) / STD, dtype=np.float32)
