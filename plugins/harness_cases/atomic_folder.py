"""Datasets appear whole or not at all: written into a staging folder, then renamed into place."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable


def ensure_folder(target: Path, files: list[str], write: Callable[[Path], None]
                  ) -> tuple[Path, list[str], bool]:
    """Return ``(target, files, written_now)``: ``target`` as it is when it holds all ``files``,
    else after ``write(staging)`` has written them into a hidden folder beside it that is then
    renamed to ``target`` (atomic). When another process renamed its own folder there first,
    theirs is kept; whatever fails, no staging folder is left behind."""
    if all((target / f).exists() for f in files):
        return target, files, False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        write(staging)
        try:
            os.replace(staging, target)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target, files, True
