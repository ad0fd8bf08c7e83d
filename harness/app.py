"""The ``Harness``: one process's loaded plugins, what they registered, and hook routing.

Every command and library entry point that plans, runs or records something takes one
``Harness`` (``plan(harness, request)``, ``execute(harness, context, request)``,
``plan_sweep(harness, ...)``, ``run_certification(harness, ...)``). It holds:

- ``pm``: the pluggy plugin manager (hook specs from :mod:`harness.hookspecs`), for the hooks
  every plugin answers (``register_commands``, ``certify_suites``);
- ``plugins``: plugin name -> :class:`~harness.plugin_manager.PluginInfo` (version,
  distribution, source, hooks), in load order;
- ``registry``: the cases, frameworks, vendors and log formats the plugins registered, each
  with the plugin that owns it (collected once, on first use);
- ``router()``: owner-scoped calls of the workflow hooks (:class:`~harness.dispatch.HookRouter`)
  that record which plugins took part, which is what a result's provenance lists.

Tests build one with their own plugins: ``Harness.load(load_entrypoints=False, extra=(plugin,))``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.plugin_manager import DEFAULT_PLUGINS, PluginInfo, load_plugins

if TYPE_CHECKING:
    import pluggy

    from harness.dispatch import HookRouter
    from harness.models.context import RunContext
    from harness.registry import Registry


class Harness:
    """Plugin manager, plugin facts, registry and hook routing of one process."""

    def __init__(self, pm: pluggy.PluginManager, plugins: dict[str, PluginInfo]) -> None:
        self.pm = pm
        self.plugins = plugins
        self._registry: Registry | None = None

    @classmethod
    def load(
        cls,
        *,
        builtins: tuple[str, ...] = DEFAULT_PLUGINS,
        load_entrypoints: bool = True,
        blocked: set[str] | None = None,
        extra: tuple[object, ...] = (),
    ) -> Harness:
        """Load the built-in plugins, the entry-point plugins (unless ``load_entrypoints`` is
        False) and ``extra`` plugin objects, leaving out ``blocked`` (default: the names in
        HARNESS_BLOCK_PLUGINS). See :func:`harness.plugin_manager.load_plugins`."""
        pm, plugins = load_plugins(builtins=builtins, load_entrypoints=load_entrypoints,
                                   blocked=blocked, extra=extra)
        return cls(pm, plugins)

    @property
    def registry(self) -> Registry:
        """What the plugins registered, collected on first use (a name registered twice warns
        with a DuplicateRegistrationWarning then)."""
        if self._registry is None:
            from harness.registry import Registry

            self._registry = Registry.from_plugins(self.pm, self.plugins)
        return self._registry

    @property
    def hook(self) -> pluggy.HookRelay:
        """Every plugin's implementations of a hook (``harness.hook.register_commands(cli=app)``),
        for the hooks that are not about one framework, vendor or case; the workflow hooks go
        through :meth:`router`."""
        return self.pm.hook

    def router(self, context: RunContext | None = None) -> HookRouter:
        """A new owner-scoped hook caller. Its record of the plugins that took part starts
        with the hooks that planned ``context`` (device discovery, the vendor config, the
        memory plan), so that the run's provenance covers its planning too."""
        from harness.dispatch import HookRouter

        return HookRouter(self, planned=context)

    def is_builtin(self, plugin_name: str) -> bool:
        """Whether ``plugin_name`` is one of the built-in plugins (shipped with harness)."""
        info = self.plugins.get(plugin_name)
        return info is not None and info.source == "builtin"
