"""Case defaults < vendor config < smoke preset < CLI; and the errors for bad input."""

from __future__ import annotations

import pytest

from harness.case_string import parse_case_string
from harness.config_resolution import parse_set_pairs, resolve_config
from harness.errors import HarnessError, UserInputError
from harness.models.vendor_config import VendorCaseConfig
from harness_cases.gpt_cases import gpt3_case

CASE = gpt3_case("gpt3_6.7B")


def resolve(**kwargs):
    return resolve_config(CASE, framework="pytorch", vendor="cpu", **kwargs)


def test_case_defaults_are_the_gpt3_paper_sizes():
    config = resolve()
    assert (config.params["num_layers"], config.params["hidden_size"], config.params["num_heads"]) == (32, 4096, 32)
    assert config.params["seq_len"] == 2048 and config.params["vocab_size"] == 50304
    assert config.sources == {}


def test_precedence_vendor_then_smoke_then_cli():
    vendor = VendorCaseConfig(name="config_x1x1", values={"micro_batch_size": 2, "recompute": "full",
                                                          "precision": "bf16"})
    config = resolve(vendor_config=vendor, scale="smoke", cli_settings={"precision": "fp16"},
                     cli_set={"max_steps": "7", "learning_rate": "0.01"})
    assert config.settings.precision == "fp16"  # cli beats vendor
    assert config.params["recompute"] == "none"  # smoke preset beats vendor
    assert config.settings.micro_batch_size == 8  # smoke preset
    assert config.settings.max_steps == 7 and config.params["learning_rate"] == 0.01
    assert config.sources["precision"] == "cli" and config.sources["recompute"] == "smoke"
    assert config.hardware_config == "config_x1x1"


def test_config_hash_changes_with_values_not_with_sources():
    a = resolve(cli_set={"max_steps": "5"})
    b = resolve_config(CASE.model_copy(update={"settings": {**CASE.settings, "max_steps": 5}}),
                       framework="pytorch", vendor="cpu")
    c = resolve(cli_set={"max_steps": "6"})
    assert a.config_hash == b.config_hash != c.config_hash


@pytest.mark.parametrize("pairs, message", [
    ({"hiden_size": "1"}, "unknown key 'hiden_size'"),
    ({"max_steps": "many"}, "invalid value for 'max_steps'"),
    ({"learning_rate": "fast"}, "expected a value of type float"),
    ({"compile": "maybe"}, "expected a value of type bool"),
    ({"hidden_size": "1024"}, "identifies case 'gpt3_6.7B' and cannot be overridden"),
    ({"precision": "fp4"}, "invalid value for 'precision'"),
])
def test_bad_overrides_are_user_errors(pairs, message):
    with pytest.raises(UserInputError, match=message):
        resolve(cli_set=pairs)


def test_unknown_key_lists_valid_keys_and_suggests():
    with pytest.raises(UserInputError) as info:
        resolve(cli_set={"hiden_size": "1"})
    assert "Did you mean 'hidden_size'" in str(info.value) and "Valid choices:" in str(info.value)


def test_vendor_may_only_set_overridable_keys():
    with pytest.raises(HarnessError, match="does not let vendors override"):
        resolve(vendor_config=VendorCaseConfig(name="bad", values={"num_layers": 2}))


def test_misspelt_vendor_key_names_the_file_and_suggests_the_key():
    config = VendorCaseConfig(name="default", path="/vendors/x/configs/c/f/default.toml",
                              values={"micro_bach_size": 2})
    with pytest.raises(HarnessError) as info:
        resolve(vendor_config=config)
    message = str(info.value)
    assert message.startswith("vendor config /vendors/x/configs/c/f/default.toml: unknown key 'micro_bach_size'")
    assert "Did you mean 'micro_batch_size'?" in message and "\n" not in message


