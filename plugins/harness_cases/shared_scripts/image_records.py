"""Reads the uint8 image records of ``harness_cases.image_data`` (numpy only).

Training augmentation as in ImageNet recipes, at the record's own size: random crop from a
zero-padded image, random horizontal flip, per-channel normalisation to float32 CHW. One image
at a time (``sample_uint8``, ``sample``, ``sample_at``) or a whole batch into one array
(``batch_uint8``).

Loader workers are forked copies of the dataset: a generator the dataset holds is copied with
the same state into every worker, and the workers would repeat each other's crops and flips.
Trainers with workers therefore draw each batch's (or image's) augmentation from a generator
seeded with its position (``augmentation_rng``): the same draws whichever worker builds it and
however many workers there are.
"""

from __future__ import annotations

import json
import os

import numpy as np

def augmentation_rng(seed: int, epoch: int, key: int) -> np.random.Generator:
    """The generator of the crops and flips of batch (or image) ``key`` of ``epoch``; trainers
    pass their seed + rank as ``seed``, so that every process draws its own."""
    return np.random.default_rng([seed, epoch, int(key)])


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
        self.pixels, self.labels = self.records["pixels"], self.records["label"]  # views, no copy
        self.pad = max(1, size // 16)
        self.seed = seed
        self.rng = np.random.default_rng(seed)  # one process without loader workers only

    def __len__(self) -> int:
        return len(self.records)

    def sample_uint8(self, index: int, rng: np.random.Generator | None = None) -> tuple[np.ndarray, int]:
        """The augmented image as uint8 CHW, not yet normalised, and its label, drawing from
        ``rng`` (default: the reader's own).

        Cropping and flipping commute with the per-channel normalisation, so a trainer may
        normalise on its device (``normalise``): a quarter of the bytes to copy and no float
        work in the loader's workers.
        """
        item = self.records[index]
        pad, size = self.pad, self.image_size
        padded = np.pad(item["pixels"], ((0, 0), (pad, pad), (pad, pad)))  # zeros, as before normalising
        rng = self.rng if rng is None else rng
        top, left = rng.integers(0, 2 * pad + 1, size=2)
        image = padded[:, top:top + size, left:left + size]
        if rng.random() < 0.5:
            image = image[:, :, ::-1]
        return np.ascontiguousarray(image), int(item["label"])

    def draw_augmentation(self, count: int, rng: np.random.Generator | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Crop offsets into the zero-padded image (rows, columns, each in [0, 2 * pad]) and
        horizontal flips for ``count`` images: for one image, the draws ``sample_uint8`` makes."""
        rng = self.rng if rng is None else rng
        offsets = rng.integers(0, 2 * self.pad + 1, size=(count, 2))
        flips = rng.random(count) < 0.5
        return offsets[:, 0], offsets[:, 1], flips

    def batch_uint8(self, indices, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The augmented images of ``indices`` as one uint8 N x 3 x S x S array (not normalised)
        and their labels as int64, drawing from ``rng`` (default: the reader's own).

        The augmentation of ``sample_uint8`` without padding a copy of each image: every record
        is copied once, straight from the memory map into its window of one zeroed array (the
        window a crop of the padded image would cover), through a mirrored view when flipped.
        """
        indices = np.asarray(indices, dtype=np.int64)
        tops, lefts, flips = self.draw_augmentation(len(indices), rng)
        return self.crop_flip_batch(indices, tops, lefts, flips), self.labels[indices].astype(np.int64)

    def crop_flip_batch(self, indices: np.ndarray, tops: np.ndarray, lefts: np.ndarray,
                        flips: np.ndarray) -> np.ndarray:
        """Records ``indices`` cropped at (top, left) of the zero-padded image and flipped where
        ``flips`` says, into one zeroed uint8 array."""
        pad, size = self.pad, self.image_size
        out = np.zeros((len(indices), 3, size, size), np.uint8)
        for row, (index, top, left, flip) in enumerate(zip(indices, tops, lefts, flips)):
            # Crop pixel (y, x) is padded pixel (y + top, x + left), i.e. source pixel
            # (y + top - pad, x + left - pad); outside the source it stays zero.
            dy, dx = int(top) - pad, int(left) - pad
            target = out[row, :, :, ::-1] if flip else out[row]
            target[:, max(0, -dy):size - max(0, dy), max(0, -dx):size - max(0, dx)] = \
                self.pixels[index, :, max(0, dy):size - max(0, -dy), max(0, dx):size - max(0, -dx)]
        return out

    def sample(self, index: int, rng: np.random.Generator | None = None) -> tuple[np.ndarray, int]:
        """The augmented, normalised float32 CHW image and its label."""
        image, label = self.sample_uint8(index, rng)
        return normalise(image), label

    def sample_at(self, key: tuple[int, int]) -> tuple[np.ndarray, int]:
        """``sample`` of the image ``(epoch, index)``, its crop and flip drawn from
        ``augmentation_rng(seed, epoch, index)``: what a loader worker's dataset returns."""
        epoch, index = key
        return self.sample(int(index), augmentation_rng(self.seed, epoch, index))


def normalise(image: np.ndarray) -> np.ndarray:
    """uint8 CHW pixels to float32 with the ImageNet per-channel mean and deviation."""
    return np.ascontiguousarray((image.astype(np.float32) - MEAN) / STD, dtype=np.float32)


def equivalence_batches(records: ImageRecords, equivalence, batch_size: int, seed: int):
    """``harness equivalence``'s batches: normalised float32 images and int64 labels of the
    neutral sample order (``equivalence.Equivalence.batches``), each batch's crops and flips
    drawn from ``augmentation_rng(seed, 0, its number)``: the same pixels in every framework."""
    for number, indices in enumerate(equivalence.batches(len(records), batch_size, seed)):
        images, labels = records.batch_uint8(indices, augmentation_rng(seed, 0, number))
        yield normalise(images), labels
