"""How long a vendor's full certification takes on one GPU, from the suites and measured runs.

For every point of the built-in full suites (``harness certify suites``: gpt3, ngc_bert_base,
resnet50, mobilenet_v1) on one device, the run time is estimated from the newest committed
result (``benchmarks/results/<gpu>/``) of the same case, framework, precision and micro batch
(where the suite fixes it) on one GPU of that kind, run with the vendor's configuration otherwise: its start-up (the run's wall time less its
logged steps) plus the suite's step count times the measured median step time. A certification
runs every point ``repeats`` times; recording the point's reference bands (``harness certify
reference``, the default four seeds plus the suite's own) takes five more runs. Prints one row per
point and GPU and the totals; a point with no measured run says so.

    python benchmarks/certify_time_estimate.py [--gpus h100,h200] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SUITES = ("gpt3", "ngc_bert_base", "resnet50", "mobilenet_v1")
REFERENCE_RUNS = 5  # harness certify reference: seeds 1,2,3,4 and the suite's own


def load_results(gpu: str):
    from harness.models import BenchmarkResult

    results = []
    for path in sorted((RESULTS / gpu).glob("*.json")):
        try:
            result = BenchmarkResult.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            continue  # a benchmark script's own JSON, not a run's result
        if result.status == "success" and result.step_time is not None and result.nproc * result.nnodes == 1:
            results.append((path, result))
    return results


#: Settings a measured run may have set on its command line and still time the point's work:
#: the window, the process count and the precision (compared on its own).
WINDOW_KEYS = {"max_steps", "skip_steps", "nproc", "nnodes", "precision"}


def vendor_defaults(case: str, framework: str) -> dict:
    """The nvidia vendor's default values for a case and framework (its default.toml)."""
    path = ROOT / "vendors" / "harness_nvidia" / "configs" / case / framework / "default.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")).get("values", {}) if path.exists() else {}


def as_certified(result, point, defaults: dict) -> bool:
    """Whether ``result`` ran the point's configuration: nothing set on its command line beyond
    the window, what the point sets itself, and values equal to the vendor's ``defaults`` (a run
    at another micro batch, or with the optimizer offloaded, times other work than the
    certification's)."""
    sources = result.config.sources or {}
    values = {**result.config.params, **result.config.settings.model_dump()}
    return all(key in WINDOW_KEYS or key in point.settings
               or (key in defaults and values.get(key) == defaults[key])
               for key, source in sources.items() if source == "cli")


def matching(results, point, case) -> tuple[Path, object] | None:
    """The newest full-scale one-GPU run of the point's case, framework, precision and (where
    the suite fixes it) micro batch, with the vendor's configuration for everything else."""
    precision = point.precision or case.settings.get("precision")
    batch = point.settings.get("micro_batch_size")
    defaults = vendor_defaults(point.case, point.framework)
    candidates = [(path, r) for path, r in results
                  if r.case == point.case and r.framework == point.framework and r.config.scale == "full"
                  and r.precision == precision and (batch is None or r.micro_batch_size == batch)
                  and as_certified(r, point, defaults)]
    return max(candidates, key=lambda item: item[1].started_at) if candidates else None


def run_seconds(result, steps: int) -> float:
    wall = (result.finished_at - result.started_at).total_seconds()
    logged = result.step_time.mean * result.steps_completed
    startup = max(0.0, wall / max(1, len(result.repeats)) - logged)
    return startup + steps * result.step_time.median


def hours(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", default="h100,h200", help="folders of benchmarks/results/")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    from harness.app import Harness
    from harness.certify.suite import load_suite, plan_points

    harness = Harness.load(load_entrypoints=False)
    registry = harness.registry
    header = ["suite", "point", "GPU", "steps", "step s", "run", "x repeats", "+ reference", "measured run"]
    rows, totals, missing = [], {}, []
    for gpu in [g.strip() for g in args.gpus.split(",") if g.strip()]:
        results = load_results(gpu)
        for name in SUITES:
            suite = load_suite(name, harness)
            for point in plan_points(suite, registry, device_count=1):
                case = registry.cases.get(point.case)
                steps = int(point.settings.get("max_steps") or case.settings["max_steps"])
                found = matching(results, point, case)
                if found is None:
                    missing.append(f"{gpu}: {point.label} (no one-GPU run of it under benchmarks/results/{gpu})")
                    continue
                path, result = found
                one = run_seconds(result, steps)
                repeats = suite.spec.suite.repeats
                totals.setdefault(gpu, [0.0, 0.0])
                totals[gpu][0] += one * repeats
                totals[gpu][1] += one * REFERENCE_RUNS
                rows.append([name, point.label, gpu, str(steps), f"{result.step_time.median:.3f}", hours(one),
                             hours(one * repeats), hours(one * REFERENCE_RUNS), path.name])
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        print("\t".join(header))
        for row in rows:
            print("\t".join(row))
    for gpu, (certify, reference) in totals.items():
        print(f"{gpu}: certification {hours(certify)} of runs, reference bands {hours(reference)}, "
              f"together {hours(certify + reference)} (one GPU, points measured above only)")
    for line in missing:
        print(f"not estimated: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
