"""The core's launch of a built-in script: what a vendor's wrapper may change, the isolated
interpreter and bootstrap, the record of what the process imported."""

from __future__ import annotations

import sys
import textwrap

import pytest
from pydantic import ValidationError

from harness.models import LaunchSpec
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.runner.process import execute_launch
from harness.runner.scrub import scrub_environment
from harness.runner.sealed_launch import (config_file_changes, config_text, read_import_records,
                                          restore_config_file, sealed_launch, shadowed_problem,
                                          training_environment, vendor_changes)

ALLOWED = frozenset({"OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES"})


def _launch(**update) -> LaunchSpec:
    base = LaunchSpec(argv=[sys.executable, "/s/train.py", "--config", "c.json"],
                      env={"PYTHONPATH": "/s:/shared"}, log_format="megatron",
                      scripts=["/s/train.py", "/shared/readback.py"])
    return base.model_copy(update=update)


def test_a_vendor_may_set_only_the_variables_its_backend_declares():
    framework = _launch()
    assert vendor_changes(framework, _launch(env={**framework.env, "OMP_NUM_THREADS": "2"}), ALLOWED) == []
    changed = vendor_changes(framework, _launch(env={"PYTHONPATH": "/evil:/s:/shared",
                                                     "LD_PRELOAD": "/evil.so"}), ALLOWED)
    assert changed == ["set LD_PRELOAD (not a variable its device backend declares)",
                       "changed PYTHONPATH (not a variable its device backend declares)"]
    assert vendor_changes(framework, _launch(env={}), ALLOWED) == ["removed PYTHONPATH"]


def test_a_vendor_may_not_replace_the_command_or_the_launch():
    framework = _launch()
    replaced = _launch(argv=[sys.executable, "-c", "print()"])
    assert vendor_changes(framework, replaced, ALLOWED) == [
        "replaced the command (argument 1: '/s/train.py' became '-c')"]
    assert vendor_changes(framework, _launch(cwd="/tmp"), ALLOWED) == ["changed the launch's cwd"]


def _written_config(tmp_path):
    from tests.plugins.conftest import plan_context

    config = plan_context(tmp_path, "gpt3_125M", "pytorch").config
    (tmp_path / "config.json").write_text(config_text(config))
    return config


def test_the_config_file_the_script_reads_must_be_the_one_the_core_wrote(tmp_path):
    import json

    config = _written_config(tmp_path)
    assert config_file_changes(tmp_path, config) == []
    edited = json.loads((tmp_path / "config.json").read_text())
    edited["params"]["num_layers"] //= 2
    edited["settings"]["skip_steps"] = 0
    (tmp_path / "config.json").write_text(json.dumps(edited))
    skip = config.settings.skip_steps
    assert config_file_changes(tmp_path, config) == [
        f"changed config.json (params.num_layers 2 -> 1, settings.skip_steps {skip} -> 0)"]
    restore_config_file(tmp_path, config)  # put back as written: the folder matches its result
    assert (tmp_path / "config.json").read_text() == config_text(config)
    assert config_file_changes(tmp_path, config) == []


def test_a_config_file_rewritten_replaced_or_removed_is_named(tmp_path):
    import json

    config = _written_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(json.loads(config_text(config))))
    assert config_file_changes(tmp_path, config) == ["rewrote config.json (the same values)"]
    (tmp_path / "config.json").write_text("num_layers = 1\n")
    assert config_file_changes(tmp_path, config) == ["replaced config.json with a file that is not JSON"]
    (tmp_path / "config.json").unlink()
    assert config_file_changes(tmp_path, config) == ["removed config.json"]


def test_a_backend_cannot_declare_interpreter_or_loader_variables():
    torch_cpu = {"torch": FrameworkDevice(device_type="cpu")}
    for name in ("PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD"):
        with pytest.raises(ValidationError, match=f"launch_env may not name {name}"):
            DeviceBackend(device_type="cpu", frameworks=torch_cpu, addressed_by_local_rank=False,
                          launch_env=frozenset({name}))
    backend = DeviceBackend(device_type="cuda", frameworks=torch_cpu, addressed_by_local_rank=True,
                            visible_devices_env="CUDA_VISIBLE_DEVICES",
                            launch_env=frozenset({"NCCL_ALGO"}))
    assert backend.allowed_launch_env() == {"NCCL_ALGO", "CUDA_VISIBLE_DEVICES"}
    assert "launch_env" not in backend.model_dump()  # not part of the resolved config


def test_the_sealed_launch_isolates_the_interpreter_and_keeps_a_launcher_in_front(tmp_path):
    plain = sealed_launch(_launch(), tmp_path / "rec")
    assert plain.argv[:3] == [sys.executable, "-I", "-u"]
    assert plain.argv[3].endswith("script_bootstrap.py")
    assert plain.argv[-4:] == ["--", "/s/train.py", "--config", "c.json"]
    assert not plain.inherit_env and "PYTHONPATH" not in plain.env
    torchrun = _launch(argv=[sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
                             "/s/train.py", "--config", "c.json"])
    sealed = sealed_launch(torchrun, tmp_path / "rec")
    assert sealed.argv[:6] == [sys.executable, "-I", "-u", "-m", "torch.distributed.run",
                               "--nproc-per-node=2"]
    assert sealed.argv[6].endswith("script_bootstrap.py")


def test_the_environment_loses_the_variables_that_load_other_code():
    env = training_environment(_launch(env={"PYTHONPATH": "/s", "OMP_NUM_THREADS": "2"}),
                               inherited={"PATH": "/bin", "PYTHONSTARTUP": "/x.py",
                                          "LD_PRELOAD": "/evil.so", "HOME": "/root"})
    assert env == {"PATH": "/bin", "HOME": "/root", "OMP_NUM_THREADS": "2", "PYTHONNOUSERSITE": "1"}


