"""The harness's own witness of a repeat's output: its clock, its count, its capture."""

from __future__ import annotations

import hashlib

import pytest

from harness.witness import (CLOCK_TOLERANCE, Witness, clock_disagreement, count_disagreement,
                             median_step_gap, timed_rate, witness_problem)


def test_the_measured_window_runs_from_the_last_warm_up_line_to_the_last_line():
    arrivals = {1: 0.0, 2: 1.0, 3: 2.0, 4: 3.0, 5: 5.0, 6: 7.0}
    # skip 2: from step 2's line (1.0 s) to step 6's (7.0 s), 4 iterations of 100 units
    assert timed_rate(arrivals, 2, 100.0) == (400 / 6.0, 6.0)
    assert timed_rate(arrivals, 0, 100.0) == (500 / 7.0, 7.0)
    assert timed_rate({1: 0.0}, 0, 100.0) is None and timed_rate({}, 0, 1.0) is None


def test_a_log_that_claims_more_than_the_clock_saw_is_named_with_both_figures():
    witness = Witness(log_sha256="x", step_records=30, timed_throughput=7600.0, window_s=10.0)
    assert clock_disagreement(17900.0, witness, "tokens/s") == (
        "log claims 17,900 tokens/s, harness timed 7,600 over the same steps (more than 20% apart)")
    assert clock_disagreement(8000.0, witness, "tokens/s") is None  # within the tolerance
    assert count_disagreement(30, witness) is None
    assert count_disagreement(32, witness) == (
        "the log holds 32 step records, the harness saw 30 arrive from the training process")


def test_a_log_changed_after_capture_is_named(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("iteration 1\n")
    witness = Witness(log_sha256=hashlib.sha256(b"iteration 1\n").hexdigest(), step_records=0)
    assert witness_problem(log, None, None, witness, "tokens/s") is None
    log.write_text("iteration 1\niteration 2\n")
    assert witness_problem(log, None, None, witness, "tokens/s").startswith(
        "train.log was changed after the harness captured it")


# ------------------------------------------------- arrival times that the pipe, not the log, moved

UNITS = 32 * 2048  # tokens per iteration: global batch 32 of 2048-token sequences
STEP_S = 0.29  # what the log times each iteration at


def _witness(arrivals: dict[int, float], skip: int = 4) -> Witness:
    rate, window = timed_rate(arrivals, skip, UNITS)
    return Witness(log_sha256="x", step_records=len(arrivals), timed_throughput=rate, window_s=window,
                   median_step_s=median_step_gap(arrivals, skip))


def _steady(steps: int = 14, start: float = 100.0) -> dict[int, float]:
    return {step: start + step * STEP_S for step in range(1, steps + 1)}


def test_one_late_last_line_does_not_make_an_honest_log_invalid():
    arrivals = _steady()
    arrivals[14] += 10.0  # the last line sat in the pipe: the window says 10 iterations took 12.9 s
    witness = _witness(arrivals)
    claimed = UNITS / STEP_S
    assert abs(witness.timed_throughput - claimed) > CLOCK_TOLERANCE * witness.timed_throughput
    assert witness.median_step_s == pytest.approx(STEP_S)
    assert clock_disagreement(claimed, witness, "tokens/s", logged_step_s=STEP_S) is None


def test_lines_delivered_in_a_burst_after_start_up_do_not_make_an_honest_log_invalid():
    arrivals = _steady()
    for step in range(1, 8):  # the reader caught up with steps 1-7 at once, then kept pace
        arrivals[step] = arrivals[7]
    witness = _witness(arrivals)
    claimed = UNITS / STEP_S
    assert witness.timed_throughput > (1 + CLOCK_TOLERANCE) * claimed  # 7 iterations in 2 s
    assert clock_disagreement(claimed, witness, "tokens/s", logged_step_s=STEP_S) is None


def test_a_slowed_clock_is_caught_by_the_window_and_the_median_alike():
    arrivals = _steady()  # the iterations really take 0.29 s; the process's clock says 0.6 of that
    witness = _witness(arrivals)
    slowed = 0.6 * STEP_S
    reason = clock_disagreement(UNITS / slowed, witness, "tokens/s", logged_step_s=slowed)
    assert reason is not None and reason.startswith("log claims 376,644 tokens/s, harness timed 225,986")


def test_a_replayed_log_arriving_all_at_once_is_caught():
    arrivals = {step: 100.0 + step * 1e-4 for step in range(1, 15)}  # printed in a moment
    witness = _witness(arrivals)
    assert clock_disagreement(UNITS / STEP_S, witness, "tokens/s", logged_step_s=STEP_S) is not None


def test_without_the_medians_the_window_alone_judges():
    arrivals = _steady()
    arrivals[14] += 10.0
    witness = _witness(arrivals)
    assert clock_disagreement(UNITS / STEP_S, witness, "tokens/s") is not None  # no logged median
    old = witness.model_copy(update={"median_step_s": None})  # recorded before the median was kept
    assert clock_disagreement(UNITS / STEP_S, old, "tokens/s", logged_step_s=STEP_S) is not None


def test_the_median_gap_spans_the_measured_window_per_iteration():
    arrivals = {2: 0.0, 4: 2.0, 5: 3.5, 6: 4.0, 8: 10.0}  # a line every other iteration at times
    # from step 4 (the last skipped): gaps 1.5/1, 0.5/1, 6.0/2 per iteration -> median 1.5
    assert median_step_gap(arrivals, 4) == 1.5
    assert median_step_gap(arrivals, 0) == pytest.approx(1.25)  # 1.0, 1.5, 0.5, 3.0
    assert median_step_gap({1: 0.0}, 0) is None


def test_per_step_rates_without_step_times_are_averaged_as_a_clock_would():
    """NVIDIA's DLLogger ResNet lines state a rate per step and no step time: the rate over the
    measured steps is their harmonic mean (units over time), not FINAL_RESULT's arithmetic mean,
    which a slow step on a busy machine lifts far above any wall clock."""
    from types import SimpleNamespace

    from harness.witness import logged_rate

    reading = SimpleNamespace(summary=SimpleNamespace(throughput=[99.0, 10.0, 40.0, 10.0]))
    figures = SimpleNamespace(total_work=None, final=20.0)  # their arithmetic mean
    # skip 1: steps of 32 images at 10, 40 and 10 images/s take 3.2 + 0.8 + 3.2 s: 96 / 7.2
    assert abs(logged_rate(figures, reading, 1) - 96 / 7.2) < 1e-9
    assert logged_rate(SimpleNamespace(total_work=17.0, final=20.0), reading, 1) == 17.0
    assert logged_rate(figures) == 20.0  # nothing per step: FINAL_RESULT
