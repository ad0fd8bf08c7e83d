"""The measurement window is named once; certification and vendor configs use it."""

from __future__ import annotations

from harness.measurement_window import (
    LOCKED_KEYS,
    locked_differences,
    locked_keys_touched,
    locked_values,
)


def test_locked_keys_cover_window_schedule_data_and_seed():
    assert {"max_steps", "skip_steps", "seed", "learning_rate", "min_learning_rate",
            "lr_warmup_steps", "lr_decay_steps", "lr_warmup_tokens", "lr_decay_tokens",
            "num_samples"} == set(LOCKED_KEYS)


def test_locked_keys_touched_by_set_pairs():
    assert locked_keys_touched({"skip_steps": "3", "attention_backend": "flash"}) == ["skip_steps"]
    assert locked_keys_touched(["micro_batch_size", "compile"]) == []


def test_locked_keys_exist_in_the_cases():
    """Every locked parameter name is a real key of some built-in case (no typo can make
    the lock a no-op)."""
    from harness_cases.bert_cases import bert_cases
    from harness_cases.cnn_cases import cnn_cases
    from harness_cases.gpt_cases import gpt3_cases

    from harness.models import RunSettings

    keys = set(RunSettings.model_fields)
    for case in gpt3_cases() + bert_cases() + cnn_cases():
        keys |= set(case.params)
    assert LOCKED_KEYS <= keys


def test_locked_differences_between_configs():
    from harness.models import ResolvedConfig

    def config(settings, params):
        return ResolvedConfig(case="c", model="m", framework="f", vendor="v", settings=settings,
                              params=params)

    settings = {"max_steps": 30, "skip_steps": 5, "seed": 1, "nproc": 1}
    params = {"learning_rate": 1e-3, "hidden_size": 128}
    base = config(settings, params)
    other = config({**settings, "nproc": 2, "skip_steps": 2}, {**params, "learning_rate": 1e-2})
    assert locked_values(base) == {"max_steps": 30, "skip_steps": 5, "seed": 1, "learning_rate": 1e-3}
    assert locked_differences(other, base) == {"learning_rate": (1e-2, 1e-3), "skip_steps": (2, 5)}
    assert locked_differences(base, base) == {}
