"""The synthetic image records: a fixed binary layout, deterministic, readable, learnable."""

from __future__ import annotations

import json
import sys

import numpy as np

from harness_cases.image_data import ensure_image_dataset, record_bytes
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR


def _reader():
    sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
    try:
        from image_records import ImageRecords
    finally:
        sys.path.remove(str(SHARED_SCRIPTS_DIR))
    return ImageRecords


def test_record_layout(tmp_path):
    folder, files, created = ensure_image_dataset(tmp_path, 32, 10, 100, seed=2)
    assert created and files == ["images.bin", "meta.json"]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["record_bytes"] == record_bytes(32) == 2 + 3 * 32 * 32
    raw = (folder / "images.bin").read_bytes()
    assert len(raw) == 100 * record_bytes(32)
    labels = [int.from_bytes(raw[i * meta["record_bytes"]:][:2], "little") for i in range(100)]
    assert max(labels) < 10 and len(set(labels)) == 10


def test_deterministic(tmp_path):
    a, _, _ = ensure_image_dataset(tmp_path / "a", 32, 10, 50, seed=4)
    b, _, _ = ensure_image_dataset(tmp_path / "b", 32, 10, 50, seed=4)
    c, _, _ = ensure_image_dataset(tmp_path / "c", 32, 10, 50, seed=5)
    assert (a / "images.bin").read_bytes() == (b / "images.bin").read_bytes()
    assert (a / "images.bin").read_bytes() != (c / "images.bin").read_bytes()


def test_reader_and_class_signal(tmp_path):
    folder, _, _ = ensure_image_dataset(tmp_path, 32, 4, 400, seed=1)
    records = _reader()(str(folder), seed=0)
    image, label = records.sample(0)
    assert image.shape == (3, 32, 32) and image.dtype == np.float32 and 0 <= label < 4
    # Images of one class are closer to their class mean than to other classes' means:
    # the labels are learnable, so a falling loss means the network learned.
    pixels = records.records["pixels"].astype(np.float32).reshape(400, -1)
    labels = records.records["label"].astype(int)
    means = np.stack([pixels[labels == c].mean(0) for c in range(4)])
    nearest = np.argmin(((pixels[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert (nearest == labels).mean() > 0.9


def test_uint8_samples_normalised_later_equal_the_float_samples(tmp_path):
    folder, _, _ = ensure_image_dataset(tmp_path, 32, 4, 50, seed=1)
    reader = _reader()
    floats, raw = reader(str(folder), seed=3), reader(str(folder), seed=3)  # same crops and flips
    module = sys.modules[type(raw).__module__]
    for index in range(20):
        image, label = floats.sample(index)
        pixels, same_label = raw.sample_uint8(index)
        assert pixels.dtype == np.uint8 and pixels.shape == (3, 32, 32) and label == same_label
        np.testing.assert_array_equal(module.normalise(pixels), image)
