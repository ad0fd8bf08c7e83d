"""Isolated environments: built once per requirement set, reused, atomic, and failing clearly."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from harness.envs import EnvSpec, EnvStore, ensure_environment
from harness.envs.store import BUILD_PREFIX
from harness.errors import UnavailableError

# A tiny pure-Python wheel: the tests exercise the real installer, not a stub.
SMALL = ("six==1.16.0",)


def test_key_depends_on_content_not_order():
    a = EnvSpec(name="x", requirements=("six==1.16.0", "idna"))
    b = EnvSpec(name="y", requirements=("idna", "six==1.16.0"))
    assert a.key() == b.key()
    assert a.key() != EnvSpec(name="x", requirements=("six==1.15.0", "idna")).key()
    assert a.key() != EnvSpec(name="x", requirements=a.requirements, python_version="3.10.0").key()
    assert a.key() != EnvSpec(name="x", requirements=a.requirements, index_urls=("https://example.org/simple",)).key()
    assert a.folder_name().startswith("x-py") and a.folder_name().endswith(a.key())


def test_build_then_reuse(tmp_path):
    messages: list[str] = []
    spec = EnvSpec(name="small", requirements=SMALL)
    folder, record, reused = ensure_environment(spec, tmp_path, messages.append)
    assert not reused and folder.is_dir() and record.packages["six"] == "1.16.0"
    assert record.key == spec.key() and record.requirements == list(SMALL)
    python = record.python_in(folder)
    out = subprocess.run([str(python), "-c", "import six, sys; print(six.__version__, sys.prefix)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "1.16.0" and out[1] == str(folder)  # the renamed folder is the environment
    # The harness interpreter's packages are not visible in the environment.
    probe = subprocess.run([str(python), "-c", "import pydantic"], capture_output=True)
    assert probe.returncode != 0

    started = time.monotonic()
    again, record_again, reused_again = ensure_environment(spec, tmp_path, messages.append)
    assert reused_again and again == folder and time.monotonic() - started < 5
    assert record_again.last_used_at >= record.last_used_at
    assert any(m.startswith("building environment") for m in messages)
    assert any(m.startswith("reusing environment") for m in messages)
    assert [e.folder for e in EnvStore(tmp_path).list()] == [folder]


def test_failed_install_raises_with_installer_output_and_leaves_nothing(tmp_path):
    spec = EnvSpec(name="bogus", requirements=("harness-no-such-distribution-xyz==9.9.9",))
    with pytest.raises(UnavailableError) as info:
        ensure_environment(spec, tmp_path)
    message = str(info.value)
    assert "failed" in message and "harness-no-such-distribution-xyz" in message
    assert "last lines" in message and "--env current" in message
    assert info.value.exit_code == 2
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == []  # no half-built environment
    assert not (tmp_path / spec.folder_name()).exists()


def test_incomplete_build_is_listed_and_pruned(tmp_path, monkeypatch):
    envs = tmp_path / "envs"
    spec = EnvSpec(name="small", requirements=SMALL)
    folder, _, _ = ensure_environment(spec, envs)
    leftover = envs / f"{BUILD_PREFIX}small-interrupted.abc"
    leftover.mkdir()
    (leftover / "junk").write_text("x")
    env = {"HARNESS_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    listing = subprocess.run([sys.executable, "-m", "harness", "env", "list"], capture_output=True,
                             text=True, env={**env, "COLUMNS": "250"})
    assert listing.returncode == 0, listing.stderr
    assert folder.name in listing.stdout and "incomplete" in listing.stdout
    prune = subprocess.run([sys.executable, "-m", "harness", "env", "prune"], capture_output=True,
                           text=True, env=env)
    assert prune.returncode == 0 and not leftover.exists() and folder.exists()
    unknown = subprocess.run([sys.executable, "-m", "harness", "env", "prune", "nosuchenv"],
                             capture_output=True, text=True, env=env)
    assert unknown.returncode == 2 and "nosuchenv" in unknown.stderr
    dry = subprocess.run([sys.executable, "-m", "harness", "env", "prune", "--all", "--dry-run"],
                         capture_output=True, text=True, env=env)
    assert "would remove" in dry.stdout and folder.exists()
    everything = subprocess.run([sys.executable, "-m", "harness", "env", "prune", "--all"],
                                capture_output=True, text=True, env=env)
    assert everything.returncode == 0 and not folder.exists()


def test_spec_for_a_python_version(tmp_path):
    import platform

    version = ".".join(platform.python_version_tuple()[:2])
    spec = EnvSpec.for_python(version, name="pinned", requirements=SMALL)
    assert spec.python == version and version in spec.folder_name()
    folder, record, _ = ensure_environment(spec, tmp_path)
    assert record.python_version == platform.python_version()  # what the venv really runs


def test_concurrent_runs_build_once(tmp_path):
    """Two processes asking for the same new environment: one builds, the other waits and reuses."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from harness.envs import EnvSpec, ensure_environment\n"
        "_, _, reused = ensure_environment(EnvSpec(name='race', requirements=('six==1.16.0',)),\n"
        f"                                  Path({str(tmp_path)!r}))\n"
        "print('reused' if reused else 'built')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outcomes = sorted(p.communicate(timeout=300)[0].strip() for p in procs)
    assert outcomes == ["built", "reused"]
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1


def test_prune_leaves_a_build_in_progress(tmp_path):
    import fcntl

    envs = tmp_path / "envs"
    building = envs / f"{BUILD_PREFIX}small-py3.11-0123456789abcdef.x1y2"
    building.mkdir(parents=True)
    with open(envs / ".small-py3.11-0123456789abcdef.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as ensure_environment holds it while installing
        env = {"HARNESS_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
        proc = subprocess.run([sys.executable, "-m", "harness", "env", "prune"], capture_output=True,
                              text=True, env=env)
        assert proc.returncode == 0 and "being built" in proc.stdout and building.exists()
    proc = subprocess.run([sys.executable, "-m", "harness", "env", "prune"], capture_output=True,
                          text=True, env=env)
    assert not building.exists()


def test_a_framework_without_a_build_for_the_vendor_says_which_it_has():
    from harness.envs.prepare import vendor_env_spec

    specs = {"cpu": EnvSpec(name="fw-cpu", requirements=("fw==1",)),
             "nvidia": EnvSpec(name="fw-cu", requirements=("fw-gpu==1",))}
    assert vendor_env_spec(specs, "nvidia", "FW") is specs["nvidia"]
    with pytest.raises(UnavailableError) as refused:
        vendor_env_spec(specs, "somechip", "FW")
    assert str(refused.value) == ("the FW plugin has no FW build for vendor 'somechip' (it knows cpu, "
                                  "nvidia); install the vendor's FW build and run with --env current")
