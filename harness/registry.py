"""Collects what plugins register (cases, frameworks, vendors, log formats)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Generic, TypeVar

from harness.errors import UnavailableError, UserInputError, did_you_mean

if TYPE_CHECKING:
    import pluggy

    from harness.logformat import LogFormat
    from harness.models import CaseSpec, FrameworkSpec, VendorSpec
    from harness.plugin_manager import PluginInfo

T = TypeVar("T")


class DuplicateRegistrationWarning(UserWarning):
    """A plugin registered a name another plugin already registered; the later one is skipped."""


@dataclass(frozen=True)
class SkippedRegistration:
    """A registration that lost to an earlier plugin's registration of the same name."""

    kind: str
    name: str
    kept_plugin: str
    kept_distribution: str
    skipped_plugin: str
    skipped_distribution: str

    def message(self) -> str:
        return (
            f"{self.kind} {self.name!r} of plugin {self.skipped_plugin} "
            f"({self.skipped_distribution}) was skipped: plugin {self.kept_plugin} "
            f"({self.kept_distribution}) registered it first"
        )


@dataclass
class Catalog(Generic[T]):
    """Named items of one kind, remembering which plugin registered each."""

    kind: str
    items: dict[str, T] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)

    def add(self, item: T, owner: str) -> str | None:
        """Register ``item``; returns the earlier owner when the name is taken (then skipped)."""
        name = item.name  # type: ignore[attr-defined]
        if name in self.items:
            return self.owners[name]
        self.items[name] = item
        self.owners[name] = owner
        return None

    def owner(self, name: str) -> str:
        """The plugin that registered ``name``; an unknown name is a UserInputError."""
        self.get(name)
        return self.owners[name]

    def get(self, name: str) -> T:
        try:
            return self.items[name]
        except KeyError:
            raise UserInputError(
                f"unknown {self.kind} {name!r}. {did_you_mean(name, self.items)}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self.items)

    def __contains__(self, name: str) -> bool:
        return name in self.items


@dataclass
class Registry:
    cases: Catalog[CaseSpec]
    frameworks: Catalog[FrameworkSpec]
    vendors: Catalog[VendorSpec]
    log_formats: Catalog[LogFormat]
    skipped: list[SkippedRegistration] = field(default_factory=list)

    @classmethod
    def from_plugins(cls, pm: pluggy.PluginManager, plugins: dict[str, PluginInfo]) -> Registry:
        """Collect every plugin's registrations: the built-in plugins first, then the others
        in the order they were registered, whatever ``tryfirst``/``trylast`` their
        registration hooks carry (so no hook ordering takes a built-in case's name).

        A name registered twice keeps the first registration; the later one is skipped with a
        ``DuplicateRegistrationWarning`` naming both plugins and their distributions (from
        ``plugins``), and listed in ``skipped``.
        """
        registry = cls(Catalog("case"), Catalog("framework"), Catalog("vendor"), Catalog("log format"))
        for hook_name, catalog in (("register_cases", registry.cases),
                                   ("register_frameworks", registry.frameworks),
                                   ("register_vendors", registry.vendors),
                                   ("register_log_formats", registry.log_formats)):
            registry.skipped += _collect(pm, plugins, hook_name, catalog)
        for skipped in registry.skipped:
            warnings.warn(skipped.message(), DuplicateRegistrationWarning, stacklevel=2)
        return registry

    def frameworks_for(self, case: CaseSpec) -> list[str]:
        """The frameworks that run ``case``: they implement its model and the model-parallel
        layout it asks for."""
        return sorted(n for n, fw in self.frameworks.items.items()
                      if case.model in fw.models and not _missing_layout(case, fw))

    def frameworks_left_out(self, case: CaseSpec) -> dict[str, list[str]]:
        """Frameworks that implement the case's model but not its model-parallel layout: name ->
        the dimensions (tensor, pipeline) they lack."""
        return {name: missing for name, fw in sorted(self.frameworks.items.items())
                if case.model in fw.models and (missing := _missing_layout(case, fw))}

    def smoke_model(self, case: CaseSpec) -> tuple[dict[str, tuple[object, object]], list[str]]:
        """What ``--scale smoke`` does to the case's model: key -> (smoke value, the case's
        own) for the keys that identify the model (its immutable keys the smoke preset
        replaces), and the other cases of its model family that become the very same model at
        smoke scale (equal values of every identifying key)."""
        shrunk = {key: (value, case.params.get(key, case.settings.get(key)))
                  for key, value in case.smoke.items() if key in case.immutable}
        model = _smoke_identity(case)
        alike = sorted(name for name, other in self.cases.items.items()
                       if name != case.name and other.model == case.model
                       and _smoke_identity(other) == model)
        return shrunk, alike

    def layout_gap(self, case: CaseSpec, framework: str) -> str:
        """Why ``framework`` does not run ``case`` although it implements the model."""
        runs = self.frameworks.get(framework).model_parallel
        missing = " or ".join(f"{dimension} parallel {case.model_parallel[dimension]}"
                              for dimension in _missing_layout(case, self.frameworks.get(framework)))
        return (f"case {case.name!r} asks for {missing}; framework {framework!r} runs "
                + (f"{' and '.join(sorted(runs))} parallel besides data parallel" if runs
                   else "data parallel only"))

    def default_framework(self, case: CaseSpec) -> str:
        """The framework a run of ``case`` uses when none is named: PyTorch where it implements
        the case (the reference implementation of every built-in case), else the first by name."""
        implementing = self.frameworks_for(case)
        if not implementing:
            raise UnavailableError(f"no installed framework plugin implements case {case.name!r}")
        return "pytorch" if "pytorch" in implementing else implementing[0]

    def check_case_framework(self, case: CaseSpec, framework: str) -> None:
        self.frameworks.get(framework)
        implementing = self.frameworks_for(case)
        if framework in self.frameworks_left_out(case):
            raise UserInputError(f"{self.layout_gap(case, framework)}. Frameworks that run it: "
                                 f"{', '.join(implementing) or 'none'}.")
        if framework not in implementing:
            choices = ", ".join(implementing) or "none"
            raise UserInputError(
                f"framework {framework!r} does not implement case {case.name!r} "
                f"(model {case.model!r}). Frameworks that do: {choices}."
            )


def _collect(pm: pluggy.PluginManager, plugins: dict[str, PluginInfo], hook_name: str,
             catalog: Catalog) -> list[SkippedRegistration]:
    # Each plugin's implementation is called with its own register() so that every item is
    # owned by the plugin that registered it, and duplicates name both plugins.
    skipped: list[SkippedRegistration] = []
    hook = getattr(pm.hook, hook_name)
    for impl in sorted(hook.get_hookimpls(), key=lambda impl: registration_rank(pm, plugins, impl.plugin_name)):
        owner = impl.plugin_name

        def register(item, _owner: str = owner) -> None:
            earlier = catalog.add(item, _owner)
            if earlier is not None:
                skipped.append(SkippedRegistration(
                    kind=catalog.kind, name=item.name,
                    kept_plugin=earlier, kept_distribution=distribution_of(plugins, earlier),
                    skipped_plugin=_owner, skipped_distribution=distribution_of(plugins, _owner),
                ))

        impl.function(register=register)
    return skipped


def registration_rank(pm: pluggy.PluginManager, plugins: dict[str, PluginInfo],
                      plugin_name: str) -> tuple[bool, int]:
    """Built-in plugins before all others, each group in the order it was registered."""
    order = [name for name, _ in pm.list_name_plugin()]
    info = plugins.get(plugin_name)
    builtin = info is not None and info.source == "builtin"
    return (not builtin, order.index(plugin_name) if plugin_name in order else len(order))


def distribution_of(plugins: dict[str, PluginInfo], plugin_name: str) -> str:
    """The distribution (pip package) a plugin comes from, as its loading recorded it."""
    info = plugins.get(plugin_name)
    return info.distribution if info is not None else "unknown distribution"


def _missing_layout(case: CaseSpec, framework) -> list[str]:
    """The model-parallel dimensions ``case`` asks for that ``framework`` does not implement."""
    return [dimension for dimension in case.model_parallel if dimension not in framework.model_parallel]


def _smoke_identity(case: CaseSpec) -> dict[str, object]:
    """The values of the keys that identify the case's model, at smoke scale."""
    return {key: case.smoke.get(key, case.params.get(key, case.settings.get(key)))
            for key in sorted(case.immutable)}
