"""Synthetic uint8 images in a binary record format (CIFAR-style), written deterministically.

``images.bin`` is a sequence of fixed-size records: a little-endian ``uint16`` class label
followed by the image as ``uint8`` channels-first (3 x H x W) pixels, like the CIFAR-100
binary batches but with 2-byte labels for 1000 classes. ``meta.json`` says the image size,
record size, class count and sample count. Every framework reads it with its own data
loader (memory-mapped records, random crop with padding and flip, normalisation).

The images are learnable: each class has a coarse colour layout (a 4x4 grid of colours
scaled up to the image) on which every image adds noise and a random shift.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from harness_cases.atomic_folder import ensure_folder

IMAGES_FILE = "images.bin"
META_FILE = "meta.json"
CHUNK = 256


def dataset_name(image_size: int, num_classes: int, num_samples: int, seed: int) -> str:
    return f"synthetic_images_{image_size}px_c{num_classes}_n{num_samples}_seed{seed}"


def record_bytes(image_size: int) -> int:
    return 2 + 3 * image_size * image_size


def _class_layouts(rng: np.random.Generator, num_classes: int, image_size: int) -> np.ndarray:
    grid = rng.integers(0, 256, size=(num_classes, 3, 4, 4)).astype(np.float32)
    cell = -(-image_size // 4)
    big = grid.repeat(cell, axis=2).repeat(cell, axis=3)
    return big[:, :, :image_size, :image_size]


def write_images(path: Path, image_size: int, num_classes: int, num_samples: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    layouts = _class_layouts(rng, num_classes, image_size)
    labels = rng.integers(0, num_classes, size=num_samples)
    record = np.dtype([("label", "<u2"), ("pixels", "u1", (3, image_size, image_size))])
    with open(path, "wb") as handle:
        for begin in range(0, num_samples, CHUNK):
            chunk = labels[begin:begin + CHUNK]
            shift = rng.integers(-image_size // 8, image_size // 8 + 1, size=(len(chunk), 2))
            images = np.stack([np.roll(layouts[c], tuple(s), axis=(1, 2)) for c, s in zip(chunk, shift)])
            images += rng.normal(0.0, 25.0, size=images.shape).astype(np.float32)
            out = np.empty(len(chunk), dtype=record)
            out["label"] = chunk
            out["pixels"] = np.clip(images, 0, 255).astype(np.uint8)
            handle.write(out.tobytes())


def ensure_image_dataset(root: Path, image_size: int, num_classes: int, num_samples: int,
                         seed: int) -> tuple[Path, list[str], bool]:
    """Return (folder, files, synthesized_now); the folder appears atomically (a rename)."""
    name = dataset_name(image_size, num_classes, num_samples, seed)

    def write(folder: Path) -> None:
        write_images(folder / IMAGES_FILE, image_size, num_classes, num_samples, seed)
        meta = {"format": "uint16 label + uint8 CHW pixels per record", "image_size": image_size,
                "channels": 3, "record_bytes": record_bytes(image_size), "num_classes": num_classes,
                "num_samples": num_samples, "seed": seed}
        (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    return ensure_folder(root / "images-uint8" / name, [IMAGES_FILE, META_FILE], write)
