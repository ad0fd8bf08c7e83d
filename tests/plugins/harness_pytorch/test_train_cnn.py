"""The PyTorch CNN trainer's loader: whole batches from the workers, endless across epochs with
the distributed sampler's epoch shuffle and drop_last kept, and augmentation that differs
between workers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness_cases.image_data import record_bytes  # noqa: E402
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

SCRIPTS_DIR = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
SIZE = 16


def _train_cnn():
    for folder in (str(SCRIPTS_DIR), str(SHARED_SCRIPTS_DIR)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import train_cnn

    return train_cnn


def _records(folder: Path, count: int, same_image: bool) -> Path:
    """Records whose label is their index; every image the same one when ``same_image``."""
    folder.mkdir()
    record = np.dtype([("label", "<u2"), ("pixels", "u1", (3, SIZE, SIZE))])
    rng = np.random.default_rng(0)
    items = np.zeros(count, record)
    items["label"] = np.arange(count)
    items["pixels"] = rng.integers(1, 256, size=(1 if same_image else count, 3, SIZE, SIZE))
    (folder / "images.bin").write_bytes(items.tobytes())
    meta = {"image_size": SIZE, "num_classes": count, "num_samples": count, "record_bytes": record_bytes(SIZE)}
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def _crops(pixels: np.ndarray, pad: int = 1):
    """Every crop of the zero-padded image, each also flipped (``pad`` is 16px images' pad)."""
    padded = np.pad(pixels, ((0, 0), (pad, pad), (pad, pad)))
    crops = [padded[:, top:top + SIZE, left:left + SIZE] for top in range(2 * pad + 1)
             for left in range(2 * pad + 1)]
    return [torch.from_numpy(np.ascontiguousarray(c)) for crop in crops for c in (crop, crop[:, :, ::-1])]


def _loader(folder: Path, batch: int, workers: int, *, seed: int = 3, world: int = 1, rank: int = 0):
    train_cnn = _train_cnn()
    dataset = train_cnn.RecordBatches(str(folder), seed + rank)
    sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True,
                                                  seed=seed, drop_last=True)
    options = {"num_workers": workers, "persistent_workers": workers > 0}
    return train_cnn.batch_loader(dataset, sampler, batch, **options), sampler


def _epochs(loader, count: int):
    """The first ``count`` epochs of the endless loader, as lists of (images, labels)."""
    per_epoch = loader.sampler.batches_per_epoch()
    stream = iter(loader)
    return [[tuple(t.clone() for t in next(stream)) for _ in range(per_epoch)] for _ in range(count)]


def test_endless_whole_batches_keep_drop_last_and_the_epoch_shuffle(tmp_path):
    folder = _records(tmp_path / "records", 20, same_image=False)
    loader, sampler = _loader(folder, batch=8, workers=0)
    assert loader.sampler.batches_per_epoch() == 2  # 20 images, batches of 8: the last 4 dropped
    epochs = _epochs(loader, 3)
    pixels = np.fromfile(folder / "images.bin", np.dtype([("label", "<u2"), ("pixels", "u1", (3, SIZE, SIZE))]))
    for number, epoch in enumerate(epochs):
        assert [tuple(images.shape) for images, _ in epoch] == [(8, 3, SIZE, SIZE)] * 2
        assert all(images.dtype == torch.uint8 and labels.dtype == torch.int64 for images, labels in epoch)
        # the labels are the indices: each epoch is the distributed sampler's order for that epoch
        sampler.set_epoch(number)
        assert torch.cat([labels for _, labels in epoch]).tolist() == list(sampler)[:16]
        for images, labels in epoch:  # each image is a crop or flipped crop of its own record
            for image, label in zip(images, labels):
                assert any(torch.equal(image, crop) for crop in _crops(pixels["pixels"][int(label)]))
    orders = [torch.cat([labels for _, labels in epoch]).tolist() for epoch in epochs]
    assert orders[0] != orders[1] != orders[2]
    # the two ranks of a 2-process run read disjoint halves
    halves = [torch.cat([labels for _, labels in _epochs(_loader(folder, 4, 0, world=2, rank=r)[0], 1)[0]]).tolist()
              for r in (0, 1)]
    assert len(halves[0]) == len(halves[1]) == 8 and not set(halves[0]) & set(halves[1])


def test_fewer_images_than_a_batch_is_refused(tmp_path):
    folder = _records(tmp_path / "records", 6, same_image=False)
    with pytest.raises(ValueError, match="6 images per process, fewer than one batch of 8"):
        _loader(folder, batch=8, workers=0)


def test_two_workers_do_not_repeat_each_others_crops(tmp_path):
    # Every record holds the same image: batches 0 and 1 of an epoch (made by workers 0 and 1)
    # differ only by their augmentation.
    folder = _records(tmp_path / "records", 16, same_image=True)
    loader, sampler = _loader(folder, batch=8, workers=2)
    epochs = _epochs(loader, 2)
    for (images_a, _), (images_b, _) in epochs:
        assert not torch.equal(images_a, images_b)
    assert not torch.equal(epochs[0][0][0], epochs[1][0][0])  # and epoch 1 is not epoch 0 again
    # the augmentation depends on the seed, epoch and batch, not on which worker made it
    single, _ = _loader(folder, batch=8, workers=0)
    for got, expected in zip(_epochs(single, 2), epochs):
        for (images, labels), (same_images, same_labels) in zip(got, expected):
            assert torch.equal(images, same_images) and torch.equal(labels, same_labels)
