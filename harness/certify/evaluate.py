"""Judge a certification folder from its files alone: the one evaluation used by
``certify run`` (after running) and ``certify verify`` (after unpacking a bundle).

Nothing is taken from the results' own figures: every log is parsed again with harness's
registered log formats, FINAL_RESULT is recomputed with the core's statistics and compared
with what ``result.json`` and the legacy index claim, and the rules, repeats, noise and
convergence are checked from the re-parsed numbers and the installed case catalog.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from harness.certify import convergence, probe, rules, scoring, sysinfo
from harness.certify.checks import Check, failed, passed
from harness.certify.record import Certification, PointRecord, PointSummary
from harness.certify.suite import BUILTIN_DIR, REPEATS_DEVIATION, Suite, parse_suite_text, repeats_deviation
from harness import __version__
from harness.errors import HarnessError
from harness.health import judge_health, peak_learning_rate, uniform_guess_loss
from harness.logparse.summary import stream_log
from harness.result_builder import repeat_figures
from harness.results_io import LEGACY_DECIMALS
from harness.runner.pipeline import config_log_hints
from harness.stats import mean
from harness.readback import find_readback
from harness.witness import logged_rate, logged_step_time, witness_problem
from harness.models import BenchmarkResult, ResolvedConfig
from harness.models.health import Health

if TYPE_CHECKING:
    from harness.registry import Registry

REL_TOLERANCE = 1e-6  # JSON round-trips floats exactly; this only absorbs summation order


@dataclass
class RunEvidence:
    run_id: str
    folder: Path
    result: BenchmarkResult | None = None
    config: ResolvedConfig | None = None  # config.json, validated
    final: float | None = None  # re-parsed FINAL_RESULT
    losses: list[tuple[int, float]] = field(default_factory=list)
    health: Health | None = None  # judged again on the re-parsed losses
    problems: list[str] = field(default_factory=list)  # "path: why" figure mismatches


@dataclass
class Evaluation:
    summaries: list[PointSummary]
    checks: list[Check]
    evidence: dict[str, list[RunEvidence]]  # point label -> runs

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def same_figure(a: float | None, b: float | None) -> bool:
    """Whether a claimed figure is the recomputed one: both missing, or equal up to
    REL_TOLERANCE (the one rule for FINAL_RESULT, index values, scores and CVs)."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=REL_TOLERANCE, abs_tol=1e-9)


