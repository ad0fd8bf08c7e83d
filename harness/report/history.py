"""History (as asv draws it): throughput of each configuration over time, and regressions.

A configuration is what ``harness compare`` pairs runs by (case, vendor, scale, layout,
precision, batch, accumulation, label) plus the framework. Each successful run is compared
with the one before it of the same configuration by compare's rule; a slowdown beyond noise
(a bootstrap confidence interval of the ratio of their per-step medians below 1) is a
regression.
"""

from __future__ import annotations

from collections import defaultdict

from harness.report.pairing import comparison_key, pair_runs
from harness.stats import NOISE_CONFIDENCE
from harness.report.data import ReportRun
from harness.report.document import Cell, Chart, Paragraph, Section, Table
from harness.report.svg import Series, line_chart


def _config_name(run: ReportRun) -> str:
    r = run.result
    text = (f"{r.case} · {r.framework} · {r.vendor} · {r.nnodes}x{r.nproc} · "
            f"{r.precision.upper()}(BS={r.micro_batch_size})")
    if run.label:
        text += f" · {run.label}"
    if r.config.scale != "full":
        text += f" ({r.config.scale})"
    return text


def _revision(run: ReportRun) -> str:
    env = run.result.environment
    sha = (env.harness_git_sha or "")[:10]
    return f"harness {env.harness_version}" + (f" @ {sha}" if sha else "")


def history_section(runs: list[ReportRun], max_charts: int, read_samples=None) -> Section:
    """Charts of throughput over time per configuration with two or more successful runs, and
    the table of regressions beyond noise (``read_samples`` gives a run's per-step samples;
    without them no slowdown is known to be beyond noise)."""
    section = Section("history", "History")
    by_config: dict[tuple, list[ReportRun]] = defaultdict(list)
    for run in runs:
        if run.ok:
            by_config[(run.result.framework, *comparison_key(run))].append(run)
    tracked = {key: sorted(items, key=lambda r: r.result.started_at)
               for key, items in by_config.items() if len(items) >= 2}
    section.blocks.append(Paragraph(
        f"{len(tracked)} configurations recorded more than once. Each point is one run (hover: "
        f"run id, date, harness version and commit); a run is a regression when it is slower "
        f"than the run before it beyond both runs' noise (the rule of harness compare)."))
    regressions = []
    charts = 0
    for key, items in tracked.items():
        points, labels, ticks = [], {}, {}
        for index, run in enumerate(items, start=1):
            points.append((float(index), run.value))
            ticks[float(index)] = run.result.started_at.strftime("%m-%d %H:%M")
            if index > 1:
                before = items[index - 2]
                pair = pair_runs(key, before.result, run.result,
                                 *(read_samples(r) if read_samples else None for r in (before, run)))
                if pair.change < 0 and pair.beyond_noise:
                    labels[float(index)] = f"{pair.change:+.0%}"
                    regressions.append((items[index - 2], run, pair))
        if charts >= max_charts:
            continue
        name = _config_name(items[0])
        chart_id = f"history-{charts + 1}"
        section.blocks.append(Chart(chart_id, f"History: {name}", line_chart(
            [Series("FINAL_RESULT", points, color="#0072B2", legend=False, labels=labels)],
            title=name, x_label="run, oldest to newest (date UTC)", y_label=items[0].unit,
            x_ticks=sorted(ticks), x_tick_labels=ticks, width=620, height=300, chart_id=chart_id),
            caption="Labels: slowdowns beyond noise against the previous run. " + "; ".join(
                f"{i}: {r.result.run_id} ({_revision(r)})" for i, r in enumerate(items, start=1)),
            kind="history"))
        charts += 1
    rows = [[Cell(_config_name(after)), Cell(before.result.run_id), Cell(after.result.run_id),
             Cell(f"{pair.value_a:,.2f}", numeric=True), Cell(f"{pair.value_b:,.2f}", numeric=True),
             Cell(f"{pair.change:+.1%}", numeric=True, badge="regression"),
             Cell(f"{pair.interval.low:.3f}-{pair.interval.high:.3f}", numeric=True),
             Cell(f"{_revision(before)} → {_revision(after)}")]
            for before, after, pair in regressions]
    section.blocks.append(Table(
        "Regressions beyond noise", ["configuration", "before", "after", "before value",
                                     "after value", "change", f"{NOISE_CONFIDENCE:.0%} CI of after/before",
                                     "revisions"], rows,
        kind="regressions",
        note="None found." if not rows else (
            f"beyond noise: the {NOISE_CONFIDENCE:.0%} confidence interval of the ratio of the two "
            "runs' median per-step throughputs (bootstrap over their measured steps) lies below 1.")))
    return section
