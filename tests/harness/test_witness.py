"""The harness's own witness of a repeat's output: its clock, its count, its capture."""

from __future__ import annotations

import hashlib

from harness.witness import Witness, clock_disagreement, count_disagreement, timed_rate, witness_problem


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
