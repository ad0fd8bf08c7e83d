"""The one rule for a name that becomes part of a file path: a run id is built from the case,
framework and vendor names and the job id, and a run folder, its ``index/`` file and the
legacy index are named after it. A name is letters, digits, '_', '-' and '.', starts with a
letter or digit (so never '..', never absolute, never hidden) and is at most 128 characters.
Names given on the command line are checked with :func:`check_path_name`; names taken from a
file name are made to fit with :func:`path_name_from`."""

from __future__ import annotations

import re

from harness.errors import UserInputError

MAX_NAME_CHARS = 128
_PATH_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_NAME_CHARS - 1}}}")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_.-]+")

VALID_NAME = (f"letters, digits, '_', '-' and '.', starting with a letter or digit, at most "
              f"{MAX_NAME_CHARS} characters")


def is_path_name(value: str) -> bool:
    return bool(_PATH_NAME.fullmatch(value))


def check_path_name(value: str, what: str) -> str:
    """``value`` when it may be part of a path; else a one-line :class:`UserInputError`
    naming ``what`` (e.g. ``--case``) and the rule."""
    if not is_path_name(value):
        raise UserInputError(f"{what} {value!r} cannot be part of a file name: use {VALID_NAME}")
    return value


def path_name_from(text: str, fallback: str) -> str:
    """``text`` (e.g. a log's file name) made to fit the rule: runs of other characters become
    '_', leading '_', '-' and '.' go, and it is cut to length; ``fallback`` when nothing is left."""
    name = _NOT_ALLOWED.sub("_", text).lstrip("_.-")[:MAX_NAME_CHARS]
    return name if is_path_name(name) else fallback