def reparse_run(registry: Registry, root: Path, run_id: str) -> RunEvidence:
    """Load one run folder and recompute its figures from its log."""
    folder = root / "runs" / run_id
    evidence = RunEvidence(run_id=run_id, folder=folder)
    rel = f"runs/{run_id}"
    try:
        evidence.result = BenchmarkResult.model_validate_json((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError) as exc:
        evidence.problems.append(f"{rel}/result.json: unreadable ({type(exc).__name__})")
        return evidence
    result = evidence.result
    try:
        evidence.config = ResolvedConfig.model_validate_json((folder / "config.json").read_text(encoding="utf-8"))
        if evidence.config.config_hash != result.config_hash:
            evidence.problems.append(f"{rel}/config.json: its hash differs from result.json's config_hash")
    except (OSError, ValueError, ValidationError) as exc:
        evidence.problems.append(f"{rel}/config.json: unreadable ({type(exc).__name__})")
    if result.config.config_hash != result.config_hash:
        evidence.problems.append(f"{rel}/result.json: its config does not hash to its config_hash")
    if result.run_id != run_id:
        evidence.problems.append(f"{rel}/result.json: run_id {result.run_id!r} is not the folder's")
    log_path = folder / result.log_file
    recorded = result.repeats[0].log_format if result.repeats else None
    try:
        framework_format = registry.frameworks.get(result.framework).log_format
    except HarnessError:
        framework_format = None
    log_format = registry.log_formats.items.get(recorded or framework_format or "")
    if log_format is None:
        evidence.problems.append(f"{rel}/{result.log_file}: no installed log format {recorded!r} to re-parse it")
        return evidence
    if not log_path.is_file():
        if result.status != "success" and not result.repeats:
            return evidence  # refused before its launch (e.g. by the launch check): no log was written
        evidence.problems.append(f"{rel}/{result.log_file}: missing")
        return evidence
    # Read as the run itself read it: the same streaming reader, hints and FINAL_RESULT rule.
    reading = stream_log(log_path, log_format, **config_log_hints(result.config))
    evidence.losses = list(reading.summary.loss.points)
    figures = repeat_figures(reading, result.config.settings.skip_steps)
    evidence.final = figures.final
    if result.status == "success":
        witness = result.repeats[0].witness if result.repeats else None
        logged = logged_rate(figures, reading, result.config.settings.skip_steps)
        problem = ("the harness's witness of the training output is missing" if witness is None
                   else witness_problem(log_path, reading, logged, witness,
                                   result.throughput.unit if result.throughput else "",
                                   timed=_builtin_framework(registry, result.framework),
                                   logged_step_s=logged_step_time(figures)))
        if problem:
            evidence.problems.append(f"{rel}/{result.log_file}: {problem}")
        nonce = nonce_problem(log_path, result.repeats[0].data_nonce if result.repeats else None)
        if nonce:
            evidence.problems.append(f"{rel}/{result.log_file}: {nonce}")
    evidence.health = judge_health(evidence.losses, skip_steps=result.config.settings.skip_steps,
                                   non_finite=reading.summary.loss.non_finite,
                                   uniform_loss=_uniform_loss(registry, result),
                                   learning_rates=reading.summary.learning_rate.points,
                                   peak_learning_rate=peak_learning_rate(result.config.params))
    claimed = result.throughput.value if result.throughput else None
    if result.status == "success" and evidence.final is not None:
        evidence.problems += [f"{rel}/result.json: {p}" for p in efficiency_problems(result, evidence.final)]
    if result.status == "success":
        if claimed is None or not same_figure(claimed, evidence.final):
            evidence.problems.append(
                f"{rel}/result.json: FINAL_RESULT {claimed} claimed, its log gives {evidence.final}")
        for index_file in sorted((folder / "index").glob("*")) if (folder / "index").is_dir() else []:
            try:
                value = json.loads(index_file.read_text(encoding="utf-8")).get("FINAL_RESULT")
            except ValueError:
                evidence.problems.append(f"{rel}/index/{index_file.name}: not JSON")
                continue
            # The legacy index carries FINAL_RESULT rounded to LEGACY_DECIMALS.
            if (evidence.final is None or not isinstance(value, (int, float))
                    or not same_figure(value, round(evidence.final, LEGACY_DECIMALS))):
                evidence.problems.append(
                    f"{rel}/index/{index_file.name}: FINAL_RESULT {value} claimed, its log gives {evidence.final}")
    return evidence


def nonce_problem(log_path: Path, data_nonce: int | None) -> str | None:
    """Why a log's read-back does not name the repeat's data-order nonce (a log of another
    run), or None; nothing to check for a repeat the harness gave no nonce."""
    if data_nonce is None:
        return None
    readback, problem = find_readback(log_path)
    read = readback.get("data_nonce") if readback else None
    if read == data_nonce:
        return None
    return problem or (f"its read-back names data nonce {read}, the repeat was given {data_nonce}: "
                       "a log of another run")


def _uniform_loss(registry: Registry, result: BenchmarkResult) -> float | None:
    """The uniform-guess loss of the run's case, from the installed case catalog."""
    try:
        case = registry.cases.get(result.case)
    except HarnessError:
        return None
    return uniform_guess_loss(case, result.config.params)


def check_health(runs: list[RunEvidence], label: str) -> Check:
    """Every run's training healthy, judged on its re-parsed loss curve (``harness/health.py``):
    a point whose training diverged in any repeat is not certified."""
    judged = [run for run in runs if run.health is not None]
    sick = [run for run in judged if run.health.failed]
    if sick:
        return failed("health", "; ".join(f"{run.run_id}: unhealthy: {'; '.join(run.health.reasons)}"
                                          for run in sick), label)
    if not judged or all(run.health.status == "unjudged" for run in judged):
        return failed("health", "no run logged a loss to judge its training by", label)
    # A rule a run could not judge (below uniform at the very start of a warm-up, falling with
    # few records) is named, so the pass claims no more than was checked.
    unjudged = Counter(check.name.replace("_", " ") for run in judged for check in run.health.checks
                       if check.passed is None)
    not_judged = "".join(f"; {name} not judged in {count} of {len(judged)}" for name, count in unjudged.items())
    return passed("health", f"{len(judged)} runs healthy (finite, no spike above the first loss, "
                            f"below the uniform-guess loss after the first steps, falling{not_judged})", label)


def _builtin_framework(registry: Registry, framework: str) -> bool:
    """Whether a built-in plugin registered ``framework`` (its scripts are held to the clock)."""
    from harness.plugin_manager import DEFAULT_PLUGINS

    return registry.frameworks.owners.get(framework) in DEFAULT_PLUGINS


def builtin_suite_problem(source: str, bundled: Suite) -> str | None:
    """A suite labelled built-in (``builtin:NAME``) must be this harness's built-in suite NAME,
    byte for byte: a label is a claim, the content hash is the check."""
    if not source.startswith("builtin:"):
        return None
    name = source.removeprefix("builtin:")
    path = BUILTIN_DIR / f"{name}.toml"
    if not path.is_file():
        return f"labelled {source}, but harness {__version__} has no built-in suite {name!r}"
    if hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest() != bundled.sha256:
        return (f"labelled {source}, but suite.toml is not harness {__version__}'s built-in suite "
                f"{name!r} (sha256 differs)")
    return None


def efficiency_problems(result: BenchmarkResult, final: float) -> list[str]:
    """The result's efficiency figures recomputed from the re-parsed FINAL_RESULT and its own
    FLOPs per unit and peak: achieved FLOP/s = throughput / devices x FLOPs per unit, MFU =
    achieved / peak. A figure claimed without what it is computed from is a mismatch too."""
    eff = result.efficiency
    if eff is None:
        return []
    achieved = (final / result.config.settings.world_size * eff.model_flops_per_unit
                if eff.model_flops_per_unit else None)
    mfu = achieved / eff.peak_flops_per_device if achieved and eff.peak_flops_per_device else None
    energy = eff.busy_power_w / final if eff.busy_power_w and final else None
    out = []
    for name, claimed, recomputed in (("achieved FLOP/s per device", eff.achieved_flops_per_device, achieved),
                                      ("MFU", eff.mfu, mfu), ("energy per unit", eff.energy_per_unit_j, energy)):
        if not same_figure(claimed, recomputed):
            out.append(f"{name} {claimed} claimed, recomputed {recomputed} from its log's throughput, "
                       "FLOPs per unit and peak")
    return out


def results_db_problems(root: Path, run_ids: list[str]) -> list[str]:
    """The bundled results database (``runs/harness.db``) against the run folders: every run of
    the plan is in it with the very result of its ``result.json``, and it holds no other run."""
    from harness.store import DB_NAME, ResultStore

    rel = f"runs/{DB_NAME}"
    if not (root / "runs" / DB_NAME).is_file():
        return [f"{rel}: missing"]
    store = ResultStore(root / "runs")
    try:
        stored = {r.run_id: r for r in store.list()}
    except HarnessError as exc:
        return [f"{rel}: unreadable ({str(exc).splitlines()[0]})"]
    out = [f"{rel}: run {run_id} is not in the certification's plan" for run_id in sorted(set(stored) - set(run_ids))]
    for run_id in run_ids:
        if run_id not in stored:
            out.append(f"{rel}: run {run_id} is missing")
            continue
        try:
            on_file = BenchmarkResult.model_validate_json(
                (root / "runs" / run_id / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError):
            continue  # reparse_run names the unreadable result.json
        in_db, in_file = stored[run_id].model_dump(), on_file.model_dump()
        differing = [key for key in in_file if in_db.get(key) != in_file[key]]
        if differing:
            out.append(f"{rel}: run {run_id} differs from its result.json in {', '.join(differing)}")
    return out


def evaluate(root: Path, registry: Registry) -> Evaluation:
    """All checks of the certification folder ``root`` (certification.json, suite.toml,
    system.json, runs/)."""
    cert = Certification.model_validate_json((root / "certification.json").read_text(encoding="utf-8"))
    checks: list[Check] = []
    summaries: list[PointSummary] = []
    evidence_by_point: dict[str, list[RunEvidence]] = {}

    suite_text = (root / "suite.toml").read_text(encoding="utf-8")
    bundled = Suite(spec=parse_suite_text(suite_text, "suite.toml"), text=suite_text, source=cert.suite_source)
    suite = bundled.spec.suite
    builtin = builtin_suite_problem(cert.suite_source, bundled)
    if bundled.sha256 != cert.suite_sha256:
        checks.append(failed("suite", "suite.toml differs from the suite the certification names"))
    elif builtin:
        checks.append(failed("suite", builtin))
    elif cert.repeats < scoring.OLYMPIC_MIN:
        checks.append(failed("suite", f"{cert.repeats} repeats per point; at least {scoring.OLYMPIC_MIN} are needed"))
    else:
        # The repeats deviation is recomputed from the suite, not taken from the claim.
        fewer = repeats_deviation(cert.repeats, suite)
        deviations = ([fewer] if fewer else []) + [d for d in cert.deviations if REPEATS_DEVIATION not in d]
        note = f"; deviations: {'; '.join(deviations)}" if deviations else ""
        checks.append(passed("suite", f"suite {suite.name!r} ({cert.suite_source}), {len(cert.points)} "
                             f"points x {cert.repeats} repeats at {suite.scale} scale{note}"))

    if cert.stopped:
        checks.append(failed("suite", f"the certification was stopped early: {cert.stopped}"))
    for record in cert.points:
        label = record.label
        case = registry.cases.get(record.case)
        if record.refused:
            checks.append(failed("rules", f"not run: {record.refused}", label))
            summaries.append(PointSummary(label=label, case=record.case))
            continue
        runs = [reparse_run(registry, root, run_id) for run_id in record.run_ids]
        evidence_by_point[label] = runs
        for run in runs:
            for problem in run.problems:
                checks.append(failed("integrity", problem, label))
        reference_cfg = rules.reference_config(case, record, cert.vendor, suite.scale)
        rule_checks = [rules.check_rules(case, run.config, reference_cfg, label)
                       for run in runs if run.config is not None]
        bad_rule = next((c for c in rule_checks if not c.passed), None)
        checks.append(bad_rule or (rule_checks[0] if rule_checks else
                                   failed("rules", "no run config to check", label)))

        results = [run.result for run in runs if run.result is not None]
        invalid = [r for r in results if r.status == "invalid"]
        if invalid:
            checks.append(failed("read_back", "; ".join(
                f"{r.run_id}: {r.failure_reason or 'read-back differs from the config'}" for r in invalid), label))
        else:
            checks.append(passed("read_back", f"no read-back mismatch in {len(results)} runs", label))

        statuses = [(r.status, r.failure_reason) for r in results]
        statuses += [("failed", error) for error in record.errors]
        checks.append(scoring.check_repeats(statuses, cert.repeats, suite.max_failed_repeats, label))
        if record.probe is not None:  # certifications before the probe recorded none
            checks.append(probe.check(record.probe, results, label))
        ok_runs = [run for run in runs if run.result is not None and run.result.status == "success"
                   and run.final is not None]
        values = [run.final for run in ok_runs]
        checks.append(scoring.check_noise(values, suite.cv_bound, label, robust=suite.kind == "smoke"))

        first = results[0] if results else None
        reference = (convergence.reference_for_run(record.case, suite.scale, record.framework, first)
                     if first else None)
        describe = convergence.describe_run(record.case, suite.scale, record.framework, first)
        # A repeat that did not succeed is the repeats check's to judge, not a missing loss.
        loss_runs = [(i, run.losses) for i, run in enumerate(runs, 1)
                     if run.result is not None and run.result.status == "success"]
        checks.append(convergence.check_convergence(loss_runs, reference, label, describe))
        checks.append(check_health(runs, label))
        summaries.append(_summary(record, runs, values, record.checkpoints or suite.checkpoints,
                                  record.checkpoint_window))

    planned = [run_id for record in cert.points for run_id in record.run_ids]
    checks += [failed("integrity", problem) for problem in results_db_problems(root, planned)]
    if suite.equivalence is not None:
        from harness.certify import equivalence_check

        checks.append(equivalence_check.check(root, suite.equivalence))
    try:
        description = json.loads((root / "system.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        description = {}
    checks.append(sysinfo.check_system(description))
    return Evaluation(summaries=summaries, checks=checks, evidence=evidence_by_point)


def _summary(record: PointRecord, runs: list[RunEvidence], values: list[float],
             checkpoints: list[int], window: int) -> PointSummary:
    results = [run.result for run in runs if run.result is not None and run.result.status == "success"]
    mfus = [r.efficiency.mfu for r in results if r.efficiency and r.efficiency.mfu is not None]
    energies = [r.efficiency.energy_per_unit_j for r in results
                if r.efficiency and r.efficiency.energy_per_unit_j is not None]
    memories = [r.peak_memory_bytes for r in results if r.peak_memory_bytes]
    for r in results:  # the vendor's own reading (NVML on NVIDIA GPUs), where it has one
        vendor_peak = r.device_metrics.get("nvml_peak_memory_bytes_max")
        if isinstance(vendor_peak, int):
            memories.append(vendor_peak)
    return PointSummary(
        label=record.label, case=record.case,
        unit=results[0].throughput.unit if results and results[0].throughput else None,
        values=[run.final if run.result is not None and run.result.status == "success" else None for run in runs],
        score=scoring.olympic_score(values), cv=scoring.repeat_cv(values),
        mfu=mean(mfus), peak_memory_bytes=max(memories) if memories else None,
        energy_per_unit_j=mean(energies),
        checkpoint_losses=[{str(k): v for k, v in convergence.checkpoint_losses(run.losses, checkpoints, window).items()}
                           for run in runs],
    )
