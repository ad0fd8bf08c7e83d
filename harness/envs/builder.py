"""Build (once) or reuse a virtual environment for an ``EnvSpec``.

A build happens in a hidden temporary folder next to its final place and is renamed into
place only when the install succeeded, so a failed or interrupted build leaves nothing a
later run could mistake for a finished environment. uv is used when present (fast, with a
shared wheel cache); otherwise the standard library's venv and pip. With a wheelhouse
(``harness.envs.wheelhouse``) either installer works offline, from that folder alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from harness.envs.spec import EnvRecord, EnvSpec
from harness.envs.store import BUILD_PREFIX, RECORD_FILE, EnvStore
from harness.envs.wheelhouse import missing_wheel
from harness.errors import UnavailableError, UserInputError

INSTALL_TIMEOUT_S = 3600
TAIL_LINES = 15

Log = Callable[[str], None]


def _uv_binary() -> str | None:
    found = shutil.which("uv")
    if found:
        return found
    try:  # the `uv` wheel ships its binary inside the package
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return None


def installer_available() -> str:
    """``uv`` or ``pip``: what a build would use here."""
    return "uv" if _uv_binary() else "pip"


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """One builder per environment at a time, across processes."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_logged(argv: list[str], install_log: Path, what: str,
                wheelhouse: Path | None = None) -> None:
    """Run an installer step, appending its output to ``install_log``; raise with its tail,
    or, for a wheel the wheelhouse lacks, with one line naming it and the folder."""
    with open(install_log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, text=True,
                                  timeout=INSTALL_TIMEOUT_S, env={**os.environ, "PIP_NO_INPUT": "1"})
        except subprocess.TimeoutExpired:
            raise UnavailableError(f"{what} did not finish within {INSTALL_TIMEOUT_S} s") from None
        except FileNotFoundError as exc:
            raise UnavailableError(f"{what} failed: {exc}") from None
    if proc.returncode != 0:
        output = install_log.read_text(encoding="utf-8", errors="replace")
        missing = missing_wheel(output) if wheelhouse is not None else None
        if missing:
            raise UserInputError(
                f"the wheelhouse {wheelhouse} has no wheel for {missing}; add it there (pip "
                f"download --only-binary=:all: -d DIR '{missing}' on a connected machine, see "
                "docs/airgapped.md)")
        tail = "\n  ".join(output.splitlines()[-TAIL_LINES:])
        raise UnavailableError(
            f"{what} failed (exit {proc.returncode}); the installer's last lines:\n  {tail}\n"
            "Check the requirement names and network access to the package index, or run with "
            "--env current on a machine that has the framework installed."
        )


def _parse_freeze(text: str) -> dict[str, str]:
    packages: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            packages[name.strip().lower()] = version.strip()
        elif " @ " in line:  # direct references have no version: keep the source
            name, source = line.split(" @ ", 1)
            packages[name.strip().lower()] = source.strip()
    return packages


def _base_python(spec: EnvSpec, uv: str | None) -> str:
    """The interpreter to build from: a path as given, or a version such as ``3.11``.

    uv finds (or, where it may download, fetches) a Python of that version itself; the pip
    fallback needs a ``python3.11`` on PATH.
    """
    if os.sep in spec.python or uv:
        return spec.python
    found = shutil.which(f"python{spec.python}")
    if not found:
        raise UnavailableError(
            f"the {spec.name} environment needs Python {spec.python}, which is not on PATH; "
            "install it (or uv, which can provide it)")
    return found


def _sources(spec: EnvSpec, wheelhouse: Path | None, uv: bool) -> list[str]:
    """Where the installer looks for distributions: the wheelhouse alone, or the default
    index plus the spec's extra indexes."""
    if wheelhouse is not None:
        return [*(["--offline"] if uv else []), "--no-index", "--find-links", str(wheelhouse)]
    indexes: list[str] = []
    for url in spec.index_urls:
        indexes += ["--extra-index-url", url]
    if indexes and uv:
        # pip's rule, so both installers resolve a spec alike: the best match over every
        # index. uv's own default takes a project from the first index that has it, which
        # would refuse e.g. a PyPI-only version of a project the extra index also carries.
        indexes += ["--index-strategy", "unsafe-best-match"]
    return indexes


