"""Owner-scoped hook calls: each workflow hook reaches only the plugins it is about.

The registry remembers which plugin registered each framework, vendor and case. The core calls
a framework's hooks (``prepare_env``, ``run``, ``parse_log``, ``unsupported_reason``,
``model_flops``, ``memory_plan``) only on the plugin that registered that framework, a vendor's hooks
(``discover_devices``, ``vendor_case_config``, ``device_peak_flops``, the wrappers of ``run``
and ``execute``, ``unsupported_reason``) only on the plugin that registered that vendor,
``prepare_data`` on the plugins that registered the case and the other cases of its dataset
kind, and ``model_flops`` on the plugin that registered the case (and the built-in plugins
that own its model family). The core's own fallbacks (``harness.builtin.*``) are
always called. So a plugin needs no ``if context.framework != ...: return None`` guard, and
a plugin cannot answer for a framework, vendor or case it did not register.

Pluggy's ``subset_hook_caller`` does the routing: it calls the same hook implementations with
the same ordering rules (``tryfirst``/``trylast``, wrappers), minus the plugins left out.

The router remembers, for each hook it routed, which plugins' implementations it kept and
whether each answers or wraps the hook (:meth:`HookRouter.hooks_by_plugin`): a result's
provenance names the plugins that took part in its run. A run's router starts from the record
of the router that planned it (:meth:`HookRouter.carry_plan`), so nothing is noted twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from harness.errors import UnavailableError

if TYPE_CHECKING:
    from harness.app import Harness

    from harness.models import (
        CaseSpec,
        DatasetInfo,
        DeviceSet,
        ExecutionEnv,
        FlopsEstimate,
        LaunchSpec,
        MatmulRate,
        ParsedLog,
        ProcessOutcome,
    )
    from harness.models.context import RunContext
    from harness.models.memory import MemoryPlan
    from harness.models.vendor_config import VendorCaseConfig
    from harness.registry import Registry

#: Plugins whose module names start with this are the core's own (fallback implementations).
CORE_PLUGIN_PREFIX = "harness.builtin."


def is_core_plugin(name: str) -> bool:
    return name.startswith(CORE_PLUGIN_PREFIX)


class HookRouter:
    """Calls the workflow hooks of ``harness.pm`` on the owners ``harness.registry`` recorded.

    Built by :meth:`harness.app.Harness.router`; ``planned`` is a context that
    :meth:`carry_plan` stamped, whose planning record this router continues.
    """

    def __init__(self, harness: Harness, planned: RunContext | None = None) -> None:
        self.harness = harness
        self.pm = harness.pm
        self.registry: Registry = harness.registry
        # hook name -> plugin name -> "implemented" | "wrapped", for every routed call
        self._routed: dict[str, dict[str, str]] = {}
        if planned is not None:
            for hook_name, plugins in planned._planning_hooks.items():
                self._routed[hook_name] = dict(plugins)

    def carry_plan(self, context: RunContext) -> RunContext:
        """``context`` stamped with this router's record so far (the hooks that planned it),
        which the router of its run (``harness.router(context)``) starts from."""
        context._planning_hooks = {hook: dict(plugins) for hook, plugins in self._routed.items()}
        return context

    # ----------------------------------------------------------------- owners

    def framework_owner(self, framework: str) -> str:
        return self.registry.frameworks.owner(framework)

    def vendor_owner(self, vendor: str) -> str:
        return self.registry.vendors.owner(vendor)

    def case_owners(self, case: CaseSpec, shared: str) -> set[str]:
        """The plugin that registered ``case`` and those that registered cases sharing its
        ``shared`` attribute (``dataset`` or ``model``): a plugin that adds a GPT case reuses
        the GPT dataset and FLOPs formula of the plugin that owns the GPT cases."""
        cases = self.registry.cases
        owners = {cases.owners[name] for name, other in cases.items.items()
                  if getattr(other, shared) == getattr(case, shared)}
        if case.name in cases.owners:
            owners.add(cases.owners[case.name])
        return owners

    def _caller(self, hook_name: str, owners: Iterable[str]):
        keep = set(owners)
        self.note(hook_name, keep)
        remove = [plugin for name, plugin in self.pm.list_name_plugin()
                  if name not in keep and not is_core_plugin(name)]
        return self.pm.subset_hook_caller(hook_name, remove)

    def note(self, hook_name: str, owners: Iterable[str]) -> None:
        """Record the implementations of ``hook_name`` that a call routed to ``owners`` reaches."""
        keep = set(owners)
        routed = self._routed.setdefault(hook_name, {})
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            if impl.plugin_name in keep:
                wraps = impl.hookwrapper or getattr(impl, "wrapper", False)
                routed[impl.plugin_name] = "wrapped" if wraps else "implemented"

    def hooks_by_plugin(self) -> dict[str, dict[str, str]]:
        """plugin name -> {hook name: "implemented" | "wrapped"} over the calls routed so far."""
        by_plugin: dict[str, dict[str, str]] = {}
        for hook_name, plugins in sorted(self._routed.items()):
            for plugin, role in plugins.items():
                by_plugin.setdefault(plugin, {})[hook_name] = role
        return by_plugin

    # ----------------------------------------------------------------- vendor hooks

    def discover_devices(self, vendor: str) -> DeviceSet:
        devices = self._caller("discover_devices", {self.vendor_owner(vendor)})(vendor=vendor)
        if devices is None:
            raise UnavailableError(
                f"vendor {vendor!r} (plugin {self.vendor_owner(vendor)}) discovered no devices"
            )
        return devices

    def vendor_case_config(self, vendor: str, case: CaseSpec, framework: str, nproc: int,
                           nnodes: int, hardware_config: str | None) -> VendorCaseConfig | None:
        return self._caller("vendor_case_config", {self.vendor_owner(vendor)})(
            vendor=vendor, case=case, framework=framework, nproc=nproc, nnodes=nnodes,
            hardware_config=hardware_config,
        )

    def device_peak_flops(self, devices: DeviceSet, precision: str) -> float | None:
        if devices.vendor not in self.registry.vendors:
            return None
        return self._caller("device_peak_flops", {self.vendor_owner(devices.vendor)})(
            devices=devices, precision=precision
        )

    # ----------------------------------------------------------------- workflow hooks

    def prepare_env(self, context: RunContext) -> ExecutionEnv:
        from harness.envs.prepare import check_framework_requirement

        env = self._caller("prepare_env", {self.framework_owner(context.framework)})(
            context=context
        )
        check_framework_requirement(context, env)
        return env

    def prepare_data(self, context: RunContext) -> DatasetInfo:
        dataset = self._caller("prepare_data", self.case_owners(context.case, "dataset"))(context=context)
        if dataset is None:
            raise UnavailableError(
                f"no plugin prepares datasets of kind {context.case.dataset!r}"
            )
        return dataset

    def run(self, context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec:
        owners = {self.framework_owner(context.framework), self.vendor_owner(context.vendor)}
        launch = self._caller("run", owners)(context=context, env=env, dataset=dataset)
        if launch is None:
            raise UnavailableError(f"framework {context.framework!r} produced no launch")
        return launch

    def matmul_probe(self, context: RunContext, env: ExecutionEnv) -> MatmulRate | None:
        return self._caller("matmul_probe", {self.framework_owner(context.framework)})(
            context=context, env=env)

    def framework_launch(self, context: RunContext, env: ExecutionEnv,
                         dataset: DatasetInfo) -> LaunchSpec | None:
        """The launch as the framework's plugin alone makes it, before any vendor's wrapper:
        what the core holds a vendor's changes to for a built-in framework's script."""
        return self._caller("run", {self.framework_owner(context.framework)})(
            context=context, env=env, dataset=dataset)

    def execute(self, context: RunContext, launch: LaunchSpec, log_path: Path,
                observer: Any) -> ProcessOutcome:
        return self._caller("execute", {self.vendor_owner(context.vendor)})(
            context=context, launch=launch, log_path=log_path, observer=observer
        )

    def parse_log(self, context: RunContext, log_path: Path) -> ParsedLog | None:
        return self._caller("parse_log", {self.framework_owner(context.framework)})(
            context=context, log_path=log_path
        )

    def model_flops(self, context: RunContext) -> FlopsEstimate | None:
        """Only the plugin that registered the case answers, and the built-in plugins that own
        cases of its model family (a third-party GPT case reuses the GPT formula): another
        plugin's case of the family cannot answer for a case it did not register, nor can a
        framework plugin."""
        owner = self.registry.cases.owners.get(context.case.name)
        family = {name for name in self.case_owners(context.case, "model")
                  if self.harness.is_builtin(name) or is_core_plugin(name)}
        return self._caller("model_flops", {*family, *([owner] if owner else [])})(context=context)

    def unsupported_reasons(self, context: RunContext) -> list[str]:
        owners = {self.framework_owner(context.framework), self.vendor_owner(context.vendor)}
        return [r for r in self._caller("unsupported_reason", owners)(context=context) if r]

    def memory_plan(self, context: RunContext, device_memory_bytes: int) -> MemoryPlan | None:
        return self._caller("memory_plan", {self.framework_owner(context.framework)})(
            context=context, device_memory_bytes=device_memory_bytes
        )
