"""The folder of cached environments: read, list, touch and remove them."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from harness.envs.spec import EnvRecord
from harness.results_io import atomic_write_text

RECORD_FILE = "harness-env.json"
BUILD_PREFIX = ".build-"


def default_envs_root(cache_dir: Path | None = None) -> Path:
    """``<cache>/envs``; the cache defaults to the harness user cache directory."""
    if cache_dir is None:
        from harness.cache import default_cache_dir

        cache_dir = default_cache_dir()
    return Path(cache_dir) / "envs"


def folder_size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


@dataclass
class CachedEnv:
    folder: Path
    record: EnvRecord | None  # None: an unfinished build or a damaged environment

    @property
    def complete(self) -> bool:
        return self.record is not None and self.record.python_in(self.folder).exists()


class EnvStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def read(self, folder: Path) -> EnvRecord | None:
        try:
            return EnvRecord.model_validate_json((folder / RECORD_FILE).read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError):
            return None

    def touch(self, folder: Path, record: EnvRecord) -> None:
        updated = record.model_copy(update={"last_used_at": datetime.now(timezone.utc)})
        try:
            atomic_write_text(folder / RECORD_FILE, updated.model_dump_json(indent=2) + "\n")
        except OSError:
            pass  # a read-only cache is still usable

    def list(self) -> list[CachedEnv]:
        """Every environment folder and every leftover of an interrupted build."""
        if not self.root.is_dir():
            return []
        found = []
        for folder in sorted(self.root.iterdir()):
            if not folder.is_dir():
                continue
            found.append(CachedEnv(folder, None if folder.name.startswith(BUILD_PREFIX)
                                   else self.read(folder)))
        return found

    def being_built(self, env: CachedEnv) -> bool:
        """True while another process holds the build lock of this unfinished build."""
        import fcntl

        if not env.folder.name.startswith(BUILD_PREFIX):
            return False
        target = env.folder.name[len(BUILD_PREFIX):].rsplit(".", 1)[0]
        lock = self.root / f".{target}.lock"
        if not lock.exists():
            return False
        with open(lock, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False

    def remove(self, env: CachedEnv) -> None:
        shutil.rmtree(env.folder, ignore_errors=True)
        if env.record is not None:
            lock = self.root / f".{env.folder.name}.lock"
            lock.unlink(missing_ok=True)
