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


def _padded_crop(pixels, pad, top, left, flip):
    """The per-sample augmentation written out: crop of the zero-padded image, then flip."""
    size = pixels.shape[-1]
    image = np.pad(pixels, ((0, 0), (pad, pad), (pad, pad)))[:, top:top + size, left:left + size]
    return image[:, :, ::-1] if flip else image


def test_batch_of_one_equals_the_per_sample_path(tmp_path):
    folder, _, _ = ensure_image_dataset(tmp_path, 32, 4, 50, seed=1)
    reader = _reader()
    per_sample, batched = reader(str(folder), seed=7), reader(str(folder), seed=7)  # same draws
    for index in list(range(50)) * 4:
        image, label = per_sample.sample_uint8(index)
        images, labels = batched.batch_uint8([index])
        assert images.shape == (1, 3, 32, 32) and images.dtype == np.uint8
        assert labels.dtype == np.int64 and labels.tolist() == [label]
        np.testing.assert_array_equal(images[0], image)


def test_batch_crops_and_flips_each_record_with_zeros_outside(tmp_path):
    folder, _, _ = ensure_image_dataset(tmp_path, 32, 4, 50, seed=1)
    reader = _reader()
    records = reader(str(folder), seed=0)
    indices = np.random.default_rng(5).permutation(50)[:40].tolist() * 5  # repeats: many draws each
    images, labels = records.batch_uint8(indices, np.random.default_rng(11))
    tops, lefts, flips = records.draw_augmentation(len(indices), np.random.default_rng(11))
    assert images.shape == (200, 3, 32, 32) and labels.shape == (200,) and labels.dtype == np.int64
    assert labels.tolist() == records.records["label"][indices].tolist()
    pad = records.pad
    assert pad == 2 and set(tops.tolist()) == set(lefts.tolist()) == set(range(2 * pad + 1))
    assert flips.any() and not flips.all()  # every offset and both flips occur in this batch
    for image, index, top, left, flip in zip(images, indices, tops, lefts, flips):
        np.testing.assert_array_equal(image, _padded_crop(records.records["pixels"][index], pad, top, left, flip))
    # the generator decides: another seed gives other crops of the same records
    assert not np.array_equal(records.batch_uint8(indices, np.random.default_rng(12))[0], images)


def _crop_of(records, index, image):
    """The (top, left, flip) of the padded-crop augmentation that made ``image`` of record ``index``."""
    pixels, pad = records.records["pixels"][index], records.pad
    [found] = [(top, left, flip) for top in range(2 * pad + 1) for left in range(2 * pad + 1)
               for flip in (False, True)
               if np.array_equal(_padded_crop(pixels, pad, top, left, flip), image)]
    return found


def test_loader_workers_draw_different_crops_and_a_seed_reproduces_them(tmp_path):
    """Paddle's and MXNet's loader workers are forked copies of the dataset, i.e. readers of
    the same seed in the same state. Each worker builds other batches: keyed by position
    (``sample_at``), their crop-and-flip sequences differ; drawn from the reader's own
    generator, every worker would repeat the same sequence."""
    folder, _, _ = ensure_image_dataset(tmp_path, 32, 4, 80, seed=1)
    reader = _reader()
    module = sys.modules[reader.__module__]
    worker_a, worker_b = reader(str(folder), seed=3), reader(str(folder), seed=3)
    batch_a, batch_b = [(0, i) for i in range(0, 40)], [(0, i) for i in range(40, 80)]

    def crops(worker, keys):
        return [_crop_of(worker, index, _uint8(worker.sample_at((epoch, index))[0], module))
                for epoch, index in keys]

    assert crops(worker_a, batch_a) != crops(worker_b, batch_b)
    # Same seed, same key: the same image, whichever worker and whatever it built before.
    fresh = reader(str(folder), seed=3)
    for key in batch_b[::7]:
        np.testing.assert_array_equal(fresh.sample_at(key)[0], worker_b.sample_at(key)[0])
    # Another epoch or another rank (seed + rank) draws other crops of the same images.
    for other in (reader(str(folder), seed=4), worker_a):
        epoch = 1 if other is worker_a else 0
        assert crops(other, [(epoch, i) for i in range(40)]) != crops(worker_a, batch_a)


def _uint8(image, module):
    """A normalised float image back to its uint8 pixels (normalisation is exact enough)."""
    return np.rint(image * module.STD + module.MEAN).astype(np.uint8)
