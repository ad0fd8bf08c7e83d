"""What a vendor may tune and what is locked, judged on resolved configs."""

from __future__ import annotations

import pytest

from harness.certify.rules import check_rules, reference_config, refuse_set_pairs
from harness.certify.suite import PlannedPoint
from harness.cli.main import main
from harness.config_resolution import resolve_config
from harness.errors import UserInputError

POINT = PlannedPoint(label="p", case="gpt3_125M", framework="pytorch", nproc=1, nnodes=1,
                     precision=None, settings={"max_steps": 12, "skip_steps": 4})


@pytest.fixture
def case(registry):
    return registry.cases.get("gpt3_125M")


def _resolve(case, **overrides):
    cli_set = {"max_steps": "12", "skip_steps": "4", **{k: str(v) for k, v in overrides.items()}}
    return resolve_config(case, framework="pytorch", vendor="cpu", scale="smoke",
                          cli_settings={"nproc": 1, "nnodes": 1}, cli_set=cli_set)


def test_the_suite_config_passes(case):
    reference = reference_config(case, POINT, "cpu", "smoke")
    assert reference.settings.max_steps == 12 and reference.settings.skip_steps == 4
    assert check_rules(case, _resolve(case), reference, "p").passed


def test_vendor_tuning_passes_and_is_named(case):
    verdict = check_rules(case, _resolve(case, attention_backend="flash"),
                          reference_config(case, POINT, "cpu", "smoke"), "p")
    assert verdict.passed and "attention_backend='flash'" in verdict.reason


@pytest.mark.parametrize("key, value", [("learning_rate", 0.03), ("skip_steps", 2), ("seed", 7),
                                        ("lr_warmup_steps", 1)])
def test_a_locked_key_fails(case, key, value):
    verdict = check_rules(case, _resolve(case, **{key: value}),
                          reference_config(case, POINT, "cpu", "smoke"), "p")
    assert not verdict.passed and key in verdict.reason and "locked" in verdict.reason


def test_a_key_vendors_may_not_tune_fails(case):
    verdict = check_rules(case, _resolve(case, weight_decay=0.5),
                          reference_config(case, POINT, "cpu", "smoke"), "p")
    assert not verdict.passed and "weight_decay" in verdict.reason


def test_set_of_a_locked_key_is_refused(case):
    with pytest.raises(UserInputError, match="skip_steps: locked in certification"):
        refuse_set_pairs({"skip_steps": "1"}, [case])
    with pytest.raises(UserInputError, match="does not let vendors tune"):
        refuse_set_pairs({"weight_decay": "0.5"}, [case])
    refuse_set_pairs({"attention_backend": "flash"}, [case])


@pytest.mark.parametrize("pair", ["skip_steps=1", "learning_rate=0.03", "max_steps=5", "seed=3"])
def test_cli_refuses_locked_set_with_exit_2(pair, capsys, tmp_path):
    code = main(["certify", "run", "--vendor", "cpu", "--suite", "smoke", "--output",
                 str(tmp_path), "--set", pair])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "locked in certification" in err and "\n" not in err
    assert f"--set {pair.split('=')[0]}:" in err  # the line names the key it refuses
    assert not any(tmp_path.iterdir())  # nothing ran, nothing written
