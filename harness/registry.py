"""Collects what plugins register (cases, frameworks, vendors, log formats)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Generic, TypeVar

from harness.errors import UserInputError, did_you_mean

if TYPE_CHECKING:
    import pluggy

    from harness.logformat import LogFormat
    from harness.models import CaseSpec, FrameworkSpec, VendorSpec

T = TypeVar("T")


@dataclass
class Catalog(Generic[T]):
    """Named items of one kind, remembering which plugin registered each."""

    kind: str
    items: dict[str, T] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)

    def add(self, item: T, owner: str) -> None:
        name = item.name  # type: ignore[attr-defined]
        if name in self.items:
            raise ValueError(
                f"{self.kind} {name!r} registered twice: by {self.owners[name]} and by {owner}"
            )
        self.items[name] = item
        self.owners[name] = owner

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

    @classmethod
    def from_plugins(cls, pm: pluggy.PluginManager) -> Registry:
        registry = cls(Catalog("case"), Catalog("framework"), Catalog("vendor"), Catalog("log format"))
        _collect(pm, "register_cases", registry.cases)
        _collect(pm, "register_frameworks", registry.frameworks)
        _collect(pm, "register_vendors", registry.vendors)
        _collect(pm, "register_log_formats", registry.log_formats)
        return registry

    def frameworks_for(self, case: CaseSpec) -> list[str]:
        return sorted(n for n, fw in self.frameworks.items.items() if case.model in fw.models)

    def check_case_framework(self, case: CaseSpec, framework: str) -> None:
        self.frameworks.get(framework)
        implementing = self.frameworks_for(case)
        if framework not in implementing:
            choices = ", ".join(implementing) or "none"
            raise UserInputError(
                f"framework {framework!r} does not implement case {case.name!r} "
                f"(model {case.model!r}). Frameworks that do: {choices}."
            )


def _collect(pm: pluggy.PluginManager, hook_name: str, catalog: Catalog) -> None:
    # Each plugin's implementation is called with its own register() so that duplicate
    # names can be reported with the names of both plugins.
    hook = getattr(pm.hook, hook_name)
    for impl in hook.get_hookimpls():
        owner = impl.plugin_name

        def register(item, _owner: str = owner) -> None:
            catalog.add(item, _owner)

        impl.function(register=register)
