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
