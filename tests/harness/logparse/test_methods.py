"""Aggregation methods, each checked against a hand computation."""

from __future__ import annotations

import statistics

import pytest

from harness.errors import UserInputError
from harness.logparse.methods import METHODS, MethodOptions, aggregate, canonical_method, is_per_device
from harness.logparse.summary import StepSummary
from harness.models import ParsedLog, StepRecord

VALUES = [1.0, 50.0, 100.0, 104.0, 96.0, 1000.0, 98.0, 102.0, 0.5, 100.0]


def summary_of(values, times=None) -> StepSummary:
    summary = StepSummary()
    for i, value in enumerate(values):
        summary.add(StepRecord(step=i + 1, throughput=value,
                               step_time_s=times[i] if times else None, loss=10.0 - i))
    return summary


def parsed(**kw) -> ParsedLog:
    return ParsedLog(format="test", unit="samples/s", **kw)


def test_harness_skips_warmup_and_reports_spread():
    result = aggregate("harness", parsed(), summary_of(VALUES), MethodOptions(skip=2))
    kept = VALUES[2:]
    assert result.value == pytest.approx(statistics.fmean(kept))
    assert result.median == pytest.approx(statistics.median(kept))
    assert result.p5 <= result.median <= result.p95
    assert result.cv == pytest.approx(statistics.stdev(kept) / statistics.fmean(kept))
    assert (result.used, result.skipped) == (8, 2)


def test_harness_default_skip_is_ten_and_short_logs_keep_the_last_record():
    result = aggregate("harness", parsed(), summary_of(VALUES[:3]))
    assert result.value == VALUES[2] and result.used == 1


def test_trimmed_drops_extremes_after_sorting():
    result = aggregate("trimmed", parsed(), summary_of(VALUES), MethodOptions(skip=2, trim=2))
    middle = sorted(VALUES[2:])[2:-2]
    assert result.value == pytest.approx(statistics.fmean(middle))
    assert result.used == 4


def test_trimmed_refuses_to_trim_everything():
    with pytest.raises(UserInputError, match="lower --trim"):
        aggregate("trimmed", parsed(), summary_of(VALUES), MethodOptions(skip=0, trim=5))


def test_harmonic_epoch():
    log = parsed(meta={"epoch_throughput": [50.0, 100.0, 300.0]})
    result = aggregate("harmonic-epoch", log, summary_of(VALUES))
    assert result.value == pytest.approx(2 / (1 / 100 + 1 / 300))
    with pytest.raises(UserInputError, match="per-epoch"):
        aggregate("harmonic-epoch", parsed(), summary_of(VALUES))


def test_framework_and_last():
    assert aggregate("framework", parsed(framework_reported=123.0), summary_of(VALUES)).value == 123.0
    with pytest.raises(UserInputError, match="printed by the framework"):
        aggregate("framework", parsed(), summary_of(VALUES))
    assert aggregate("last", parsed(), summary_of(VALUES)).value == 100.0


def test_too_few_records_for_the_warmup():
    with pytest.raises(UserInputError, match="lower --skip"):
        aggregate("trimmed", parsed(), summary_of(VALUES[:5]), MethodOptions(skip=10))


def test_names_and_aliases():
    assert set(METHODS) >= {"harness", "trimmed", "harmonic-epoch", "framework", "last"}
    assert canonical_method("mean-after-warmup") == "harness"
    with pytest.raises(UserInputError, match="valid methods"):
        canonical_method("average")


def test_per_device_scope_but_framework_figures_are_totals():
    log = parsed(meta={"throughput_scope": "per_device"})
    assert is_per_device(log, "trimmed") and not is_per_device(log, "framework")


def test_default_trim_shrinks_to_fit_a_short_log_but_explicit_values_do_not():
    values = [float(v) for v in range(1, 13)]  # 12 records: default skip 10 leaves 2
    result = aggregate("trimmed", parsed(), summary_of(values))
    assert result.value == pytest.approx(11.5) and result.used == 2
    with pytest.raises(UserInputError):
        aggregate("trimmed", parsed(), summary_of(values), MethodOptions(skip=10, trim=5))


def test_harness_weights_records_by_the_iterations_they_cover():
    """Records every 10 iterations, then every 50: a rate over 50 iterations weighs five times more."""
    summary = StepSummary()
    for step, value in ((10, 1.0), (20, 100.0), (30, 100.0), (80, 200.0)):
        summary.add(StepRecord(step=step, throughput=value))
    result = aggregate("harness", parsed(), summary, MethodOptions(skip=10))
    assert result.value == pytest.approx((10 * 100.0 + 10 * 100.0 + 50 * 200.0) / 70)
    assert "weighted by the iterations each covers" in result.description


def test_harness_plain_mean_where_records_cover_alike():
    result = aggregate("harness", parsed(), summary_of(VALUES), MethodOptions(skip=2))
    assert "weighted" not in result.description


def test_warmup_in_epochs_where_records_are_numbered_by_epoch():
    summary = summary_of([10.0, 20.0, 30.0, 40.0])
    epoch_log = parsed(meta={"step_unit": "epoch"})
    result = aggregate("harness", epoch_log, summary, MethodOptions())
    assert result.value == pytest.approx(30.0) and "1 warm-up epoch" in result.description
    known = parsed(meta={"step_unit": "epoch", "iterations_per_epoch": 4})
    result = aggregate("harness", known, summary, MethodOptions(skip=10))  # 10 iterations: 3 epochs
    assert result.value == pytest.approx(40.0) and "3 warm-up epochs" in result.description
