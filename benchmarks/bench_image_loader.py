"""Throughput of the PyTorch CNN trainer's data loader alone: images/s, no model, no device.

Two paths over the same uint8 image records (``harness_cases.image_data``), the same
DistributedSampler (one replica, shuffled, drop_last) and the same batch size:

- ``per-sample``: the loader train_cnn.py had before batch loading: a Dataset whose
  ``__getitem__`` calls ``ImageRecords.sample_uint8`` (np.pad, crop, flip) once per image and
  DataLoader's default collation stacking the images;
- ``batch``: train_cnn.py's loader now (``RecordBatches`` + ``batch_loader``): one
  ``ImageRecords.batch_uint8`` call per batch in the worker, no collation, and one endless
  iterator over the epochs (no restart of the prefetching at an epoch boundary).

Each path draws its crops and flips as its loader does, all from ``--seed``: per-sample from
the reader's own generator (``ImageRecords(folder, seed)``; each worker holds a copy of it,
as the old loader's workers did), batch from ``augmentation_rng(seed, epoch, batch number)``.
So the two paths crop and flip different images the same way in distribution (a uniform
offset, half of them flipped), and each pass of a path sees the same images as the last.

For each worker count, each path reads ``--warmup`` batches (worker start-up), then
``--batches`` timed batches, epochs advancing as each path does in training; the figure
is the median images/s over ``--repeats`` such passes, the paths' order alternating from one
repeat to the next, the records file read through before each pass. Workers persist
(as in train_cnn.py); memory is not pinned (no accelerator here).

    python benchmarks/bench_image_loader.py                     # the case's smoke records (32px)
    python benchmarks/bench_image_loader.py --scale full --batches 60   # 224px, 2048 records
    python benchmarks/bench_image_loader.py --workers 0 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from harness.cache import default_cache_dir
from harness.models.config import RunSettings
from harness_cases.cnn_cases import cnn_case
from harness_cases.image_data import IMAGES_FILE, ensure_image_dataset
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR
from harness_pytorch.plugin import TRAIN_SCRIPTS

sys.path[:0] = [str(SHARED_SCRIPTS_DIR), str(TRAIN_SCRIPTS["resnet50"].parent)]
from image_records import ImageRecords  # noqa: E402
from train_cnn import RecordBatches, batch_loader  # noqa: E402


class PerSampleRecords(Dataset):
    """train_cnn.py's dataset before batch loading: one augmented image per call."""

    def __init__(self, folder: str, seed: int):
        self.records = ImageRecords(folder, seed)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        image, label = self.records.sample_uint8(index)
        return torch.from_numpy(image), label


def build_loader(path: str, folder: str, seed: int, batch: int, workers: int) -> tuple[DataLoader, DistributedSampler]:
    options = {"num_workers": workers, "persistent_workers": workers > 0}
    dataset = PerSampleRecords(folder, seed) if path == "per-sample" else RecordBatches(folder, seed)
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=seed, drop_last=True)
    if path == "per-sample":
        return DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=True, **options), sampler
    return batch_loader(dataset, sampler, batch, **options), sampler


def images_per_second(loader: DataLoader, sampler: DistributedSampler, warmup: int, batches: int) -> float:
    def per_epoch():  # the per-sample loader: one iterator per epoch, as train_cnn.py had
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            yield from loader
            epoch += 1

    stream = per_epoch() if isinstance(loader.dataset, PerSampleRecords) else iter(loader)  # batch: endless
    for _ in range(warmup):
        next(stream)
    images = 0
    start = time.perf_counter()
    for _ in range(batches):
        images += next(stream)[0].shape[0]
    return images / (time.perf_counter() - start)


def read_through(path: Path) -> None:
    """Read the records file once, so that neither path pays for pages not yet cached."""
    with open(path, "rb") as handle:
        while handle.read(1 << 24):
            pass


def records_folder(scale: str, data_dir: Path, seed: int) -> tuple[Path, dict]:
    """The records `harness run --case resnet50 [--scale smoke]` trains on (same folder, reused)."""
    case = cnn_case("resnet50")
    params = {**case.settings, **case.params, **(case.smoke if scale == "smoke" else {})}
    folder, _, _ = ensure_image_dataset(data_dir, int(params["image_size"]), int(params["num_classes"]),
                                        int(params["num_samples"]), seed)
    return folder, params


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", choices=["smoke", "full"], default="smoke",
                        help="the resnet50 case's records at smoke scale (32px) or full (224px)")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--batch-size", type=int, help="default: the case's micro batch at that scale")
    parser.add_argument("--batches", type=int, default=200, help="timed batches per pass")
    parser.add_argument("--warmup", type=int, default=20, help="batches read before timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=RunSettings.model_fields["seed"].default)
    parser.add_argument("--data-dir", type=Path, default=default_cache_dir() / "data")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if min(args.workers) < 0 or min(args.batches, args.warmup + 1, args.repeats) < 1:
        parser.error("--workers must be >= 0, --batches and --repeats >= 1, --warmup >= 0")
    folder, params = records_folder(args.scale, args.data_dir, args.seed)
    batch = args.batch_size or int(params["micro_batch_size"])
    print(f"records {folder} ({params['image_size']}px, {params['num_samples']} images), batch {batch}, "
          f"{args.batches} timed batches after {args.warmup}, median of {args.repeats}; "
          f"{len(os.sched_getaffinity(0))} CPUs, torch {torch.__version__}, {platform.processor() or platform.machine()}")
    rows = []
    for workers in args.workers:
        rates: dict[str, list[float]] = {"per-sample": [], "batch": []}
        for repeat in range(args.repeats):
            for path in (list(rates) if repeat % 2 == 0 else list(rates)[::-1]):
                read_through(folder / IMAGES_FILE)
                loader, sampler = build_loader(path, str(folder), args.seed, batch, workers)
                rates[path].append(images_per_second(loader, sampler, args.warmup, args.batches))
                del loader  # its persistent workers exit
        per_sample, batched = (statistics.median(rates[p]) for p in ("per-sample", "batch"))
        rows.append({"workers": workers, "per_sample_images_s": per_sample, "batch_images_s": batched,
                     "speedup": batched / per_sample, "runs": rates})
    print(f"\n| workers | per-sample images/s | batch images/s | batch / per-sample |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['workers']} | {row['per_sample_images_s']:,.0f} | {row['batch_images_s']:,.0f} | "
              f"{row['speedup']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps({"scale": args.scale, "image_size": params["image_size"], "batch": batch,
                                         "batches": args.batches, "warmup": args.warmup, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
