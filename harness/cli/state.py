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
            from harness.registry import Registry

            self._registry = Registry.from_plugins(self.plugin_manager())
        return self._registry
