"""Loading plugins into a pluggy manager: built-ins, entry-point plugins, blocked plugins.

Callers use :meth:`harness.app.Harness.load`, which wraps :func:`load_plugins`.
"""

from __future__ import annotations

import importlib
import os
import warnings
from dataclasses import dataclass, field

import pluggy

from harness import hookspecs
from harness.errors import HarnessError, UserInputError

#: Built-in plugins, registered exactly like third-party ones.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "harness.builtin.core_plugin",
    "harness.builtin.log_formats_plugin",
    "harness_cases.plugin",
    "harness_pytorch.plugin",
    "harness_pytorch.log_formats_plugin",
    "harness_paddle.log_formats_plugin",
    "harness_mxnet.log_formats_plugin",
    "harness_paddle.plugin",
    "harness_mxnet.plugin",
    "harness_megatron.plugin",
    "harness_cpu.plugin",
    "harness_nvidia.plugin",
)

#: The built-ins the core cannot work without: its own fallback hook implementations and
#: the case catalog. They cannot be blocked, and one that fails to import is an error. The
#: core's tests load these alone, with fixture plugins for a framework and a vendor.
CORE_PLUGINS: tuple[str, ...] = (
    "harness.builtin.core_plugin",
    "harness.builtin.log_formats_plugin",
    "harness_cases.plugin",
)
ESSENTIAL_PLUGINS: frozenset[str] = frozenset(CORE_PLUGINS)

ENTRY_POINT_GROUP = "harness"
#: Comma-separated plugin names (module names or entry-point names) that must not load.
BLOCK_ENV_VAR = "HARNESS_BLOCK_PLUGINS"


class EssentialPluginError(HarnessError):
    """An essential built-in plugin (:data:`ESSENTIAL_PLUGINS`) failed to import: the
    installation is broken. Exit code 1."""


class PluginLoadWarning(UserWarning):
    """A plugin (third-party, or a built-in that failed to import) failed to load; the
    harness carries on without it."""


#: The distribution the built-in plugins ship in (pyproject.toml's project name).
BUILTIN_DISTRIBUTION = "harness-bench"


@dataclass
class PluginInfo:
    name: str
    version: str
    source: str  # "builtin", "entrypoint:<distribution>" or "extra" (passed in by a caller)
    hooks: list[str] = field(default_factory=list)
    distribution: str = BUILTIN_DISTRIBUTION


def blocked_plugins() -> set[str]:
    raw = os.environ.get(BLOCK_ENV_VAR, "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def load_plugins(
    *,
    builtins: tuple[str, ...] = DEFAULT_PLUGINS,
    load_entrypoints: bool = True,
    blocked: set[str] | None = None,
    extra: tuple[object, ...] = (),
) -> tuple[pluggy.PluginManager, dict[str, PluginInfo]]:
    """A plugin manager with the harness hooks and its plugins loaded, and what is known of
    each loaded plugin (name -> PluginInfo, in load order).

    Tests pass their own ``builtins``/``extra`` plugins; nothing here is global state. An
    essential built-in named in ``blocked`` is refused (UserInputError), and one that fails to
    import raises EssentialPluginError; any other plugin that fails to load is skipped with a
    PluginLoadWarning.
    """
    blocked = blocked_plugins() if blocked is None else blocked
    refused = sorted(blocked & ESSENTIAL_PLUGINS)
    if refused:
        raise UserInputError(
            f"{BLOCK_ENV_VAR} names {', '.join(refused)}: the core's own plugins cannot be "
            f"blocked (blockable: any plugin except {', '.join(sorted(ESSENTIAL_PLUGINS))})")
    pm = pluggy.PluginManager("harness")
    pm.add_hookspecs(hookspecs)
    infos: dict[str, PluginInfo] = {}
    from harness import __version__

    for module_name in builtins:
        if module_name in blocked:
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            if module_name in ESSENTIAL_PLUGINS:
                raise EssentialPluginError(
                    f"built-in plugin {module_name!r} failed to import ({type(exc).__name__}: "
                    f"{exc}); the installation is broken, reinstall harness-bench") from exc
            # another built-in is skipped like a broken entry point (e.g. a dependency of one
            # vendor's plugin missing) instead of taking every command down
            warnings.warn(
                f"built-in plugin {module_name!r} failed to import and was skipped: "
                f"{type(exc).__name__}: {exc} (HARNESS_BLOCK_PLUGINS={module_name} silences this)",
                PluginLoadWarning,
                stacklevel=2,
            )
            continue
        pm.register(module, name=module_name)
        infos[module_name] = PluginInfo(module_name, __version__, "builtin")
    if load_entrypoints:
        _load_entrypoint_plugins(pm, infos, blocked)
    for plugin in extra:
        name = pm.register(plugin)
        infos[name] = PluginInfo(name, "-", "extra", distribution="(passed in)")
    pm.check_pending()
    for name, info in infos.items():
        plugin = pm.get_plugin(name)
        info.hooks = sorted(hc.name for hc in pm.get_hookcallers(plugin) or [])
    return pm, infos


def _load_entrypoint_plugins(pm: pluggy.PluginManager, infos: dict[str, PluginInfo],
                             blocked: set[str]) -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in blocked or ep.value in blocked or pm.get_plugin(ep.name) is not None:
            continue
        dist = getattr(ep, "dist", None)
        dist_name = dist.name if dist else "?"
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:  # one broken plugin must not take the tool down
            warnings.warn(
                f"plugin {ep.name!r} from {dist_name} failed to load and was skipped: "
                f"{type(exc).__name__}: {exc}",
                PluginLoadWarning,
                stacklevel=2,
            )
            continue
        infos[ep.name] = PluginInfo(
            ep.name, dist.version if dist else "?", f"entrypoint:{dist_name}",
            distribution=dist_name,
        )
