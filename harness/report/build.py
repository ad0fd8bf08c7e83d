"""Turn recorded runs into the report document: seed-style tables, charts, noise, environment."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable

from harness import __version__
from harness.models import StepRecord
from harness.report.data import PRECISION_ORDER, ReportFilter, ReportRun
from harness.report.document import Cell, Chart, Document, Paragraph, Section, Table
from harness.report.noise import (
    DEFAULT_NOISE_THRESHOLD, SUPERLINEAR_EFFICIENCY, is_noisy, is_superlinear, repeat_cv,
    repeat_values, run_noise,
)
from harness.report.svg import HLine, Series, Shade, line_chart
from harness.health import unhealthy_note
from harness.result_builder import modified_origins

StepReader = Callable[[ReportRun], "list[StepRecord] | None"]
MIB = 1024 * 1024


@dataclass
class ReportOptions:
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD
    max_step_charts: int = 24
    title: str = "harness benchmark report"
    history: bool = False  # add the history section: throughput over time, regressions


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def column_label(precision: str, batch_size: int) -> str:
    """The seeds' column heading, e.g. ``FP32(BS=32)``."""
    return f"{precision.upper()}(BS={batch_size})"


def fmt_value(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value < 1000 else f"{value:,.1f}"


def fmt_mib(num_bytes: int | None) -> str:
    return f"{num_bytes / MIB:,.0f}" if num_bytes else "-"


def devices_word(runs: Iterable[ReportRun]) -> str:
    kinds = {r.result.devices.kind for r in runs if r.result.devices}
    return "GPUs" if kinds == {"gpu"} else ("devices" if kinds - {"cpu"} else "processes")


def count_of(n: int, word: str) -> str:
    """``1 process``, ``2 processes``, ``1 GPU``, ``8 GPUs``."""
    if n != 1:
        return f"{n} {word}"
    return f"1 {word[:-2] if word.endswith('sses') else word[:-1]}"


def scaling_efficiency(points: dict[int, float]) -> dict[int, float]:
    """Throughput at n devices over linear scaling from the smallest count measured:
    ``T(n) / (T(n0) * n / n0)``."""
    if not points:
        return {}
    base = min(points)
    return {n: value / (points[base] * n / base) for n, value in points.items()}


def unhealthy(result) -> bool:
    """Whether the run's training failed the health check (``harness/health.py``)."""
    return result.health is not None and result.health.failed


def _value_cell(run: ReportRun | None, threshold: float) -> Cell:
    if run is None:
        return Cell("", numeric=True)
    if not run.ok:
        return Cell(run.result.status, numeric=True, badge="failed",
                    title=run.result.failure_reason or run.result.status)
    noise = run_noise(run.result)
    values = repeat_values(run.result)
    detail = f"run {run.result.run_id}; {noise.describe()}"
    if len(values) > 1:
        detail += f"; median of {len(values)} repeats, min {min(values):,.2f}, max {max(values):,.2f}"
    total = run.result.throughput.total_work if run.result.throughput else None
    if total is not None:
        detail += f"; total work {fmt_value(total)} {run.unit} (units / measured wall time)"
    badge = "noisy" if is_noisy(run.result, threshold) else None
    if run.result.modified:  # measured over a window someone chose, not the case's
        badge = "modified"
        detail += "; modified: " + "; ".join(f"{', '.join(keys)} set {origin}"
                                             for keys, origin in modified_origins(run.result))
    if unhealthy(run.result):  # the figure of a training that diverged
        badge = "unhealthy"
        detail += "; " + unhealthy_note(run.result.health)
    return Cell(fmt_value(run.value), numeric=True, badge=badge, title=detail)


class ReportBuilder:
    def __init__(self, runs: list[ReportRun], filters: ReportFilter | None = None,
                 options: ReportOptions | None = None, step_reader: StepReader | None = None,
                 now: datetime | None = None, history: list[ReportRun] | None = None,
                 sample_reader=None):
        self.runs = runs
        self.history = history
        self.filters = filters or ReportFilter()
        self.options = options or ReportOptions()
        self.step_reader = step_reader
        self.sample_reader = sample_reader  # per-step samples for "beyond noise" (history)
        self.now = now or datetime.now(timezone.utc)

    # ------------------------------------------------------------------ document
    def build(self) -> Document:
        doc = Document(
            title=self.options.title,
            subtitle=(f"{len(self.runs)} runs ({self.filters.describe()}), generated "
                      f"{self.now.strftime('%Y-%m-%d %H:%M UTC')} by harness {__version__}"),
        )
        doc.sections.append(self._summary())
        plain = [r for r in self.runs if not r.in_layout_sweep]
        for key, runs in self._groups(plain).items():
            doc.sections.append(self._case_section(key, runs))
        layout_runs = [r for r in self.runs if r.in_layout_sweep]
        if layout_runs:
            doc.sections.append(self._layout_section(layout_runs))
        doc.sections.append(self._steps_section())
        if self.history is not None:
            from harness.report.history import history_section

            doc.sections.append(history_section(self.history, self.options.max_step_charts,
                                                self.sample_reader))
        doc.sections.append(self._noise_section())
        failed = [r for r in self.runs if not r.ok]
        if failed:
            doc.sections.append(self._failures_section(failed))
        doc.sections.append(self._environment_section())
        return doc

    @staticmethod
    def _groups(runs: list[ReportRun]) -> dict[tuple, list[ReportRun]]:
        groups: dict[tuple, list[ReportRun]] = defaultdict(list)
        for run in runs:
            r = run.result
            groups[(r.case, r.framework, r.vendor, r.config.scale)].append(run)
        return dict(groups)

    # ------------------------------------------------------------------ summary
    def _summary(self) -> Section:
        ok = [r for r in self.runs if r.ok]
        noisy = [r for r in ok if is_noisy(r.result, self.options.noise_threshold)]
        cases = sorted({r.result.case for r in self.runs})
        frameworks = sorted({r.result.framework for r in self.runs})
        vendors = sorted({r.result.vendor for r in self.runs})
        text = (f"{len(self.runs)} configurations: {len(ok)} succeeded, "
                f"{len(self.runs) - len(ok)} did not. Cases: {', '.join(cases) or '-'}; frameworks: "
                f"{', '.join(frameworks) or '-'}; vendors: {', '.join(vendors) or '-'}. "
                f"Values are FINAL_RESULT: the mean of the per-step throughputs after the skipped "
                f"warm-up steps (the seeds' convention), the median over repeats where a run was "
                f"repeated. Beside it, total work is the units (tokens, samples) of the measured "
                f"steps over their wall time; it is lower than FINAL_RESULT when step times vary. "
                f"Runs whose repeats vary by more than {self.options.noise_threshold:.0%} "
                f"(coefficient of variation), or whose single repeat's step times do, are marked "
                f"noisy ({len(noisy)} here); scaling efficiency above "
                f"{SUPERLINEAR_EFFICIENCY:.0%} is marked suspicious.")
        blocks = [Paragraph(text)]
        damaged = [r for r in self.runs if r.damage]
        if damaged:
            blocks.append(Paragraph(
                f"{len(damaged)} recorded runs have a damaged run folder, so their logs and "
                f"per-step charts are missing here (a sweep run again resumes them): "
                + "; ".join(f"{r.result.run_id}: {r.damage}" for r in damaged) + "."))
        if not self.runs:
            blocks.append(Paragraph("No recorded runs match; run `harness run` or `harness sweep` first."))
        return Section("summary", "Summary", blocks)

    # ------------------------------------------------------------------ per case
    def _case_section(self, key: tuple, runs: list[ReportRun]) -> Section:
        case, framework, vendor, scale = key
        version = next((r.result.framework_version for r in runs if r.result.framework_version), None)
        title = f"{case}: {framework}{' ' + version if version else ''} on {vendor}"
        if scale != "full":
            title += f" ({scale} scale)"
        section = Section(f"case-{slug('-'.join(key))}", title)
        unit = next((r.unit for r in runs if r.unit), "")
        word = devices_word(runs)
        columns = sorted({(r.result.precision, r.result.micro_batch_size) for r in runs},
                         key=lambda c: (PRECISION_ORDER.get(c[0], 9), c[0], c[1]))
        sizes = sorted({r.world_size for r in runs})
        cells: dict[tuple[int, str, int], ReportRun] = {}
        for run in runs:  # runs are sorted oldest last within equal keys: keep the newest success
            k = (run.world_size, run.result.precision, run.result.micro_batch_size)
            current = cells.get(k)
            if current is None or (run.ok, run.result.started_at) > (current.ok, current.result.started_at):
                cells[k] = run
        headers = [word] + [column_label(p, b) for p, b in columns]
        speed_rows, memory_rows = [], []
        for n in sizes:
            speed = [Cell(str(n))]
            memory = [Cell(str(n))]
            for p, b in columns:
                run = cells.get((n, p, b))
                speed.append(_value_cell(run, self.options.noise_threshold))
                memory.append(Cell(fmt_mib(run.peak_memory_bytes) if run and run.ok and
                                   run.peak_memory_bytes else "", numeric=True,
                                   title=f"source: {run.peak_memory[1]}" if run and run.ok else None))
            speed_rows.append(speed)
            memory_rows.append(memory)
        section.blocks.append(Table(f"Speed ({unit})", headers, speed_rows, kind="speed",
                                    note="Per-run repeats, min/max and CV: see Repeats and noise "
                                         "(in the HTML, hover a value)."))
        no_memory = all(not c.text for row in memory_rows for c in row[1:])
        section.blocks.append(Table(
            "Memory (MiB, peak per device)", headers, memory_rows, kind="memory",
            note="No run of this framework reported its peak memory." if no_memory else
            "The vendor's device reading (e.g. NVML) where measured, else the framework's own peak; "
            "hover for the source."))
        if any(run.mfu is not None for run in cells.values()):
            mfu_rows = [[Cell(str(n))] + [
                Cell(f"{cells[(n, p, b)].mfu:.1%}" if (n, p, b) in cells and cells[(n, p, b)].mfu
                     is not None else "", numeric=True) for p, b in columns] for n in sizes]
            section.blocks.append(Table("MFU (model FLOPs utilisation per device)", headers, mfu_rows,
                                        kind="mfu"))
        charts = []
        if len(sizes) > 1:
            efficiency, scaling_chart = self._scaling(case, framework, unit, word, columns, sizes, cells)
            section.blocks.append(efficiency)
            charts.append(scaling_chart)
        for n in sizes:
            chart = self._batch_chart(case, framework, unit, word, n, columns, cells)
            if chart:
                charts.append(chart)
        section.blocks.extend(charts)
        return section

    def _scaling(self, case, framework, unit, word, columns, sizes, cells) -> list:
        series, eff_rows = [], {n: [Cell(str(n))] for n in sizes}
        for index, (p, b) in enumerate(columns):
            points = {n: cells[(n, p, b)].value for n in sizes
                      if (n, p, b) in cells and cells[(n, p, b)].ok}
            efficiency = scaling_efficiency(points)
            for n in sizes:
                suspicious = n in efficiency and is_superlinear(efficiency[n])
                eff_rows[n].append(Cell(
                    f"{efficiency[n]:.0%}" if n in efficiency else "", numeric=True,
                    badge="suspicious" if suspicious else None,
                    title=("super-linear: more than linear speed-up usually means the smaller run "
                           "was slowed down" if suspicious else None)))
            if not points:
                continue
            labels = {float(n): f"{e:.0%}" for n, e in efficiency.items() if n != min(points)}
            series.append(Series(column_label(p, b), [(float(n), v) for n, v in points.items()],
                                 color=_color(index), labels=labels))
            base = min(points)
            if len(points) > 1:
                series.append(Series(f"{column_label(p, b)} linear", [
                    (float(n), points[base] * n / base) for n in sorted(points)],
                    color=_color(index), dashed=True, markers=False, legend=False))
        headers = [word] + [column_label(p, b) for p, b in columns]
        chart = Chart(
            f"scaling-{slug(case + '-' + framework)}",
            f"Throughput vs {word}: {case}, {framework}",
            line_chart(series, title=f"{case} · {framework}: throughput vs {word}",
                       x_label=f"{word} (log scale)", y_label=unit, x_scale="log2",
                       x_ticks=[float(n) for n in sizes],
                       chart_id=f"scaling-{slug(case + '-' + framework)}",
                       legend_extra=[("linear scaling", "#6b7280", True)]),
            caption=("Solid: measured; dashed: linear scaling from the smallest count. Labels: "
                     "scaling efficiency T(n) / (T(n0)·n/n0)."),
            kind="scaling",
        )
        table = Table("Scaling efficiency", headers, list(eff_rows.values()), kind="efficiency",
                      note=f"T(n) / (T(n0)·n/n0); above {SUPERLINEAR_EFFICIENCY:.0%} is flagged "
                           "suspicious (super-linear scaling).")
        return [table, chart]

    def _batch_chart(self, case, framework, unit, word, n, columns, cells) -> Chart | None:
        by_precision: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for p, b in columns:
            run = cells.get((n, p, b))
            if run and run.ok:
                by_precision[p].append((float(b), run.value))
        batch_sizes = sorted({x for pts in by_precision.values() for x, _ in pts})
        if len(batch_sizes) < 2:
            return None
        series = [Series(p.upper(), pts, color=_color(i))
                  for i, (p, pts) in enumerate(sorted(by_precision.items(),
                                                      key=lambda kv: PRECISION_ORDER.get(kv[0], 9)))]
        chart_id = f"batch-{slug(f'{case}-{framework}-{n}')}"
        return Chart(chart_id, f"Throughput vs batch size: {case}, {framework}, {count_of(n, word)}",
                     line_chart(series, title=f"{case} · {framework} · {count_of(n, word)}: throughput vs batch size",
                                x_label="micro batch size per process (log scale)", y_label=unit,
                                x_scale="log2", x_ticks=batch_sizes, chart_id=chart_id),
                     caption="One line per precision.", kind="batch")

    # ------------------------------------------------------------------ layouts
    def _layout_section(self, runs: list[ReportRun]) -> Section:
        section = Section("layouts", "Parallel layouts and configurations")
        by_sweep: dict[str, list[ReportRun]] = defaultdict(list)
        for run in runs:
            by_sweep[run.sweep.get("sweep", "")].append(run)
        for sweep_name, items in by_sweep.items():
            items.sort(key=lambda r: (r.sweep.get("point", 0), r.result.started_at))
            word = devices_word(items)
            headers = ["group", "case / config", "framework", f"nodes x {word}", "dp x tp x pp",
                       "precision", "batch (micro / global)", "latency (ms/iter)", "throughput",
                       "memory (MiB)"]
            with_mfu = any(run.mfu is not None for run in items)
            if with_mfu:
                headers.append("MFU")
            rows = []
            for run in items:
                r = run.result
                params = r.config.params
                tp = int(params.get("tensor_parallel_degree", 1) or 1)
                pp = int(params.get("pipeline_parallel_degree", 1) or 1)
                dp = max(1, run.world_size // (tp * pp))
                name = run.label or r.case
                if run.label and run.label != r.case:
                    name = f"{r.case} / {run.label}"
                rows.append([
                    Cell(run.group or "-"), Cell(name), Cell(r.framework),
                    Cell(f"{r.nnodes} x {r.nproc}"), Cell(f"{dp} x {tp} x {pp}"),
                    Cell(r.precision), Cell(f"{r.micro_batch_size} / {r.global_batch_size}", numeric=True),
                    Cell(f"{run.latency_ms:,.2f}" if run.ok and run.latency_ms else
                         ("" if run.ok else r.status), numeric=True, badge=None if run.ok else "failed",
                         title=r.failure_reason),
                    _value_cell(run, self.options.noise_threshold) if run.ok else Cell("", numeric=True),
                    Cell(fmt_mib(run.peak_memory_bytes) if run.ok else "", numeric=True),
                ] + ([Cell(f"{run.mfu:.1%}" if run.mfu is not None else "", numeric=True)]
                     if with_mfu else []))
            unit = next((r.unit for r in items if r.unit), "")
            section.blocks.append(Table(
                f"Latency and memory{': sweep ' + sweep_name if sweep_name else ''}"
                f" (throughput in {unit})", headers, rows, kind="layout",
                note="Latency: median time per iteration over the measured steps; dp x tp x pp "
                     "from the run's tensor/pipeline parallel degrees."))
        return section

    # ------------------------------------------------------------------ steps
    def _steps_section(self) -> Section:
        section = Section("steps", "Per-step throughput and loss")
        ok = [r for r in self.runs if r.ok]
        if self.step_reader is None:
            section.blocks.append(Paragraph("Per-step data was not read (no log reader)."))
            return section
        shown = 0
        for run in ok:
            if shown >= self.options.max_step_charts:
                section.blocks.append(Paragraph(
                    f"{len(ok) - shown} more runs not charted (--max-step-charts {self.options.max_step_charts})."))
                break
            steps = self.step_reader(run)
            points = [(float(s.step), s.throughput) for s in steps or [] if s.throughput is not None]
            if not points:
                continue
            r = run.result
            skip = r.skip_steps
            shades = [Shade(points[0][0] - 0.5, min(skip, len(points)) + 0.5,
                            f"warm-up: {skip} steps skipped")] if skip > 0 else []
            hlines = [HLine(run.value, f"FINAL_RESULT {fmt_value(run.value)}")] if run.value else []
            name = (f"{r.case} · {r.framework} · {r.nnodes}x{r.nproc} · "
                    f"{column_label(r.precision, r.micro_batch_size)}")
            if run.label:
                name += f" · {run.label}"
            chart_id = f"steps-{slug(r.run_id)}"
            section.blocks.append(Chart(chart_id, name, line_chart(
                [Series("step throughput", points, color="#0072B2", legend=False)], title=name, x_label="step",
                y_label=r.throughput.unit, shades=shades, hlines=hlines, width=520, height=300,
                chart_id=chart_id), caption=f"run {r.run_id} (first repeat's log)", kind="steps"))
            loss = [(float(s.step), s.loss) for s in steps or [] if s.loss is not None]
            if not loss and r.log_summary is not None:
                loss = [(float(step), value) for step, value in r.log_summary.loss_curve if value is not None]
            if loss:
                loss_id = f"loss-{slug(r.run_id)}"
                section.blocks.append(Chart(loss_id, f"Loss: {name}", line_chart(
                    [Series("loss", loss, color="#D55E00", legend=False, markers=len(loss) <= 60)],
                    title=f"loss · {name}", x_label="step", y_label="training loss",
                    shades=shades, width=520, height=300, chart_id=loss_id),
                    caption=f"run {r.run_id}: training loss per logged step", kind="loss"))
            shown += 1
        if shown == 0:
            section.blocks.append(Paragraph("No run folder with a readable training log."))
        return section

    # ------------------------------------------------------------------ noise
    def _noise_section(self) -> Section:
        section = Section("noise", "Repeats and noise")
        headers = ["run", "case", "framework", "layout", "config", "repeats", "FINAL_RESULT",
                   "total work", "min", "max", "CV", "step-time CV", "flag"]
        rows = []
        for run in self.runs:
            if not run.ok:
                continue
            r = run.result
            values = repeat_values(r)
            cv = repeat_cv(r)
            noisy = is_noisy(r, self.options.noise_threshold)
            rows.append([
                Cell(r.run_id), Cell(r.case), Cell(r.framework), Cell(f"{r.nnodes}x{r.nproc}"),
                Cell(column_label(r.precision, r.micro_batch_size) + (f" {run.label}" if run.label else "")),
                Cell(str(len(values)), numeric=True), Cell(fmt_value(run.value), numeric=True),
                Cell(fmt_value(r.throughput.total_work), numeric=True),
                Cell(fmt_value(min(values)) if values else "-", numeric=True),
                Cell(fmt_value(max(values)) if values else "-", numeric=True),
                Cell(f"{cv:.1%}" if cv is not None else "n/a", numeric=True),
                Cell(f"{r.step_time.cv:.1%}" if r.step_time else "-", numeric=True),
                Cell("noisy" if noisy else "", badge="noisy" if noisy else None),
            ])
        section.blocks.append(Paragraph(
            f"FINAL_RESULT: mean of the per-step throughputs after the warm-up (median over "
            f"repeats); total work: units of the measured steps over their wall time (first "
            f"repeat). CV: coefficient of variation (stdev / mean) of FINAL_RESULT over a run's "
            f"repeats; a single repeat has no repeat CV, so its step-time CV stands in. Runs "
            f"above {self.options.noise_threshold:.0%} are flagged noisy."))
        section.blocks.append(Table("Repeats", headers, rows, kind="noise"))
        return section

    # ------------------------------------------------------------------ failures
    def _failures_section(self, failed: list[ReportRun]) -> Section:
        rows = [[Cell(r.result.run_id), Cell(r.result.case), Cell(r.result.framework),
                 Cell(f"{r.result.nnodes}x{r.result.nproc}"),
                 Cell(column_label(r.result.precision, r.result.micro_batch_size)),
                 Cell(r.result.status, badge="failed"), Cell(r.result.failure_reason or "")]
                for r in failed]
        return Section("failures", "Runs that did not succeed", [Table(
            "Failures", ["run", "case", "framework", "layout", "config", "status", "reason"], rows,
            kind="failures")])

    # ------------------------------------------------------------------ environment
    def _environment_section(self) -> Section:
        section = Section("environment", "Environment")
        devices: dict[tuple, set[str]] = defaultdict(set)
        for run in self.runs:
            d = run.result.devices
            if d is None:
                continue
            names = defaultdict(int)
            for dev in d.devices:
                names[dev.name] += 1
            text = ", ".join(f"{count} x {name}" for name, count in names.items())
            devices[(d.vendor, d.kind, text, d.driver_version or "-", d.runtime_version or "-",
                     d.interconnect or "-")].add(run.result.run_id)
        section.blocks.append(Table("Devices", ["vendor", "kind", "devices", "driver", "runtime",
                                                "interconnect", "runs"],
                                    [[Cell(k[0]), Cell(k[1]), Cell(k[2]), Cell(k[3]), Cell(k[4]),
                                      Cell(k[5]), Cell(str(len(v)), numeric=True)]
                                     for k, v in devices.items()], kind="env"))
        software: dict[tuple, int] = defaultdict(int)
        for run in self.runs:
            r = run.result
            env = r.environment
            packages = ", ".join(f"{k} {v}" for k, v in sorted(env.packages.items()))
            software[(r.framework, r.framework_version or "-", packages or "-",
                      "isolated venv" if env.isolated_env else "current interpreter",
                      f"harness {env.harness_version}, Python {env.python}", env.platform,
                      env.cpu or "-")] += 1
        section.blocks.append(Table(
            "Frameworks and host", ["framework", "version", "packages", "environment", "harness / python",
                                    "platform", "host CPU", "runs"],
            [[*(Cell(x) for x in k), Cell(str(v), numeric=True)] for k, v in software.items()],
            kind="env"))
        rows = []
        for run in self.runs:
            r = run.result
            dataset = r.dataset
            rows.append([Cell(r.run_id), Cell(r.case), Cell(r.framework), Cell(r.config.scale),
                         Cell(f"{r.nnodes}x{r.nproc}"),
                         Cell(column_label(r.precision, r.micro_batch_size)),
                         Cell(r.config_hash),
                         Cell(r.status + (f" (modified: {', '.join(r.modified)})" if r.modified else ""),
                              badge="failed" if not run.ok else "unhealthy" if unhealthy(r) else None,
                              title="; ".join(r.health.reasons) if unhealthy(r) else None),
                         Cell(f"{dataset.kind}{' (synthesised)' if dataset.synthesized else ''}"
                              if dataset else "-"),
                         Cell(str(run.attempts), numeric=True)])
        section.blocks.append(Table(
            "Runs and config hashes", ["run", "case", "framework", "scale", "layout", "config",
                                       "config hash", "status", "dataset", "recorded"], rows,
            kind="runs", note="recorded: how many runs with this config hash the database holds; "
                              "the newest successful one is shown."))
        return section


def _color(index: int) -> str:
    from harness.report.svg import PALETTE

    return PALETTE[index % len(PALETTE)]