def _build(spec: EnvSpec, staging: Path, log: Log, wheelhouse: Path | None
           ) -> tuple[str, dict[str, str]]:
    install_log = staging.parent / f"{staging.name}.install.log"
    python = staging / "bin" / "python"
    uv = _uv_binary()
    base = _base_python(spec, uv)
    sources = _sources(spec, wheelhouse, bool(uv))
    installing = f"installing {', '.join(spec.requirements)}"
    try:
        if uv:
            # --relocatable: the folder is renamed after the build; scripts must not care.
            # --offline with a wheelhouse: uv must not download a Python either.
            _run_logged([uv, "venv", "--quiet", "--relocatable", "--python", base,
                         *(["--offline"] if wheelhouse else []), str(staging)], install_log,
                        "creating the virtual environment")
            _run_logged([uv, "pip", "install", "--python", str(python), *sources,
                         *spec.requirements], install_log, installing, wheelhouse)
            freeze = subprocess.run([uv, "pip", "freeze", "--python", str(python)],
                                    capture_output=True, text=True, check=True)
            installer = f"uv {_version([uv, '--version'])}"
        else:
            shutil.rmtree(staging, ignore_errors=True)
            _run_logged([base, "-m", "venv", str(staging)], install_log,
                        "creating the virtual environment")
            _run_logged([str(python), "-m", "pip", "install", "--disable-pip-version-check",
                         *sources, *spec.requirements], install_log, installing, wheelhouse)
            freeze = subprocess.run([str(python), "-m", "pip", "freeze", "--all"],
                                    capture_output=True, text=True, check=True)
            installer = "pip"
    finally:
        if install_log.exists():
            # Keep the installer's output with the environment it built (or drop it with
            # the failed build: the error message already carries its tail).
            if staging.exists():
                shutil.move(str(install_log), staging / "harness-install.log")
            else:
                install_log.unlink()
    return installer, _parse_freeze(freeze.stdout)


def _python_version(folder: Path) -> str:
    return _version([str(folder / "bin" / "python"), "-c",
                     "import platform; print('Python', platform.python_version())"])


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return out.split()[-1] if out else "?"


def ensure_environment(spec: EnvSpec, root: Path, log: Log = lambda _msg: None,
                       wheelhouse: Path | None = None) -> tuple[Path, EnvRecord, bool]:
    """Return ``(folder, record, reused)`` for ``spec``, building the environment if needed.

    ``wheelhouse``: build offline from this folder of wheels only. It is no part of the
    environment's key (which is about what is asked for, not where it came from): a cached
    environment is reused whoever built it, and its record says where its wheels came from.
    """
    store = EnvStore(root)
    folder = root / spec.folder_name()
    record = store.read(folder)
    if record is not None and record.python_in(folder).exists():
        store.touch(folder, record)
        log(f"reusing environment {folder} ({spec.name}, built {record.created_at:%Y-%m-%d %H:%M} UTC)")
        return folder, record, True
    with _exclusive(root / f".{folder.name}.lock"):
        record = store.read(folder)  # another process may have built it while we waited
        if record is not None and record.python_in(folder).exists():
            log(f"reusing environment {folder} ({spec.name}, built by a concurrent run)")
            return folder, record, True
        if folder.exists():  # a folder without a valid record is not an environment
            shutil.rmtree(folder)
        log(f"building environment {folder.name} with {installer_available()}"
            f"{f' offline from {wheelhouse}' if wheelhouse else ''}: {' '.join(spec.requirements)}")
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(dir=root, prefix=f"{BUILD_PREFIX}{folder.name}."))
        try:
            installer, packages = _build(spec, staging, log, wheelhouse)
            now = datetime.now(timezone.utc)
            record = EnvRecord(
                key=spec.key(), name=spec.name, requirements=list(spec.requirements),
                index_urls=list(spec.index_urls),
                wheelhouse=str(wheelhouse) if wheelhouse else None,
                python_version=_python_version(staging),
                base_python=spec.python, installer=installer, created_at=now, last_used_at=now,
                build_seconds=round(time.monotonic() - started, 2), packages=packages,
            )
            (staging / RECORD_FILE).write_text(record.model_dump_json(indent=2) + "\n",
                                               encoding="utf-8")
            os.rename(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    log(f"built environment {folder} in {record.build_seconds:.1f} s")
    return folder, record, False
