"""Shared fixtures: an installed third-party demo plugin and a CLI runner in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO_PLUGIN_SRC = REPO / "tests" / "fixtures" / "harness_demo_plugin"
EXAMPLECHIP_SRC = REPO / "examples" / "harness-examplechip"


def pip_install_target(source: Path, target: Path) -> Path:
    """Install a plugin package (with its entry points) into a private folder, offline."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(source)],
        check=True, capture_output=True, text=True,
    )
    return target


@pytest.fixture(scope="session")
def demo_plugin_site(tmp_path_factory) -> Path:
    """The demo plugin package installed (with its entry points) into a private folder."""
    return pip_install_target(DEMO_PLUGIN_SRC, tmp_path_factory.mktemp("demo_site"))


@pytest.fixture(scope="session")
def examplechip_site(tmp_path_factory) -> Path:
    """examples/harness-examplechip installed as a vendor would install it (entry point and
    package data), into a private folder."""
    return pip_install_target(EXAMPLECHIP_SRC, tmp_path_factory.mktemp("examplechip_site"))


@pytest.fixture
def cli_env(demo_plugin_site, tmp_path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(demo_plugin_site), env.get("PYTHONPATH")]))
    env["HARNESS_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONUNBUFFERED"] = "1"
    # The deliberately broken and impostor demo entry points are blocked except where a test
    # checks their warnings.
    env["HARNESS_BLOCK_PLUGINS"] = "broken_demo,impostor_demo"
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


@contextmanager
def small_tmpfs(folder: Path, size: str = "1m"):
    """A real small file system (tmpfs) mounted at ``folder``: a full disk or temporary folder
    for tests; skipped where this process may not mount one (not root)."""
    folder.mkdir(exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full disk) needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def full_fs(tmp_path):
    """A real 1 MiB tmpfs (see small_tmpfs)."""
    with small_tmpfs(tmp_path / "small_fs") as mount:
        yield mount
