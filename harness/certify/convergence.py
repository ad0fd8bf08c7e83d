"""Convergence: each repeat's loss at fixed checkpoints must lie in the reference band.

Reference bands are recorded from reference runs (``harness certify reference``) with several
seeds and stored in the repository, one JSON file per case, scale, framework, precision, global
batch and step count (``harness/certify/references/``): a suite may hold the same case at the
same batch in fp32 and bf16, whose curves need not share a band. At each checkpoint the loss is
the mean of the last ``window`` logged losses up to it, which smooths batch-to-batch noise. The
band is centred on the mean over the reference runs and reaches max(SIGMAS x the prediction
spread, FLOOR x the loss) either side, where the prediction spread is the runs' standard
deviation times sqrt(1 + 1/n): how far one more honest run may lie from the mean of n. Not the
run with the suite's own seed: every repeat trains on its own data order (the data nonce), so
no run reproduces another, and a band centred on one run drew its centre's own scatter in
(ResNet-50 at smoke scale, one process, was centred about 0.1 below where its certified repeats
landed at step 10). The runs' spread bounds what differs between honest runs (initialisation,
sample order, rounding that compounds); a wrong learning rate or a broken kernel moves the
curve far outside it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from harness.certify.checks import Check, failed, passed
from harness.results_io import atomic_write_text
from harness.stats import mean, stdev

if TYPE_CHECKING:
    from harness.models import BenchmarkResult

REFERENCE_DIR = Path(__file__).parent / "references"
SIGMAS = 4.0
FLOOR = 0.01  # 1% of the loss: the least band width, when the seeds happen to agree closely


class Band(BaseModel):
    step: int
    mean: float = Field(description="Mean loss of the reference runs (the band's centre).")
    low: float
    high: float
    values: list[float] = Field(description="Each reference run's loss at this checkpoint.")


class Reference(BaseModel):
    case: str
    scale: str
    framework: str
    precision: str
    global_batch_size: int
    max_steps: int
    window: int
    seeds: list[int]
    center_seed: int = Field(description="The suite's own seed, always among the reference runs' "
                                         "(the seed certified repeats are locked to).")
    recorded_on: str = Field(description="Device and vendor the references ran on.")
    bands: list[Band]


def reference_name(case: str, scale: str, framework: str, precision: str, global_batch_size: int,
                   max_steps: int) -> str:
    return f"{case}-{scale}-{framework}-{precision}-gbs{global_batch_size}-steps{max_steps}.json"


def load_reference(case: str, scale: str, framework: str, precision: str, global_batch_size: int,
                   max_steps: int, folder: Path = REFERENCE_DIR) -> Reference | None:
    path = folder / reference_name(case, scale, framework, precision, global_batch_size, max_steps)
    if not path.is_file():
        return None
    return Reference.model_validate_json(path.read_text(encoding="utf-8"))


def reference_for_run(case: str, scale: str, framework: str, result: BenchmarkResult,
                      folder: Path = REFERENCE_DIR) -> Reference | None:
    """The band a run is judged against: its case, the suite's scale and the point's framework,
    and the run's own precision, global batch and step count."""
    return load_reference(case, scale, framework, result.precision, result.global_batch_size,
                          result.max_steps, folder)


def describe_run(case: str, scale: str, framework: str, result: BenchmarkResult | None) -> str:
    """The band's key in words, for a check's reason."""
    if result is None:
        return f"{case} at {scale} scale, {framework}"
    return (f"{case} at {scale} scale, {framework}, {result.precision}, "
            f"global batch {result.global_batch_size}, {result.max_steps} steps")


def checkpoint_losses(losses: Sequence[tuple[int, float]], checkpoints: Sequence[int],
                      window: int) -> dict[int, float | None]:
    """Mean of the last ``window`` losses logged at or before each checkpoint step (None
    when the run logged no loss up to it or did not reach it)."""
    ordered = sorted(losses)
    last_step = ordered[-1][0] if ordered else 0
    out: dict[int, float | None] = {}
    for step in checkpoints:
        upto = [loss for s, loss in ordered if s <= step]
        out[step] = mean(upto[-window:]) if last_step >= step else None
    return out


def make_reference(runs: dict[int, Sequence[tuple[int, float]]], *, center_seed: int, case: str,
                   scale: str, framework: str, precision: str, global_batch_size: int, max_steps: int,
                   checkpoints: Sequence[int], window: int, recorded_on: str) -> Reference:
    """A reference from runs with different seeds (seed -> (step, loss) pairs), one of them
    ``center_seed``, the seed certified runs use."""
    if len(runs) < 3 or center_seed not in runs:
        raise ValueError(f"a reference band needs runs with at least three seeds, {center_seed} among them")
    bands = []
    per_seed = {seed: checkpoint_losses(losses, checkpoints, window) for seed, losses in runs.items()}
    for step in checkpoints:
        values = [per_seed[seed][step] for seed in sorted(runs)]
        if any(v is None for v in values):
            raise ValueError(f"a reference run logged no loss up to checkpoint {step}")
        center = mean(values)
        half = max(SIGMAS * stdev(values) * math.sqrt(1 + 1 / len(values)), FLOOR * abs(center))
        bands.append(Band(step=step, mean=center, low=center - half, high=center + half, values=values))
    return Reference(case=case, scale=scale, framework=framework, precision=precision,
                     global_batch_size=global_batch_size,
                     max_steps=max_steps, window=window, seeds=sorted(runs), center_seed=center_seed,
                     recorded_on=recorded_on, bands=bands)


def save_reference(reference: Reference, folder: Path = REFERENCE_DIR) -> Path:
    path = folder / reference_name(reference.case, reference.scale, reference.framework,
                                   reference.precision, reference.global_batch_size, reference.max_steps)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(reference.model_dump(), indent=1) + "\n")
    return path


def check_convergence(repeats: Sequence[tuple[int, Sequence[tuple[int, float]]]],
                      reference: Reference | None, label: str, describe: str) -> Check:
    """``repeats``: (repeat index, (step, loss) pairs) of each repeat that ran."""
    if reference is None:
        return failed("convergence", f"no reference band recorded for {describe}; record one with "
                      "`harness certify reference`", label)
    outside = []
    for index, losses in repeats:
        got = checkpoint_losses(losses, [b.step for b in reference.bands], reference.window)
        for band in reference.bands:
            value = got[band.step]
            if value is None:
                outside.append(f"repeat {index} step {band.step}: no loss")
            elif not band.low <= value <= band.high:
                outside.append(f"repeat {index} step {band.step}: loss {value:.4f} outside "
                               f"[{band.low:.4f}, {band.high:.4f}]")
    if not repeats:
        return failed("convergence", "no repeat to check", label)
    if outside:
        return failed("convergence", "loss outside the reference band: " + "; ".join(outside[:4])
                      + (f" (+{len(outside) - 4} more)" if len(outside) > 4 else ""), label)
    steps = ", ".join(str(b.step) for b in reference.bands)
    return passed("convergence", f"{len(repeats)} repeats inside the band at steps {steps} "
                  f"({len(reference.seeds)} reference seeds)", label)
