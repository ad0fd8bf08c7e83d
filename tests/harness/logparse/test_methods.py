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
