"""A regular (non-editable) install carries every training script, reader and vendor config."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_contains_scripts_readers_and_configs(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(REPO)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("*.whl")
    packaged = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for root in ("plugins", "vendors"):
        for path in (REPO / root).rglob("*"):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
                expected.add(path.relative_to(REPO / root).as_posix())
    for path in (REPO / "harness" / "certify").rglob("*"):  # suites and reference bands
        if path.suffix in (".toml", ".json"):
            expected.add(path.relative_to(REPO).as_posix())
    missing = sorted(expected - packaged)
    assert not missing, f"not in the wheel: {missing}"


def test_typer_has_an_upper_bound_that_the_installed_typer_meets():
    """main.py and cli/metavars.py recognise typer's bundled click by shape: pinned below the
    next minor release, which may change it."""
    import tomllib
    from importlib.metadata import version

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    [typer] = [Requirement(r) for r in project["dependencies"] if r.startswith("typer")]
    assert any(spec.operator == "<" for spec in typer.specifier), typer
    assert version("typer") in typer.specifier
    extras = project["optional-dependencies"]
    assert any(r.startswith("tensorboardX") for r in extras["tensorboard"])
