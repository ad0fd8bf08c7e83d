"""Lazily built plugin manager and registry shared by the commands of one invocation."""

from __future__ import annotations


class AppState:
    def __init__(self, pm=None):
        self._pm = pm
        self._registry = None

    def plugin_manager(self):
        if self._pm is None:
            import warnings

            from harness.plugin_manager import PluginLoadWarning, make_plugin_manager

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", PluginLoadWarning)
                self._pm = make_plugin_manager()
            import typer

            for warning in caught:
                if issubclass(warning.category, PluginLoadWarning):
                    typer.echo(f"warning: {warning.message}", err=True)
        return self._pm

    def registry(self):
        if self._registry is None:
            import warnings

            import typer

            from harness.registry import DuplicateRegistrationWarning, Registry

            pm = self.plugin_manager()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", DuplicateRegistrationWarning)
                self._registry = Registry.from_plugins(pm)
            for warning in caught:
                if issubclass(warning.category, DuplicateRegistrationWarning):
                    typer.echo(f"warning: {warning.message}", err=True)
        return self._registry

    def router(self):
        """Owner-scoped hook calls over this invocation's plugins and registry."""
        from harness.dispatch import HookRouter

        return HookRouter(self.plugin_manager(), self.registry())
