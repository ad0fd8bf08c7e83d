"""Shared fixtures: an installed third-party demo plugin and a CLI runner in subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO_PLUGIN_SRC = REPO / "tests" / "fixtures" / "harness_demo_plugin"
EXAMPLECHIP_SRC = REPO / "examples" / "harness-examplechip"

# Tests send SIGINT to harness processes as Ctrl-C does. A shell that starts the test run in the
# background (`pytest ... &` in a script) ignores SIGINT, and an ignored signal stays ignored
# across exec, so those processes would never see it: the test run restores Python's own
# handler, which the processes it starts get back as the default action.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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


# Offline builds (tests of harness.envs and of the commands that build environments): two
# tiny pure-Python wheels, one depending on the other, so that the offline resolver must find
# the dependency in the folder too.
WHEELHOUSE_APP = "python-dateutil==2.9.0.post0"
WHEELHOUSE_WHEELS = (WHEELHOUSE_APP, "six==1.16.0")
#: Nowhere: with the network shut, every index and proxy points at a closed local port.
DEAD_ADDRESS = "http://127.0.0.1:9"


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """A folder of WHEELHOUSE_WHEELS, downloaded once per test session."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                           "--only-binary=:all:", "--dest", str(folder), *WHEELHOUSE_WHEELS],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"the package registry is unreachable, so no wheelhouse could be made: "
                    f"{proc.stderr.strip().splitlines()[-1:]}")
    return folder


def shut_network(env: dict[str, str]) -> dict[str, str]:
    """``env`` for an installer that sees no index and no configured find-links: anything not
    in a wheelhouse would have to come from a dead address."""
    shut = {name: value for name, value in env.items()
            if not name.startswith(("PIP_", "UV_")) and not name.lower().endswith("_proxy")}
    shut.update({
        "PIP_CONFIG_FILE": os.devnull,  # no site pip.conf (its find-links and indexes)
        "PIP_INDEX_URL": f"{DEAD_ADDRESS}/simple", "PIP_RETRIES": "0",
        "UV_INDEX_URL": f"{DEAD_ADDRESS}/simple", "UV_HTTP_RETRIES": "0",
        "UV_NO_CACHE": "1",  # nothing from earlier online installs
        "HTTP_PROXY": DEAD_ADDRESS, "HTTPS_PROXY": DEAD_ADDRESS, "ALL_PROXY": DEAD_ADDRESS,
    })
    return shut


@pytest.fixture
def network_shut(monkeypatch):
    """This process's environment as :func:`shut_network` makes it."""
    shut = shut_network(dict(os.environ))
    for name in set(os.environ) - set(shut):
        monkeypatch.delenv(name)
    for name, value in shut.items():
        monkeypatch.setenv(name, value)
