"""The Megatron-LM matrix cases' learning-rate schedule: the seed's Megatron-LM script's."""

from __future__ import annotations

import pytest

from harness.app import Harness
from harness.runner.pipeline import RunRequest, plan
from harness_cases.shared_scripts.lr_schedule import lr_at, schedule_steps
from harness_megatron.case_names import SEED_MATRIX, SEQ_LEN, parse_case_name


@pytest.fixture(scope="module")
def harness():
    return Harness.load(load_entrypoints=False)


def planned(harness, tmp_path, case, scale):
    return plan(harness, RunRequest(case=case, framework="megatron", vendor="cpu", scale=scale,
                                    output=tmp_path)).config


@pytest.mark.parametrize("case", ["DP_1x1x1_2_1536x16", "MP_1x1x1_8_768x12"])
def test_full_schedule_is_the_seed_scripts(harness, tmp_path, case):
    """--lr 0.00015 --min-lr 1.0e-5 --lr-decay-iters 320000 --lr-warmup-fraction .01: warm-up
    over 3,200 iterations whatever the global batch, so the first step's rate is 4.7e-8, not
    the 1.5e-5 of a 10-step warm-up that jumped the GPT-3 cases' loss."""
    config = planned(harness, tmp_path, case, "full")
    p = config.params
    tokens_per_step = parse_case_name(case).global_batch * SEQ_LEN
    warmup, decay = schedule_steps(p, tokens_per_step, config.settings.max_steps)
    assert (warmup, decay) == (3200, 320_000) and warmup == decay // 100
    assert (p["learning_rate"], p["min_learning_rate"]) == (1.5e-4, 1.0e-5)
    assert lr_at(1, p["learning_rate"], warmup, decay) == pytest.approx(1.5e-4 / 3200)
    # The measured window lies inside the warm-up, as the seed's 520 iterations did.
    assert config.settings.max_steps < warmup


def test_every_seed_case_has_the_schedule(harness):
    for name in SEED_MATRIX:
        params = harness.registry.cases.get(name).params
        assert (params["lr_warmup_steps"], params["lr_decay_steps"]) == (3200, 320_000), name


def test_smoke_warms_up_within_its_window(harness, tmp_path):
    """12 smoke steps cannot hold 3,200 warm-up steps: a 3-step warm-up, decay over the run."""
    config = planned(harness, tmp_path, "DP_1x1x1_2_1536x16", "smoke")
    warmup, decay = schedule_steps(config.params, 1, config.settings.max_steps)
    assert warmup == 3 < config.settings.skip_steps and decay == config.settings.max_steps == 12
