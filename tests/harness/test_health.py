"""The health rules on loss curves (harness/health.py), one failure at a time."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.app import Harness
from harness.health import (EARLY_WARMUP_SHARE, SPIKE_TOLERANCE, judge_health, loss_noise, peak_learning_rate,
                            unhealthy_note, uniform_guess_loss)
from harness.models import BenchmarkResult, CaseSpec

LN_VOCAB = math.log(50304)


def curve(*losses: float, start: int = 1) -> list[tuple[int, float]]:
    return [(start + i, loss) for i, loss in enumerate(losses)]


def checks(health) -> dict[str, bool | None]:
    return {check.name: check.passed for check in health.checks}


def falling_curve(n: int = 30, first: float = 10.9) -> list[tuple[int, float]]:
    return curve(*(first - 0.05 * i for i in range(n)))


def test_a_falling_curve_below_the_uniform_loss_is_healthy():
    health = judge_health(falling_curve(), skip_steps=5, uniform_loss=LN_VOCAB)
    assert health.status == "healthy" and health.reasons == []
    assert checks(health) == {"finite": True, "no_spike": True, "below_uniform": True, "falling": True}
    assert health.first_steps == 5 and health.uniform_loss == LN_VOCAB


def test_the_first_steps_may_start_above_the_uniform_loss():
    # At initialisation the loss is ln(V) + var(logits)/2 (std 0.02 init, width 4096: 11.65).
    health = judge_health(curve(11.65, 11.2, 10.9, 10.85, 10.7, 10.6, 10.5, 10.4, 10.3), skip_steps=4,
                          uniform_loss=LN_VOCAB)
    assert health.status == "healthy"


def test_a_window_that_ends_above_the_uniform_loss_fails():
    # Falling, without a spike, but still above ln(V) at the end of the window.
    losses = [11.5, 11.4, 11.3, 11.2, 11.1, 11.0, 10.95, 10.9]
    health = judge_health(curve(*losses), skip_steps=2, uniform_loss=LN_VOCAB)
    assert health.status == "unhealthy"
    assert checks(health) == {"finite": True, "no_spike": True, "below_uniform": False, "falling": True}
    assert health.reasons == [f"mean loss of the window's last quarter 10.93 (steps 7-8) is above the "
                              f"uniform-guess loss {LN_VOCAB:.4g}"]


def test_a_window_may_pass_through_the_uniform_loss_on_its_way_down():
    # A large GPT starts above ln(V) and, under a long warm-up, comes down through it.
    losses = [11.65, 11.6, 11.5, 11.3, 11.1, 10.9, 10.7, 10.5, 10.3, 10.1, 9.9, 9.7]
    assert judge_health(curve(*losses), skip_steps=2, uniform_loss=LN_VOCAB).status == "healthy"


def test_the_gpu_curves_before_the_schedule_fix_are_unhealthy():
    # gpt3_6.7B offloaded on one H100 (benchmarks/results/h100/...-92d0), skip_steps 2.
    h100 = judge_health(curve(11.68, 32.49, 19.28, 12.45, 12.11, 11.76), skip_steps=2, uniform_loss=LN_VOCAB)
    assert h100.status == "unhealthy"
    assert checks(h100) == {"finite": True, "no_spike": False, "below_uniform": False, "falling": True}
    assert "loss 32.49 at step 2 is above the first loss 11.68 (step 1)" in h100.reasons[0]
    # gpt3_1.3B in GPU memory (h200/...-f1a0), skip_steps 3: the jump at step 2, then recovery.
    h200 = judge_health(curve(11.29, 16.97, 11.3, 11.07, 10.75, 10.48, 11.32, 10.8, 10.07, 9.97),
                        skip_steps=3, uniform_loss=LN_VOCAB)
    assert h200.status == "unhealthy" and checks(h200)["no_spike"] is False
    assert checks(h200)["falling"] is True


def test_noise_within_the_tolerance_is_no_spike():
    first = 7.65
    health = judge_health(curve(first, first * (1 + SPIKE_TOLERANCE / 2), 7.4, 7.3, 7.2, 7.1, 7.0, 6.9),
                          skip_steps=1, uniform_loss=math.log(2048))
    assert checks(health)["no_spike"] is True


def test_non_finite_losses_fail_even_when_thinned_out_of_the_curve():
    health = judge_health(falling_curve(), skip_steps=5, non_finite=3, uniform_loss=LN_VOCAB)
    assert health.status == "unhealthy" and health.reasons == ["3 logged losses are NaN or infinite"]
    nan = judge_health(curve(11.0, float("nan"), 10.0, 9.0, 8.0, 7.0, 6.0), skip_steps=1)
    assert checks(nan)["finite"] is False and checks(nan)["falling"] is True


def test_a_flat_or_rising_window_is_not_falling():
    flat = judge_health(curve(11.0, *[10.0] * 12), skip_steps=1, uniform_loss=LN_VOCAB)
    assert checks(flat)["falling"] is False
    assert "mean of its last quarter 10, of its first 10 (steps 2-4 against 11-13)" in flat.reasons[0]


def test_quarter_means_let_one_noisy_record_decide_nothing():
    losses = [11.0, 10.0, 9.9, 9.8, 9.7, 9.6, 9.5, 9.4, 9.3, 9.95]  # the last record jumps back
    assert checks(judge_health(curve(*losses), skip_steps=1))["falling"] is True


def test_rules_without_data_are_not_judged():
    short = judge_health(curve(11.0, 10.5, 10.2), skip_steps=1, uniform_loss=LN_VOCAB)
    assert checks(short)["falling"] is None and short.status == "healthy"
    no_classes = judge_health(falling_curve(), skip_steps=5)
    assert checks(no_classes)["below_uniform"] is None and no_classes.status == "healthy"
    empty = judge_health([], skip_steps=5, uniform_loss=LN_VOCAB)
    assert empty.status == "unjudged" and empty.checks == []
    # skip_steps 0: the first step is still a first step.
    assert judge_health(falling_curve(), skip_steps=0).first_steps == 1


def test_records_every_n_steps_count_by_iteration():
    # A log line every 10 iterations: records at steps 10, 20, ...; skip_steps 15 leaves
    # steps 20.. in the window.
    records = [(10 * (i + 1), 10.0 - 0.1 * i) for i in range(8)]
    health = judge_health(records, skip_steps=15, uniform_loss=LN_VOCAB)
    assert "steps 20-30 against 70-80" in health.checks[3].detail


def case(classes) -> CaseSpec:
    return CaseSpec(name="c", model="gpt", dataset="d", unit="tokens/s", mission_name="m",
                    direction_id=1, legacy_prefix="nlp", params={"vocab_size": 50304},
                    uniform_loss_classes=classes)


def test_uniform_guess_loss_adds_the_logs_of_the_declared_classes():
    assert uniform_guess_loss(case(("vocab_size",)), {"vocab_size": 2048}) == pytest.approx(math.log(2048))
    assert uniform_guess_loss(case(("vocab_size",)), {}) == pytest.approx(LN_VOCAB)  # the case default
    assert uniform_guess_loss(case(("vocab_size", 2)), {}) == pytest.approx(LN_VOCAB + math.log(2))
    assert uniform_guess_loss(case(()), {"vocab_size": 2048}) is None
    assert uniform_guess_loss(case(("missing",)), {}) is None
    assert uniform_guess_loss(case(("vocab_size",)), {"vocab_size": "big"}) is None


def test_the_builtin_cases_declare_their_classes():
    cases = Harness.load(load_entrypoints=False).registry.cases
    expected = {"gpt3_1.3B": ("vocab_size",), "gpt3_6.7B": ("vocab_size",),
                "bert_base_seq128": ("vocab_size", 2), "resnet50": ("num_classes",),
                "mobilenet_v1": ("num_classes",), "DP_8x1x1_16_1536x16": ("vocab_size",)}
    for name, classes in expected.items():
        assert cases.get(name).uniform_loss_classes == classes, name
    assert uniform_guess_loss(cases.get("resnet50"), {}) == pytest.approx(math.log(1000))


def test_noise_is_the_median_successive_change():
    assert loss_noise([10.0, 9.0, 9.5, 9.4]) == pytest.approx(0.5)  # changes 1.0, 0.5, 0.1
    assert loss_noise([10.0, 9.0]) == 0.0  # one change is the trend as much as the scatter
    # A noisy small-batch curve: a ResNet-50 smoke run scatters by 0.25 around 2.5 with 10
    # classes, 3.14 at step 5 after 2.96 at step 1 is within 4 noises.
    noisy = curve(2.96, 2.54, 2.55, 2.90, 3.14, 2.95, 2.93, 2.40, 3.09, 2.15, 2.07, 2.70, 1.93, 2.44,
                  1.70, 1.25, 1.14, 1.59, 1.64, 1.34, 0.89, 0.74, 0.82, 0.84, 1.05, 0.91, 0.76, 0.87, 0.59, 0.58)
    health = judge_health(noisy, skip_steps=5, uniform_loss=math.log(10))
    assert health.status == "healthy" and health.noise == pytest.approx(0.2445, abs=1e-3)


def test_the_unhealthy_note_lists_the_reasons():
    sick = judge_health(curve(11.0, 30.0, 10.0, 9.0, 8.0, 7.0), skip_steps=1)
    assert unhealthy_note(sick).startswith("unhealthy: loss 30 at step 2")
    assert unhealthy_note(judge_health(falling_curve(), skip_steps=5)) is None
    assert unhealthy_note(None) is None


def test_an_explosive_climb_is_no_noise():
    # gpt3_125M smoke at learning rate 10: each change is thousands, the median change too.
    health = judge_health(curve(7.65, 627.4, 2262.9, 4527.1, 5985.6), skip_steps=1, uniform_loss=math.log(2048))
    assert checks(health)["no_spike"] is False and checks(health)["below_uniform"] is False


# gpt3_1.3B on one H200, micro batch 8, 14 steps, skip_steps 4 (benchmarks/results/h200/
# 20261128-024658-...-d090): GPT-3's 375M-token warm-up is 22,889 steps of this 16k-token batch.
WARMUP_LOSSES = (11.29147, 11.29709, 11.29223, 11.27942, 11.26519, 11.25171, 11.23519, 11.22056,
                 11.20526, 11.18782, 11.16994, 11.15341, 11.13503, 11.12155)
PEAK_1_3B = 2e-4


def warmup_rates(steps: int, warmup_steps: int, peak: float = PEAK_1_3B) -> list[tuple[int, float]]:
    return [(step, peak * step / warmup_steps) for step in range(1, steps + 1)]


def below_uniform(health):
    return next(check for check in health.checks if check.name == "below_uniform")


def test_below_uniform_is_not_judged_at_the_very_start_of_the_warm_up():
    health = judge_health(curve(*WARMUP_LOSSES), skip_steps=4, uniform_loss=LN_VOCAB,
                          learning_rates=warmup_rates(14, 22889), peak_learning_rate=PEAK_1_3B)
    assert health.status == "healthy" and health.reasons == []
    assert checks(health) == {"finite": True, "no_spike": True, "below_uniform": None, "falling": True}
    assert below_uniform(health).detail == (
        "not judged: the learning rate reached 1.22e-07 by step 14, 0.061% of its peak 0.0002 (judged "
        "from 1%); the loss falls from its initial level during the first part of the warm-up")
    assert health.peak_learning_rate == PEAK_1_3B


def test_below_uniform_is_judged_once_the_rate_reaches_one_percent_of_its_peak():
    # The same losses under a warm-up that reached 1% of the peak by step 14: a model that
    # trained at that rate and is still no better than a uniform guess is unhealthy.
    rates = [(step, EARLY_WARMUP_SHARE * PEAK_1_3B * step / 14) for step in range(1, 15)]
    health = judge_health(curve(*WARMUP_LOSSES), skip_steps=4, uniform_loss=LN_VOCAB,
                          learning_rates=rates, peak_learning_rate=PEAK_1_3B)
    assert health.status == "unhealthy" and checks(health)["below_uniform"] is False
    # Only the rates up to the window's last loss record count: later ones do not excuse it.
    rates = warmup_rates(14, 22889) + [(15, PEAK_1_3B)]
    assert checks(judge_health(curve(*WARMUP_LOSSES), skip_steps=4, uniform_loss=LN_VOCAB,
                               learning_rates=rates, peak_learning_rate=PEAK_1_3B))["below_uniform"] is None


def test_below_uniform_reads_the_highest_rate_not_the_last():
    # A schedule that warmed up and decayed to 0 at its last step (the BERT and CNN cases'
    # cosine over the run) is past its warm-up.
    rates = [(1, 5e-5), (2, 1e-4), (3, 5e-5), (4, 0.0), (5, 0.0), (6, 0.0), (7, 0.0), (8, 0.0)]
    health = judge_health(curve(11.5, 11.4, 11.3, 11.2, 11.1, 11.0, 10.95, 10.9), skip_steps=2,
                          uniform_loss=LN_VOCAB, learning_rates=rates, peak_learning_rate=1e-4)
    assert checks(health)["below_uniform"] is False


def test_without_a_learning_rate_curve_or_its_peak_below_uniform_is_judged_as_before():
    no_curve = judge_health(curve(*WARMUP_LOSSES), skip_steps=4, uniform_loss=LN_VOCAB,
                            peak_learning_rate=PEAK_1_3B)
    assert no_curve.status == "unhealthy" and checks(no_curve)["below_uniform"] is False
    assert no_curve.reasons == [f"mean loss of the window's last quarter 11.14 (steps 12-14) is above "
                                f"the uniform-guess loss {LN_VOCAB:.4g}"]
    no_peak = judge_health(curve(*WARMUP_LOSSES), skip_steps=4, uniform_loss=LN_VOCAB,
                           learning_rates=warmup_rates(14, 22889))
    assert checks(no_peak)["below_uniform"] is False and no_peak.peak_learning_rate is None
    # Rates logged only after the window's end say nothing about it.
    late = judge_health(curve(*WARMUP_LOSSES), skip_steps=4, uniform_loss=LN_VOCAB,
                        learning_rates=[(20, 1e-7)], peak_learning_rate=PEAK_1_3B)
    assert checks(late)["below_uniform"] is False


def test_the_peak_learning_rate_is_the_runs_learning_rate_parameter():
    assert peak_learning_rate({"learning_rate": 2e-4, "min_learning_rate": 2e-5}) == 2e-4
    assert peak_learning_rate({"learning_rate": 1}) == 1.0
    for params in ({}, {"lr": 2e-4}, {"learning_rate": 0.0}, {"learning_rate": True},
                   {"learning_rate": "2e-4"}, {"learning_rate": float("inf")}):
        assert peak_learning_rate(params) is None, params


REPO = Path(__file__).resolve().parents[2]
H200_RESULTS = REPO / "benchmarks" / "results" / "h200"
#: The train.log of two committed H200 results, for certification's re-parse.
H200_LOGS = Path(__file__).parent / "data" / "h200_gpt_runs"
SHORT_RUN = "20261128-024658-gpt3_1.3B-pytorch-nvidia-d090"  # 14 steps at 0.061% of the peak
LONG_RUN = "20261128-023909-gpt3_1.3B-pytorch-nvidia-1425"  # 100 steps, 3.5% of the peak


def committed_result(run_id: str) -> BenchmarkResult:
    return BenchmarkResult.model_validate_json((H200_RESULTS / f"{run_id}.result.json").read_text(encoding="utf-8"))


def rejudge(result: BenchmarkResult):
    """The verdict of today's rules on a recorded result's curves, as the result builder gives it."""
    case = Harness.load(load_entrypoints=False).registry.cases.get(result.case)
    summary = result.log_summary
    return judge_health(summary.loss_curve, skip_steps=result.skip_steps,
                        uniform_loss=uniform_guess_loss(case, result.config.params),
                        learning_rates=summary.learning_rate_curve,
                        peak_learning_rate=peak_learning_rate(result.config.params))


def test_committed_short_gpu_runs_in_early_warm_up_are_healthy():
    # Recorded with the rule judged at any rate: flagged above the uniform-guess loss.
    short = committed_result(SHORT_RUN)
    assert short.health.status == "unhealthy" and short.health.reasons[0].startswith(
        "mean loss of the window's last quarter 11.15 (steps 12-14) is above the uniform-guess loss")
    health = rejudge(short)
    assert health.status == "healthy"
    assert checks(health) == {"finite": True, "no_spike": True, "below_uniform": None, "falling": True}
    assert "0.061% of its peak 0.0002" in below_uniform(health).detail
    long = rejudge(committed_result(LONG_RUN))
    assert long.status == "healthy" and checks(long)["below_uniform"] is True
    assert "8.983 (steps 78-100) is below the uniform-guess loss 10.83" in below_uniform(long).detail
