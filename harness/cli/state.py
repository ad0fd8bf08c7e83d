"""The Harness shared by the commands of one invocation, loaded on first use; plugin load and
duplicate-registration warnings are printed as one-line warnings on stderr."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.registry import Registry


class AppState:
    def __init__(self, harness: Harness | None = None):
        self._harness = harness

    def harness(self) -> Harness:
        if self._harness is None:
            from harness.app import Harness
            from harness.plugin_manager import PluginLoadWarning
            from harness.registry import DuplicateRegistrationWarning

            with _echoed_warnings(PluginLoadWarning):
                harness = Harness.load()
            with _echoed_warnings(DuplicateRegistrationWarning):
                harness.registry  # noqa: B018 - collected now, so that its warnings are shown
            self._harness = harness
        return self._harness

    def registry(self) -> Registry:
        return self.harness().registry


def app_state(ctx) -> AppState:
    """The AppState of the invocation a command runs in (``build_app`` puts it on the root
    click context as ``obj``; every sub-context finds it there)."""
    state = ctx.find_object(AppState)
    if state is None:
        raise RuntimeError("harness commands run inside the app build_app() makes")
    return state


@contextmanager
def _echoed_warnings(category: type[Warning]) -> Iterator[None]:
    """Prints each warning of ``category`` raised inside as ``warning: ...`` on stderr."""
    import warnings

    import typer

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        yield
    for warning in caught:
        if issubclass(warning.category, category):
            typer.echo(f"warning: {warning.message}", err=True)