def test_secrets_are_not_recorded():
    assert scrub_environment({"HF_TOKEN": "hf_x", "AWS_SECRET_ACCESS_KEY": "k", "PATH": "/bin"}) == {
        "AWS_SECRET_ACCESS_KEY": "<redacted>", "HF_TOKEN": "<redacted>", "PATH": "/bin"}


def _script_folder(tmp_path):
    scripts, shadow = tmp_path / "scripts", tmp_path / "shadow"
    scripts.mkdir()
    shadow.mkdir()
    (scripts / "readback.py").write_text("WHO = 'harness'\n")
    (scripts / "train.py").write_text(textwrap.dedent("""
        import os, sys
        import readback
        custom = [m for m in ("sitecustomize", "usercustomize") if hasattr(sys.modules.get(m), "CHEAT")]
        print("readback", readback.WHO, "customized", custom, "isolated", sys.flags.isolated, flush=True)
        os._exit(0)  # as the torch scripts end: the record is still written
    """))
    (shadow / "readback.py").write_text("WHO = 'vendor'\n")
    (shadow / "sitecustomize.py").write_text("CHEAT = 1\n")
    site = tmp_path / "user" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (site / "usercustomize.py").write_text("CHEAT = 1\n")
    return scripts, shadow


def test_a_shadowing_pythonpath_or_user_site_cannot_take_effect(tmp_path, monkeypatch):
    """Even where the variables reach harness's own environment, the training interpreter
    imports harness's readback.py and runs no sitecustomize or usercustomize of theirs."""
    scripts, shadow = _script_folder(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    monkeypatch.setenv("PYTHONUSERBASE", str(tmp_path / "user"))
    launch = LaunchSpec(argv=[sys.executable, str(scripts / "train.py")],
                        env={"PYTHONPATH": f"{shadow}:{scripts}"},  # even listed first
                        log_format="megatron", scripts=[str(scripts / "train.py"), str(scripts / "readback.py")])
    sealed = sealed_launch(launch, tmp_path / "rec")
    outcome = execute_launch(sealed, tmp_path / "train.log", timeout_s=60, hang_timeout_s=60)
    assert outcome.status == "success", outcome.reason
    assert "readback harness customized [] isolated 1" in (tmp_path / "train.log").read_text()
    imported, shadowed = read_import_records(tmp_path / "rec")
    assert set(imported) == {str((scripts / "train.py").resolve()), str((scripts / "readback.py").resolve())}
    assert shadowed == {} and not list(tmp_path.glob("rec.*.json"))  # read once


def test_a_launcher_worker_started_without_isolation_restarts_isolated(tmp_path, monkeypatch):
    """torchrun starts workers as ``python -u bootstrap ...``: the bootstrap starts itself again
    with -I before the script runs."""
    scripts, shadow = _script_folder(tmp_path)
    sealed = sealed_launch(LaunchSpec(argv=[sys.executable, str(scripts / "train.py")],
                                      log_format="megatron", scripts=[str(scripts / "train.py")]),
                           tmp_path / "rec")
    worker = sealed.model_copy(update={"argv": [sys.executable, "-u", *sealed.argv[3:]],
                                       "env": {**sealed.env, "PYTHONPATH": str(shadow)}})
    execute_launch(worker, tmp_path / "train.log", timeout_s=60, hang_timeout_s=60)
    assert "readback harness customized [] isolated 1" in (tmp_path / "train.log").read_text()


def test_a_module_named_like_a_harness_script_from_elsewhere_is_named(tmp_path):
    scripts, shadow = _script_folder(tmp_path)
    (scripts / "train.py").write_text(f"import sys; sys.path.insert(0, {str(shadow)!r}); import readback\n")
    sealed = sealed_launch(LaunchSpec(argv=[sys.executable, str(scripts / "train.py")],
                                      log_format="megatron", scripts=[str(scripts / "train.py")]),
                           tmp_path / "rec")
    execute_launch(sealed, tmp_path / "train.log", timeout_s=60, hang_timeout_s=60)
    _, shadowed = read_import_records(tmp_path / "rec")
    assert shadowed == {"readback": str((shadow / "readback.py").resolve())}
    assert "imported harness script modules from elsewhere: readback from" in shadowed_problem(shadowed)


def test_the_sealed_launch_carries_only_the_cores_nonce(tmp_path, monkeypatch):
    from harness.readback import DATA_NONCE_ENV
    from harness.runner.sealed_launch import repeat_nonce

    monkeypatch.setenv(DATA_NONCE_ENV, "1")  # inherited: never passed on
    assert DATA_NONCE_ENV not in sealed_launch(_launch(), tmp_path / "rec").env
    assert sealed_launch(_launch(), tmp_path / "rec", data_nonce=77).env[DATA_NONCE_ENV] == "77"
    # one node: fresh each time; several: every node derives the same from the job id
    assert len({repeat_nonce(None, 1, 1) for _ in range(8)}) > 1
    assert repeat_nonce("job7", 2, 1) == repeat_nonce("job7", 2, 1) != repeat_nonce("job7", 2, 2)
    with pytest.raises(ValidationError, match="HARNESS_DATA_NONCE"):
        DeviceBackend(device_type="cpu", frameworks={"torch": FrameworkDevice(device_type="cpu")},
                      addressed_by_local_rank=False, launch_env=frozenset({DATA_NONCE_ENV}))