@pytest.mark.parametrize("values, message", [
    ({"sharding_degree": "8"}, "sharding_degree = '8' is a string; expected an integer"),
    ({"sharding_degree": 8.5}, "sharding_degree = 8.5 is a float; expected an integer"),
    ({"tensor_parallel_degree": True}, "tensor_parallel_degree = True is a boolean; expected an integer"),
    ({"compile": 1}, "compile = 1 is an integer; expected a boolean"),
    ({"recompute": 3}, "recompute = 3 is an integer; expected a string"),
    ({"micro_batch_size": "4"}, "micro_batch_size = '4': Input should be a valid integer"),
    ({"micro_batch_size": True}, "micro_batch_size = True: Input should be a valid integer"),
    ({"precision": 16}, "precision = 16: Input should be 'fp32'"),
])
def test_vendor_value_of_the_wrong_type_names_file_key_and_type(values, message):
    path = "/vendors/x/configs/gpt3_6.7B/paddle/default.toml"
    with pytest.raises(HarnessError) as info:
        resolve(vendor_config=VendorCaseConfig(name="default", path=path, values=values))
    assert str(info.value).startswith(f"vendor config {path}: {message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_vendor_values_of_the_right_type_pass():
    config = resolve(vendor_config=VendorCaseConfig(name="v", values={
        "sharding_degree": 8, "compile": True, "recompute": "full", "micro_batch_size": 4}))
    assert config.params["sharding_degree"] == 8 and config.params["compile"] is True
    assert config.settings.micro_batch_size == 4


def test_set_pairs_need_an_equals_sign():
    assert parse_set_pairs(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(UserInputError, match="key=value"):
        parse_set_pairs(["novalue"])


def test_flagperf_case_string():
    parsed = parse_case_string("gpt3_6.7B:paddle_2.5.1:A100:1:8:3")
    assert (parsed.case, parsed.framework, parsed.framework_version) == ("gpt3_6.7B", "paddle", "2.5.1")
    assert (parsed.hardware, parsed.nnodes, parsed.nproc, parsed.repeat) == ("A100", 1, 8, 3)
    assert parse_case_string("gpt3_125M").framework is None


@pytest.mark.parametrize("text", ["gpt3_6.7B:paddle:A100:1:8", "gpt3_6.7B:paddle_2.5:A100:1:x:1",
                                  "gpt3_6.7B:paddle_2.5:A100:0:8:1"])
def test_bad_case_strings(text):
    with pytest.raises(UserInputError, match="model:framework_version:hardware_config:nnodes:nproc:repeat"):
        parse_case_string(text)


@pytest.mark.parametrize("key, value", [("max_steps", 20), ("skip_steps", 0), ("seed", 7),
                                        ("learning_rate", 1e-3), ("lr_warmup_steps", 0)])
def test_a_vendor_config_never_sets_the_measurement_window(key, value):
    vendor = VendorCaseConfig(name="default", path="/v/configs/gpt3_6.7B/pytorch/default.toml",
                              values={"micro_batch_size": 2, key: value})
    with pytest.raises(UserInputError) as err:
        resolve(vendor_config=vendor)
    message = str(err.value)
    assert "\n" not in message and err.value.exit_code == 2
    assert f"default.toml sets {key}, part of the measurement window" in message
    allowed = message.split("(allowed: ")[1]
    assert "micro_batch_size" in allowed and "attention_backend" in allowed and key not in allowed


@pytest.mark.parametrize("case", ["gpt3_125M", "bert_base_seq128", "resnet50", "mobilenet_v1",
                                  "DP_8x1x1_16_1536x16"])
def test_no_case_lets_vendors_set_the_measurement_window(case):
    from harness.measurement_window import LOCKED_KEYS
    from harness.app import Harness

    registry = Harness.load(load_entrypoints=False).registry
    assert not registry.cases.get(case).vendor_overridable & LOCKED_KEYS


def test_run_time_knobs_stay_open_to_vendors():
    vendor = VendorCaseConfig(name="tuned", values={
        "precision": "bf16", "micro_batch_size": 2, "grad_accum_steps": 4, "recompute": "full",
        "compile": True, "attention_backend": "flash", "fused_optimizer": True, "sharding_stage": 2})
    config = resolve(vendor_config=vendor)
    assert config.settings.grad_accum_steps == 4 and config.params["attention_backend"] == "flash"


def test_command_line_window_keys_mark_the_run_modified():
    from harness.result_builder import modified_keys

    assert modified_keys(resolve(scale="smoke")) == []  # the smoke preset is the case's own
    explored = resolve(scale="smoke", cli_settings={"max_steps": 8, "precision": "bf16"},
                       cli_set={"learning_rate": "0.01", "recompute": "full"})
    assert modified_keys(explored) == ["learning_rate", "max_steps"]


# framework_requirement: which build of the framework the run's isolated environment installs.

def test_the_framework_requirement_comes_from_the_vendor_config_and_the_command_line(tmp_path):
    from harness.vendor_configs import find_vendor_config

    folder = tmp_path / CASE.name / "paddle"
    folder.mkdir(parents=True)
    (folder / "default.toml").write_text('[values]\nframework_requirement = "paddlepaddle-gpu == 2.6.2"\n')
    vendor = find_vendor_config(tmp_path, CASE.name, "paddle", nnodes=1, nproc=1)
    # A vendor picks its framework build whatever the case lets vendors tune.
    assert "framework_requirement" not in CASE.vendor_overridable
    config = resolve(vendor_config=vendor)
    assert config.settings.framework_requirement == "paddlepaddle-gpu==2.6.2"  # normal spelling
    assert config.sources["framework_requirement"] == "vendor:default"
    assert resolve().settings.framework_requirement is None  # the plugin's own
    cli = resolve(vendor_config=vendor, cli_set={"framework_requirement": "paddlepaddle-gpu==3.0.0"})
    assert cli.settings.framework_requirement == "paddlepaddle-gpu==3.0.0"
    assert cli.sources["framework_requirement"] == "cli"
    # Empty on the command line: back to the plugin's default, over the vendor's choice.
    assert resolve(vendor_config=vendor, cli_set={"framework_requirement": ""}
                   ).settings.framework_requirement is None


def test_the_framework_requirement_is_part_of_the_config_hash_only_when_set():
    plain = resolve()
    chosen = resolve(cli_set={"framework_requirement": "paddlepaddle==3.3.1"})
    other = resolve(cli_set={"framework_requirement": "paddlepaddle==3.0.0"})
    assert len({plain.config_hash, chosen.config_hash, other.config_hash}) == 3
    # A config recorded before the setting existed keeps its hash.
    old = plain.model_dump(mode="json")
    del old["settings"]["framework_requirement"]
    assert type(plain).model_validate(old).config_hash == plain.config_hash


@pytest.mark.parametrize("text", ["garbage here", "==2.6.2", "paddle gpu", "paddlepaddle-gpu=2.6.2"])
def test_a_framework_requirement_that_is_no_pip_requirement_is_one_line(text):
    with pytest.raises(UserInputError) as info:
        resolve(cli_set={"framework_requirement": text})
    message = str(info.value)
    assert message.startswith("invalid value for 'framework_requirement': ")
    assert "not a pip requirement" in message and "e.g. paddlepaddle-gpu==2.6.2" in message
    assert repr(text) in message and "\n" not in message and info.value.exit_code == 2


def test_a_vendor_config_framework_requirement_that_is_no_requirement_names_the_file():
    vendor = VendorCaseConfig(name="default", path="/v/gpt3_6.7B/paddle/default.toml",
                              values={"framework_requirement": "paddle gpu"})
    with pytest.raises(HarnessError) as info:
        resolve(vendor_config=vendor)
    message = str(info.value)
    assert message.startswith("vendor config /v/gpt3_6.7B/paddle/default.toml: framework_requirement")
    assert "not a pip requirement" in message and "\n" not in message
