"""The fingerprint records the harness commit and the framework's build tag."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.fingerprint import build_tag, environment_fingerprint, harness_git_sha
from harness.models import ExecutionEnv

REPO = Path(__file__).resolve().parents[2]


def test_build_tag():
    assert build_tag("2.8.0+cu128") == "cu128" and build_tag("2.8.0") is None and build_tag(None) is None


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="not a git checkout")
def test_git_sha_of_the_checkout():
    import harness

    root = Path(harness.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    sha = harness_git_sha()
    assert sha is not None and sha.removesuffix("-dirty") == head


def test_fingerprint_fields():
    env = ExecutionEnv(python="python3", framework="pytorch", framework_version="2.15.0+cu132")
    fingerprint = environment_fingerprint(env)
    assert fingerprint.framework_build == "cu132"
    assert fingerprint.harness_git_sha == harness_git_sha()


def test_a_plugin_given_build_tag_wins():
    env = ExecutionEnv(python="python3", framework="pytorch", framework_version="2.15.0",
                       framework_build="cu132")
    assert environment_fingerprint(env).framework_build == "cu132"
