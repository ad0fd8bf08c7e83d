"""Vendor per-case config files: ``<root>/<case>/<framework>/<name>.toml``.

FlagPerf names its configs after the layout, ending in ``x<nnodes>x<nproc>``
(``config_TP1PP1SH2SP8A10080Gx1x8``); a config ending that way is picked for that layout,
otherwise ``default.toml``. A ``[values]`` table holds the overrides.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from harness.errors import HarnessError, UserInputError, did_you_mean
from harness.models.vendor_config import VendorCaseConfig


#: Said by every error about a config file's layout, so the fix is in the message.
EXPECTED_FORMAT = "a [values] table of the settings and params it overrides (e.g. micro_batch_size = 4)"


def _load(path: Path) -> VendorCaseConfig:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"vendor config {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"vendor config {path} is not UTF-8 text (byte {exc.start}); expected "
                           f"TOML with {EXPECTED_FORMAT}") from None
    except OSError as exc:
        raise HarnessError(f"cannot read vendor config {path}: {exc.strerror or exc}") from None
    # Anything outside [values] would be ignored without a word; refuse it instead.
    stray = sorted(set(data) - {"values"})
    if stray:
        raise HarnessError(f"vendor config {path}: unexpected top-level key(s) {', '.join(stray)}; "
                           f"expected {EXPECTED_FORMAT}")
    if not isinstance(data.get("values"), dict):
        raise HarnessError(f"vendor config {path} has no [values] table; expected {EXPECTED_FORMAT}")
    return VendorCaseConfig(name=path.stem, path=str(path), values=dict(data["values"]))


def list_vendor_configs(root: Path, case: str, framework: str) -> list[Path]:
    folder = root / case / framework
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def find_vendor_config(root: Path, case: str, framework: str, nnodes: int, nproc: int,
                       name: str | None = None) -> VendorCaseConfig | None:
    candidates = list_vendor_configs(root, case, framework)
    if name is not None:
        for path in candidates:
            if path.stem == name:
                return _load(path)
        raise UserInputError(
            f"no vendor config {name!r} for {case}/{framework}. "
            + did_you_mean(name, [p.stem for p in candidates] or ["(none)"])
        )
    suffix = f"x{nnodes}x{nproc}"
    for path in candidates:
        if path.stem.endswith(suffix):
            return _load(path)
    for path in candidates:
        if path.stem == "default":
            return _load(path)
    return None
