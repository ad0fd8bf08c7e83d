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
    missing = sorted(expected - packaged)
    assert not missing, f"not in the wheel: {missing}"
