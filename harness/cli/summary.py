"""The summary table printed after a run."""

from __future__ import annotations

from harness.cli.console import make_console
from harness.report.noise import DEFAULT_NOISE_THRESHOLD, noisy, repeat_cv
from harness.result_builder import modified_origins
from rich.markup import escape
from rich.table import Table


def _mb(value: int | None) -> str:
    return f"{value / 2**20:,.1f} MiB" if value else "-"


def health_text(health) -> str:
    """The health verdict for the summary: unhealthy runs in red with every failed rule; a
    healthy run names the rules it passed and those not judged (e.g. below uniform at the very
    start of a warm-up: ``harness results show`` has the why)."""
    if health.status == "unhealthy":
        return "[red]unhealthy[/red]: " + escape("; ".join(health.reasons))
    if health.status == "unjudged":
        return "unjudged (no loss logged)"
    judged = [c.name.replace("_", " ") for c in health.checks if c.passed]
    unjudged = [c.name.replace("_", " ") for c in health.checks if c.passed is None]
    return f"healthy ({', '.join(judged)}{'; not judged: ' + ', '.join(unjudged) if unjudged else ''})"


def print_summary(report, console=None, registry=None) -> None:
    """The run's summary table; with the ``registry`` a smoke-scale run says what model ran."""
    console = console or make_console()
    r = report.result
    table = Table(title=f"harness run {r.run_id}", show_header=False, title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    # Long values (run folder paths, failure reasons) wrap inside the box instead of being cut.
    table.add_column("value", overflow="fold")
    status = r.status if r.status == "success" else f"[red]{r.status}[/red]"
    table.add_row("status", status)
    if r.failure_reason:
        table.add_row("reason", escape(r.failure_reason))
    if r.modified:
        where = "; ".join(f"[yellow]{', '.join(keys)}[/yellow] set {escape(origin)}"
                          for keys, origin in modified_origins(r))
        table.add_row("modified", f"{where}: not measured over the case's own window")
    outside = [f"{p.name} ({p.distribution} {p.version}: {', '.join(f'{h} {role}' for h, role in p.hooks.items())})"
               for p in (r.provenance.plugins if r.provenance else []) if p.hooks and not p.builtin]
    if outside:
        table.add_row("third-party plugins", "; ".join(outside))
    table.add_row("case", f"{r.case} ({_scale_text(r, registry)})")
    table.add_row("framework", f"{r.framework} {r.framework_version or ''}")
    devices = r.devices.devices[0].name if r.devices and r.devices.devices else "-"
    table.add_row("vendor", f"{r.vendor}: {devices}")
    table.add_row("layout", f"{r.run_mode}, {r.nnodes} node(s) x {r.nproc} process(es)")
    table.add_row("precision / batch", f"{r.precision}, micro {r.micro_batch_size}, global {r.global_batch_size}")
    table.add_row("steps", f"{r.steps_completed}/{r.max_steps} (first {r.skip_steps} skipped)")
    if r.throughput:
        t = r.throughput
        table.add_row("FINAL_RESULT", f"[bold]{t.value:,.2f} {t.unit}[/bold] ({t.per_device:,.2f} per device; "
                                      "mean of per-step rates after warm-up)")
        if t.total_work is not None:
            table.add_row("total work", f"{t.total_work:,.2f} {t.unit} (units of the measured steps / "
                                        "their wall time)")
        if t.median:
            table.add_row("median step throughput", f"{t.median:,.2f} {t.unit}")
    if r.step_time:
        s = r.step_time
        table.add_row("step time", f"median {s.median * 1000:,.1f} ms, p5 {s.p5 * 1000:,.1f}, "
                                   f"p95 {s.p95 * 1000:,.1f}, CV {s.cv:.1%}{_noisy_flag(s.cv)}")
    if len(r.repeats) > 1:
        finals = ", ".join(f"{x.final_result:,.1f}" for x in r.repeats if x.final_result)
        cv = repeat_cv(r)
        spread = f" (CV {cv:.1%}{_noisy_flag(cv)})" if cv is not None else ""
        table.add_row("repeats", finals + spread)
    if r.loss_first is not None:
        table.add_row("loss", f"{r.loss_first:.4f} -> {r.loss_final:.4f}")
    if r.health is not None:
        table.add_row("health", health_text(r.health))
    table.add_row("peak memory", _mb(r.peak_memory_bytes))
    e = r.efficiency
    if e and e.mfu is not None:
        table.add_row("MFU", f"[bold]{e.mfu:.1%}[/bold] ({e.achieved_flops_per_device / 1e12:,.1f} of "
                             f"{e.peak_flops_per_device / 1e12:,.1f} TFLOP/s per device, {e.flops_formula})")
    if e and e.energy_per_unit_j is not None:
        unit = r.throughput.unit.split("/")[0] if r.throughput else "unit"
        table.add_row("energy", f"{e.energy_per_unit_j:.4g} J per {unit.rstrip('s')} "
                                f"({e.busy_power_w:,.0f} W while busy)")
    training_util = (r.device_metrics or {}).get("training_utilization_pct")
    if training_util and all(isinstance(u, (int, float)) for u in training_util):
        span = r.device_metrics.get("training_span_s")
        over = ("the measured steps" if r.device_metrics.get("training_span_source") == "measured steps"
                else "first to last busy sample")
        table.add_row("device utilisation", f"{min(training_util):.0f}% lowest of {len(training_util)} while "
                                            f"training ({span:,.0f} s, {over})")
    clocks = _clock_row(r.device_metrics or {})
    if clocks:
        table.add_row("device clocks", clocks)
    table.add_row("config hash", r.config_hash)
    table.add_row("run folder", escape(str(report.run_dir)))
    table.add_row("legacy index", escape(str(report.legacy_path)))
    console.print(table)


def _scale_text(result, registry) -> str:
    """``full scale``, or what smoke scale made of the case's model: its identifying values
    (the case's own in brackets) and the other cases that become the same model."""
    scale = result.config.scale
    if scale != "smoke" or registry is None or result.case not in registry.cases:
        return f"{scale} scale"
    shrunk, alike = registry.smoke_model(registry.cases.get(result.case))
    if not shrunk:
        return f"{scale} scale"
    values = ", ".join(f"{key} {smoke} (case: {own})" for key, (smoke, own) in shrunk.items())
    text = f"smoke scale: {values}"
    if alike:
        text += f"; the same model as {', '.join(alike)} at smoke scale"
    return escape(text)


def _noisy_flag(cv: float | None) -> str:
    """`` (noisy)`` after a CV above the noise threshold, which the flag names."""
    if not noisy(cv):
        return ""
    return f" [yellow](noisy: above {DEFAULT_NOISE_THRESHOLD:.0%})[/yellow]"


def _numbers(values) -> list[float]:
    return [v for v in values or [] if isinstance(v, (int, float))]


def _clock_row(metrics: dict) -> str | None:
    """The slowest GPU's mean SM clock over the training span (a vendor monitor's
    ``training_sm_clock_mhz``), its maximum, and the largest share of samples in which the power
    cap or a thermal or hardware slowdown held a GPU's clocks down; None without clock readings."""
    clocks = _numbers(metrics.get("training_sm_clock_mhz"))
    if not clocks:
        return None
    text = f"SM {min(clocks):,.0f} MHz mean while training"
    if len(clocks) > 1:
        text += f", lowest of {len(clocks)}"
    peak = _numbers(metrics.get("max_sm_clock_mhz"))
    if peak:
        text += f" (max {max(peak):,.0f})"
    limits = [f"{name} {max(share):.0f}% of samples" for name, share in (
        ("power cap", _numbers(metrics.get("training_power_capped_pct"))),
        ("thermal or hardware slowdown", _numbers(metrics.get("training_thermal_limited_pct")))) if share]
    return text + ("; " + ", ".join(limits) if limits else "")
