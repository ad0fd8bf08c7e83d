"""The core's check of a training script's read-back line against the resolved config."""

from __future__ import annotations

import pytest

from harness.config_resolution import resolve_config
from harness.readback import READBACK_PREFIX, REQUIRED_KEYS, check_log, compare_readback
from harness_cases.gpt_cases import gpt3_case
from harness_cases.gpt_flops import gpt_flops_per_token
from harness_cases.shared_scripts.readback import READBACK_PREFIX as SCRIPT_PREFIX, readback_line

CASE = gpt3_case("gpt3_125M")


def _config(**cli_set):
    return resolve_config(CASE, framework="pytorch", vendor="cpu", scale="smoke",
                          cli_set={k: str(v) for k, v in cli_set.items()})


def _faithful(config, **changes):
    """What the PyTorch GPT script prints for ``config`` (then ``changes`` applied)."""
    s, p = config.settings, config.params
    facts = {
        "parameters": gpt_flops_per_token(p).model_parameters, "num_layers": p["num_layers"],
        "hidden_size": p["hidden_size"], "num_heads": p["num_heads"], "seq_len": p["seq_len"],
        "vocab_size": p["vocab_size"], "micro_batch_size": s.micro_batch_size,
        "grad_accum_steps": s.grad_accum_steps, "world_size": s.world_size,
        "global_batch_size": s.global_batch_size, "precision": s.precision,
        "learning_rate": p["learning_rate"], "max_steps": s.max_steps, "seed": s.seed,
        "device_type": "cpu", "torch": "2.x",  # an extra fact: recorded, not compared
    }
    facts.update(changes)
    return facts


def _check(facts, config=None, device_kind="cpu"):
    config = config or _config()
    return compare_readback(facts, config, device_kind=device_kind,
                            model_parameters=gpt_flops_per_token(config.params).model_parameters,
                            identifying=CASE.immutable)


def test_the_scripts_and_the_core_agree_on_the_prefix():
    assert SCRIPT_PREFIX == READBACK_PREFIX
    assert readback_line(b=1, a="x") == READBACK_PREFIX + '{"a": "x", "b": 1}'


def test_a_faithful_readback_passes():
    check = _check(_faithful(_config()))
    assert check.ok and check.reason() is None


