"""Where a result came from: the loaded plugins, the code that ran, the files it read.

Two things are recorded. At plan time, :func:`code_digests` fingerprints what will run the
config (the loaded plugin set, the files of the plugins that own a hook of the run, the vendor
config file); the digests are part of the resolved config and so of its hash, so a changed
training script, plugin or plugin set is a different config and a sweep does not take an old
result for it. At run time the result's :class:`~harness.models.result.Provenance` lists every
loaded plugin with the hooks of this run it implemented or wrapped (as the
:class:`~harness.dispatch.HookRouter` routed them) and the sha256 of each script the launch
declared and of the vendor config.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from harness.dispatch import is_core_plugin
from harness.models.result import PluginRecord, Provenance

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.dispatch import HookRouter

#: Files of a plugin's package that are not its code (byte-compiled caches).
_SKIPPED_PARTS = {"__pycache__"}


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=512)
def _cached_sha(path: str, mtime_ns: int, size: int) -> str:
    return sha256_file(path)


def _file_sha(path: Path) -> str:
    stat = path.stat()
    return _cached_sha(str(path), stat.st_mtime_ns, stat.st_size)


def display_path(path: Path) -> str:
    """A script's path from its top-level package (``harness_pytorch/scripts/train_gpt.py``),
    so results from different machines and processes name the same file alike, whatever is
    on ``sys.path``; absolute for a file outside any package."""
    resolved = path.resolve()
    package = next((parent for parent in resolved.parents if (parent / "__init__.py").is_file()), None)
    if package is None:
        return str(resolved)
    # up through the packages it is a subpackage of, not past a plain folder: a plugin
    # package kept in a folder of another package's tree is still its own top level
    while (package.parent / "__init__.py").is_file():
        package = package.parent
    return resolved.relative_to(package.parent).as_posix()


def plugin_records(harness: Harness) -> list[PluginRecord]:
    """Every loaded plugin (the core's own fallbacks left out), in load order."""
    records = []
    for name, info in harness.plugins.items():
        if is_core_plugin(name):
            continue
        records.append(PluginRecord(name=name, distribution=info.distribution,
                                    version=info.version, builtin=info.source == "builtin"))
    return records


def plugin_source_files(harness: Harness, name: str) -> list[Path]:
    """The files of a plugin's code: its top-level package folder (training scripts, shared
    script modules and vendor configs live there), or its module file, or the file that
    defines a plugin object."""
    plugin = harness.pm.get_plugin(name)
    if plugin is None:
        return []
    module_name = getattr(plugin, "__name__", None) if inspect.ismodule(plugin) else None
    if module_name:
        top = sys.modules.get(module_name.split(".")[0])
        top_file = getattr(top, "__file__", None)
        if top_file and Path(top_file).name == "__init__.py":
            root = Path(top_file).parent
            return sorted(p for p in root.rglob("*")
                          if p.is_file() and not _SKIPPED_PARTS & set(p.relative_to(root).parts)
                          and p.suffix != ".pyc")
        own = getattr(plugin, "__file__", None)
        return [Path(own)] if own else []
    try:
        source = inspect.getsourcefile(type(plugin))
    except TypeError:
        return []
    return [Path(source)] if source else []


def files_digest(files: Iterable[Path]) -> str:
    """One sha256 over the files' names (relative to their common folder) and contents."""
    files = sorted(files)
    if not files:
        return hashlib.sha256(b"").hexdigest()
    root = _common_parent(files)
    entries = [(str(p.relative_to(root)) if root in p.parents else p.name, _file_sha(p))
               for p in files]
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def _common_parent(files: list[Path]) -> Path:
    parts = list(files[0].parent.parts)
    for path in files[1:]:
        other = path.parent.parts
        n = 0
        while n < min(len(parts), len(other)) and parts[n] == other[n]:
            n += 1
        parts = parts[:n]
    return Path(*parts) if parts else Path("/")


def code_digests(harness: Harness, owners: Iterable[str],
                 vendor_config_path: str | None) -> dict[str, str]:
    """The config's ``code`` digests: the loaded plugin set, each owning plugin's files, the
    vendor config file."""
    plugin_set = [(r.name, r.distribution, r.version) for r in plugin_records(harness)]
    digests = {"plugins": hashlib.sha256(json.dumps(plugin_set).encode()).hexdigest()}
    for owner in sorted(set(owners)):
        if not is_core_plugin(owner):
            digests[f"source:{owner}"] = files_digest(plugin_source_files(harness, owner))
    if vendor_config_path:
        digests["vendor_config"] = sha256_file(vendor_config_path)
    return digests


def run_provenance(router: HookRouter, scripts: Iterable[str],
                   vendor_config_path: str | None, launches: Iterable = ()) -> Provenance:
    """The result's provenance: plugins with the hooks of this run each implemented or wrapped
    (from the record of the run's router), the launch's scripts and the vendor config with
    their sha256, and the core's launch of each repeat (``LaunchRecord``)."""
    used = router.hooks_by_plugin()
    plugins = [record.model_copy(update={"hooks": used.get(record.name, {})})
               for record in plugin_records(router.harness)]
    script_digests = {}
    for script in scripts:
        path = Path(script)
        script_digests[display_path(path)] = _file_sha(path) if path.is_file() else "missing"
    return Provenance(
        plugins=plugins,
        scripts=script_digests,
        launches=list(launches),
        vendor_config=display_path(Path(vendor_config_path)) if vendor_config_path else None,
        vendor_config_sha256=sha256_file(vendor_config_path) if vendor_config_path else None,
    )
