"""Reference bands from seeds' spread; a repeat outside fails, naming step and value."""

from __future__ import annotations

import math
import statistics

import pytest

from harness.certify.convergence import (
    check_convergence,
    checkpoint_losses,
    load_reference,
    make_reference,
    save_reference,
)


def curve(scale: float, steps: int = 12):
    return [(s, 7.6 * scale - 0.08 * s) for s in range(1, steps + 1)]


def test_checkpoint_losses_are_windowed_means():
    losses = [(1, 5.0), (2, 4.0), (3, 3.0), (4, 2.0)]
    assert checkpoint_losses(losses, [2, 4], 2) == {2: 4.5, 4: 2.5}
    assert checkpoint_losses(losses, [8], 2) == {8: None}  # the run never reached step 8


def test_band_from_seeds_and_check(tmp_path):
    # The runs' spread (about 1.7% of the loss) is wider than the 1% floor: it sets the band.
    runs = {1: curve(1.0), 2: curve(1.02), 3: curve(0.98), 1234: curve(1.01)}
    ref = make_reference(runs, center_seed=1234, case="c", scale="smoke", framework="f", precision="fp32",
                         global_batch_size=8,
                         max_steps=12, checkpoints=[4, 8, 12], window=3, recorded_on="cpu")
    for band in ref.bands:
        assert band.low < band.mean < band.high and len(band.values) == 4
        values = [checkpoint_losses(runs[seed], [band.step], 3)[band.step] for seed in sorted(runs)]
        assert band.values == values and band.mean == pytest.approx(statistics.mean(values))  # centred
        # One more run's spread from the mean of four: 4 standard deviations times sqrt(1 + 1/4).
        half = 4 * statistics.stdev(values) * math.sqrt(1.25)
        assert half > 0.01 * band.mean
        assert band.high - band.mean == pytest.approx(half) and band.mean - band.low == pytest.approx(half)
    save_reference(ref, tmp_path)
    assert load_reference("c", "smoke", "f", "fp32", 8, 12, tmp_path) == ref
    assert load_reference("c", "smoke", "f", "fp32", 16, 12, tmp_path) is None
    assert load_reference("c", "smoke", "f", "bf16", 8, 12, tmp_path) is None  # its own band
    assert check_convergence([(1, curve(1.0005)), (2, curve(1.0))], ref, "p", "c").passed
    verdict = check_convergence([(1, curve(1.0)), (2, curve(1.2))], ref, "p", "c")
    assert not verdict.passed and "repeat 2 step 4: loss" in verdict.reason
    short = check_convergence([(1, curve(1.0, steps=6))], ref, "p", "c")
    assert not short.passed and "step 8: no loss" in short.reason


def test_no_reference_fails_with_the_command_to_record_one():
    verdict = check_convergence([(1, curve(1.0))], None, "p", "gpt3_125M at smoke")
    assert not verdict.passed and "harness certify reference" in verdict.reason


def test_a_band_needs_three_seeds_with_the_centre_among_them():
    with pytest.raises(ValueError):
        make_reference({1: curve(1.0), 2: curve(1.0), 3: curve(1.0)}, center_seed=1234, case="c",
                       scale="smoke", framework="f", precision="fp32", global_batch_size=8, max_steps=12,
                       checkpoints=[4], window=1, recorded_on="cpu")
    with pytest.raises(ValueError):
        make_reference({1: curve(1.0), 1234: curve(1.0)}, center_seed=1234, case="c", scale="smoke",
                       framework="f", precision="fp32", global_batch_size=8,
                       max_steps=12, checkpoints=[4], window=1, recorded_on="cpu")
