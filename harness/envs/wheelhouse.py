"""Offline builds: a local folder of wheels (a wheelhouse) instead of package indexes.

Clusters without internet access get their wheels carried in: ``pip download`` fills a
folder on a connected machine, and environments are then built from that folder alone
(``--wheelhouse DIR`` or ``HARNESS_WHEELHOUSE``), never reaching for an index.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.errors import UserInputError

ENV_VAR = "HARNESS_WHEELHOUSE"

# What the installers say when the folder lacks a distribution (or the version asked for),
# first match wins. uv names the missing project; pip names the requirement it could not meet.
_MISSING = (
    re.compile(r"Because (\S+?) was not found in the provided package locations"),
    re.compile(r"Because there is no version of (\S+?) and"),
    re.compile(r"Because only \S+ is available and you require (\S+?),"),
    re.compile(r"No matching distribution found for (\S+)"),
)


def wheelhouse_from(option: Path | None) -> Path | None:
    """The wheelhouse of this invocation: the option, else ``$HARNESS_WHEELHOUSE``, else None
    (build from the package indexes). A folder that does not exist is a one-line error."""
    raw = option if option is not None else os.environ.get(ENV_VAR) or None
    if raw is None:
        return None
    folder = Path(raw).expanduser().resolve()
    if not folder.is_dir():
        source = "--wheelhouse" if option is not None else ENV_VAR
        raise UserInputError(f"{source} {raw}: no such folder; give a folder of wheels made with "
                             "pip download (see docs/airgapped.md)")
    return folder


def missing_wheel(installer_output: str) -> str | None:
    """The distribution (or requirement) an offline install could not find, from the
    installer's own output; None when the failure was something else."""
    for pattern in _MISSING:
        found = pattern.search(installer_output)
        if found:
            return found.group(1)
    return None
