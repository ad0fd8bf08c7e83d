"""Offline builds from a wheelhouse: real installs with uv and with pip, the network shut."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.envs import EnvSpec, ensure_environment
from harness.envs import builder
from harness.envs.wheelhouse import ENV_VAR, missing_wheel, wheelhouse_from
from harness.errors import UnavailableError, UserInputError
from tests.conftest import WHEELHOUSE_APP as APP


@pytest.fixture(params=["uv", "pip"])
def installer(request, monkeypatch) -> str:
    if request.param == "pip":
        monkeypatch.setattr(builder, "_uv_binary", lambda: None)
    assert builder.installer_available() == request.param
    return request.param


def _import_versions(python: Path) -> list[str]:
    code = "import dateutil, six; print(dateutil.__version__, six.__version__)"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()


def test_offline_build_from_the_wheelhouse(tmp_path, wheelhouse, network_shut, installer):
    spec = EnvSpec(name="offline", requirements=(APP,))
    messages: list[str] = []
    folder, record, reused = ensure_environment(spec, tmp_path, messages.append, wheelhouse)
    assert not reused and record.installer.startswith(installer)
    assert record.wheelhouse == str(wheelhouse)
    assert record.packages["python-dateutil"] == "2.9.0.post0" and record.packages["six"] == "1.16.0"
    assert _import_versions(record.python_in(folder)) == ["2.9.0.post0", "1.16.0"]
    assert any(f"offline from {wheelhouse}" in m for m in messages)
    # Where the wheels came from is no part of the key: the same spec is the same environment.
    assert record.key == spec.key() == EnvSpec(name="offline", requirements=(APP,)).key()
    _, _, reused = ensure_environment(spec, tmp_path, wheelhouse=None)
    assert reused


def test_the_same_build_without_the_wheelhouse_cannot_reach_an_index(tmp_path, network_shut):
    """The control of the test above: with the network shut, only the wheelhouse can serve."""
    with pytest.raises(UnavailableError):
        ensure_environment(EnvSpec(name="online", requirements=(APP,)), tmp_path)


def test_a_missing_wheel_is_one_line_naming_it_and_leaves_nothing(tmp_path, wheelhouse,
                                                                    network_shut, installer,
                                                                    monkeypatch):
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(next(wheelhouse.glob("python_dateutil-*.whl")), partial)  # six left out
    envs = tmp_path / "envs"
    spec = EnvSpec(name="offline", requirements=(APP,))
    seen: list[list[Path]] = []
    real_build = builder._build

    def build_and_look(*args):
        try:
            return real_build(*args)
        finally:  # what the failed install left behind, before the builder cleans up
            seen.append(sorted(p for p in envs.iterdir() if p.is_dir()))

    monkeypatch.setattr(builder, "_build", build_and_look)
    with pytest.raises(UserInputError) as info:
        ensure_environment(spec, envs, wheelhouse=partial)
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2
    assert message.startswith(f"the wheelhouse {partial} has no wheel for six")
    # The install really ran in a hidden staging folder, and the failure removed it.
    assert [p.name.startswith(".build-offline-") for p in seen[0]] == [True]
    assert [p for p in envs.iterdir() if p.is_dir()] == []
    assert not (envs / spec.folder_name()).exists()


def test_a_version_the_wheelhouse_lacks_is_named(tmp_path, wheelhouse, network_shut):
    with pytest.raises(UserInputError, match=r"has no wheel for six==1\.17\.0;"):
        ensure_environment(EnvSpec(name="v", requirements=("six==1.17.0",)), tmp_path,
                           wheelhouse=wheelhouse)


@pytest.mark.parametrize("output, missing", [
    ("  cause: Because six was not found in the provided package locations and all versions of "
     "python-dateutil depend on six>=1.5, we can conclude", "six"),
    ("  cause: Because there is no version of six==1.17.0 and you require six==1.17.0, we", "six==1.17.0"),
    ("  cause: Because only paddlepaddle<3 is available and you require paddlepaddle>=3, we",
     "paddlepaddle>=3"),
    ("ERROR: Could not find a version that satisfies the requirement six>=1.5 (from "
     "python-dateutil) (from versions: none)\nERROR: No matching distribution found for six>=1.5",
     "six>=1.5"),
    ("error: Failed to install: disk full", None),
])
def test_missing_wheel_reads_both_installers(output, missing):
    assert missing_wheel(output) == missing


def test_wheelhouse_from_option_or_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert wheelhouse_from(None) is None
    assert wheelhouse_from(tmp_path) == tmp_path.resolve()
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert wheelhouse_from(None) == tmp_path.resolve()
    other = tmp_path / "other"
    other.mkdir()
    assert wheelhouse_from(other) == other  # the option wins over the variable
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(UserInputError, match=rf"^{ENV_VAR} .*/nope: no such folder;"):
        wheelhouse_from(None)
    with pytest.raises(UserInputError, match=r"^--wheelhouse .*/gone: no such folder;"):
        wheelhouse_from(tmp_path / "gone")
