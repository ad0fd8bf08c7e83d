"""The Paddle plugin's environment handling and launch, without training."""

from __future__ import annotations

import pytest

import harness_paddle.plugin as paddle_plugin
from harness.cli.main import main
from harness.envs import EnvSpec


def test_failed_environment_install_exits_2_with_installer_lines(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    bogus = EnvSpec(name="paddle-cpu", requirements=("harness-no-such-paddle-build==0.0.1",))
    monkeypatch.setitem(paddle_plugin.REQUIREMENTS, "cpu", bogus)
    code = main(["run", "--vendor", "cpu", "--case", "gpt3_125M", "--framework", "paddle",
                 "--scale", "smoke"])
    err = capsys.readouterr().err
    assert code == 2
    assert "harness-no-such-paddle-build" in err and "last lines" in err
    assert "Traceback" not in err
    envs = tmp_path / "cache" / "envs"
    assert [p for p in envs.iterdir() if p.is_dir()] == []  # nothing half-built is left


def test_env_current_needs_paddle_in_this_interpreter(monkeypatch, tmp_path, capsys):
    pytest.importorskip("torch")  # this interpreter is the harness's: paddle is not in it
    from importlib import util

    if util.find_spec("paddle") is not None:
        pytest.skip("paddle is installed in this interpreter")
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--vendor", "cpu", "--case", "gpt3_125M", "--framework", "paddle",
                 "--scale", "smoke", "--env", "current"])
    err = capsys.readouterr().err
    assert code == 2 and "--env current" in err and "paddlepaddle is not installed" in err


def test_unsupported_reasons(unsupported_reasons):
    def reasons(case="gpt3_125M", **fields):
        return unsupported_reasons(case, "paddle", **fields)

    assert reasons() == [] and reasons(precision="bf16") == []
    from harness.errors import UnavailableError

    # The cpu vendor's device backend declares no fp16: refused when the run is planned.
    with pytest.raises(UnavailableError, match="vendor 'cpu' has no fp16"):
        reasons(precision="fp16")
    assert any("need GPUs" in r for r in reasons(nproc=2, set_pairs=["tensor_parallel_degree=2"]))


@pytest.mark.parametrize("case", ["mobilenet_v1", "bert_base_seq128", "gpt3_125M"])
def test_compile_is_refused_not_ignored(unsupported_reasons, case):
    """The Paddle scripts run dygraph whatever compile says: a compiled run would be recorded
    with a setting it never had."""
    assert unsupported_reasons(case, "paddle") == []
    assert unsupported_reasons(case, "paddle", set_pairs=["compile=true"]) == [
        "compile=true: the Paddle plugin runs its models in dygraph (no paddle.jit.to_static); "
        "run it with compile=false"]