def test_halved_layers_are_named_with_both_values():
    config = _config()
    halved = _faithful(config, num_layers=1, parameters=_faithful(config)["parameters"] // 2)
    check = _check(halved, config)
    assert not check.ok
    assert set(check.differences) == {"num_layers", "parameters"}
    assert "num_layers 1 (expected 2)" in check.reason()


@pytest.mark.parametrize("key, value", [("micro_batch_size", 16), ("precision", "bf16"),
                                        ("learning_rate", 0.01), ("max_steps", 5),
                                        ("world_size", 2), ("seq_len", 128), ("seed", 1)])
def test_any_difference_from_the_config_is_caught(key, value):
    check = _check(_faithful(_config(), **{key: value}))
    assert list(check.differences) == [key]


def test_missing_required_and_identifying_keys():
    facts = _faithful(_config())
    del facts["num_layers"], facts["precision"]
    check = _check(facts)
    assert check.missing == ["num_layers", "precision"]
    assert "missing num_layers, precision" in check.reason()
    assert set(REQUIRED_KEYS) <= set(_faithful(_config()))


def test_device_type_must_match_the_device_kind():
    assert _check(_faithful(_config(), device_type="cuda"), device_kind="gpu").ok
    assert "device_type" in _check(_faithful(_config(), device_type="cpu"), device_kind="gpu").differences
    assert "device_type" in _check(_faithful(_config(), device_type="gpu:0")).differences


def test_device_type_must_be_one_the_vendors_backend_declares():
    """With a device backend the script must run on its declared device type, whatever the
    vendor's device kind: examplechip's kind is 'examplechip', its torch device 'cpu'."""
    from harness.models.device import DeviceBackend, FrameworkDevice

    chip = DeviceBackend(device_type="examplechip", addressed_by_local_rank=False,
                         frameworks={"torch": FrameworkDevice(device_type="cpu", dist_backend="gloo")})
    config = _config().model_copy(update={"device": chip})
    assert _check(_faithful(config), config=config, device_kind="examplechip").ok
    assert "device_type" in _check(_faithful(config, device_type="cuda:0"), config=config,
                                   device_kind="examplechip").differences


def test_float32_learning_rates_pass_and_bools_are_not_numbers():
    config = _config()
    as_float32 = float(__import__("numpy").float32(config.params["learning_rate"]))
    assert as_float32 != config.params["learning_rate"]  # the script reports a float32 rate
    assert _check(_faithful(config, learning_rate=as_float32)).ok
    assert "compile" in compare_readback({"compile": 0}, config, model_parameters=None,
                                         device_kind="cpu").differences


def test_global_batch_counts_data_replicas_only():
    from harness_megatron.cases import matrix_case
    from harness_megatron.case_names import parse_case_name

    case = matrix_case(parse_case_name("MP_1x4x1_16_1536x16"))
    config = resolve_config(case, framework="megatron", vendor="nvidia")
    assert config.settings.world_size == 4 and config.params["tensor_parallel_degree"] == 4
    facts = {"global_batch_size": config.settings.micro_batch_size * config.settings.grad_accum_steps}
    check = compare_readback(facts, config, model_parameters=None, device_kind="gpu")
    assert "global_batch_size" not in check.differences


def test_the_line_is_found_behind_launcher_prefixes(tmp_path):
    config = _config()
    log = tmp_path / "train.log"
    log.write_text("LAUNCH INFO starting\n[1,0]<stdout>:" + readback_line(**_faithful(config))
                   + "\n iteration 1/30 | ...\n")
    check = check_log(log, config, model_parameters=gpt_flops_per_token(config.params).model_parameters,
                      device_kind="cpu", identifying=CASE.immutable)
    assert check.ok and check.readback["num_layers"] == 2


def test_no_line_fails_a_builtin_framework_only(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(" iteration 1/30 | ...\n")
    required = check_log(log, _config(), model_parameters=None, device_kind="cpu")
    assert not required.ok and "printed no read-back line" in required.reason()
    assert check_log(log, _config(), model_parameters=None, device_kind="cpu", required=False).ok
    log.write_text(READBACK_PREFIX + "{not json\n")
    assert "not valid JSON" in check_log(log, _config(), model_parameters=None, device_kind="cpu").reason()


def test_the_repeats_data_nonce_must_be_read_back(monkeypatch):
    from harness.readback import DATA_NONCE_ENV
    from harness_cases.shared_scripts import data_nonce

    assert data_nonce.NONCE_ENV == DATA_NONCE_ENV
    config = _config()
    params = gpt_flops_per_token(config.params).model_parameters
    check = lambda facts, nonce: compare_readback(facts, config, device_kind="cpu", data_nonce=nonce,
                                                  model_parameters=params, identifying=CASE.immutable)
    assert check(_faithful(config, data_nonce=41), 41).ok
    other_run = check(_faithful(config, data_nonce=41), 42)  # a stored log of another run
    assert "data_nonce 41 (expected 42)" in other_run.reason()
    assert "missing data_nonce" in check(_faithful(config), 42).reason()
    assert check(_faithful(config), None).ok  # no nonce given (equivalence, third-party scripts)
    monkeypatch.setenv(DATA_NONCE_ENV, "41")
    assert '"data_nonce": 41' in readback_line(a=1)


def test_the_nonce_changes_the_data_order_seed(monkeypatch):
    from harness_cases.shared_scripts.data_nonce import NONCE_ENV, data_order_seed

    monkeypatch.delenv(NONCE_ENV, raising=False)
    assert data_order_seed(1234) == 1234  # equivalence runs keep the config's own order
    monkeypatch.setenv(NONCE_ENV, "7")
    seven = data_order_seed(1234)
    monkeypatch.setenv(NONCE_ENV, "8")
    assert seven != data_order_seed(1234) and 0 <= seven < 2 ** 31
