"""The cases' learning-rate schedule that every framework's training script imports."""

from __future__ import annotations

import sys

import pytest

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
from lr_schedule import lr_at  # noqa: E402


def test_linear_warmup_reaches_the_peak():
    assert [lr_at(step, 1.0, 4, 20) for step in range(1, 5)] == [0.25, 0.5, 0.75, 1.0]


def test_cosine_decay_reaches_the_floor_and_stays_there():
    assert lr_at(12, 1.0, 4, 20, floor=0.1) == pytest.approx(0.55)  # half-way: the mean
    assert lr_at(20, 1.0, 4, 20, floor=0.1) == pytest.approx(0.1)
    assert lr_at(35, 1.0, 4, 20, floor=0.1) == pytest.approx(0.1)


def test_without_floor_it_decays_to_zero_and_without_warmup_it_starts_at_the_peak():
    assert lr_at(0, 2.0, 0, 10) == pytest.approx(2.0)
    assert lr_at(10, 2.0, 0, 10) == pytest.approx(0.0)


def test_a_schedule_in_tokens_becomes_steps_of_the_runs_batch():
    from lr_schedule import schedule_steps

    gpt3 = {"lr_warmup_tokens": 375_000_000, "lr_decay_tokens": 260_000_000_000,
            "lr_warmup_steps": 0, "lr_decay_steps": 0}
    # gpt3_1.3B on one GPU: 64 x 2048 = 131,072 tokens a step; GPT-3's own 1M-token batch.
    assert schedule_steps(gpt3, 131_072, 100) == (2862, 1_983_643)
    assert schedule_steps(gpt3, 1 << 20, 100) == (358, 247_956)
    # The first step's rate: 2e-4 / 2862 = 7.0e-8 where the 10-step warm-up gave 2e-5.
    assert lr_at(1, 2e-4, 2862, 1_983_643, floor=2e-5) == pytest.approx(6.99e-8, rel=1e-3)
    # Steps where no tokens are given (the smoke preset): 0 decay steps mean the run's length.
    smoke = {"lr_warmup_tokens": 0, "lr_decay_tokens": 0, "lr_warmup_steps": 3, "lr_decay_steps": 0}
    assert schedule_steps(smoke, 2048, 30) == (3, 30)
    assert schedule_steps({"lr_warmup_steps": 10, "lr_decay_steps": 50}, 2048, 30) == (10, 50)
    # A batch larger than the warm-up still warms up for a step.
    assert schedule_steps({"lr_warmup_tokens": 1000}, 4096, 5) == (1, 5)


def test_the_gpt3_cases_schedule_their_rate_in_tokens():
    from harness_cases.gpt_cases import GPT_SMOKE, gpt3_case

    params = gpt3_case("gpt3_6.7B").params
    assert params["lr_warmup_tokens"] == 375_000_000 and params["lr_decay_tokens"] == 260_000_000_000
    assert GPT_SMOKE["lr_warmup_tokens"] == 0 and GPT_SMOKE["lr_warmup_steps"] == 3
