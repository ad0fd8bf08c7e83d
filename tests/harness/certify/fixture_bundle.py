"""The recorded certification used by the fast verify tests, and tools to tamper with it.

``tests/fixtures/certify/one-point.tar.gz`` is a real certification made by
``harness certify run --vendor cpu --suite tests/fixtures/certify/one_point.toml --key
tests/fixtures/certify/test.key`` (GPT-3 125M at smoke scale, 12 steps, 3 repeats on this
repository's CPU runner); ``test.key`` is a throw-away key for tests only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.certify import bundle, signing

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "certify"
BUNDLE = FIXTURES / "one-point.tar.gz"
PUBLIC_KEY = FIXTURES / "test.pub"
PRIVATE_KEY = FIXTURES / "test.key"


def unpack(tmp_path: Path, source: Path = BUNDLE) -> Path:
    out = tmp_path / "unpacked"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    return bundle.extract_bundle(source, out)


def repack(folder: Path, out: Path, key: Path | None = PRIVATE_KEY) -> Path:
    """Re-manifest and re-sign an edited folder, as a forger holding the key would."""
    private = signing.load_private_key(key) if key is not None else None
    return bundle.write_bundle(folder, out, private)


def first_run(folder: Path) -> Path:
    return sorted(p for p in (folder / "runs").iterdir() if p.is_dir())[0]
