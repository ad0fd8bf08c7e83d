"""The same GPT case through the PyTorch plugin and the Megatron-core plugin, side by side.

Run on a machine with NVIDIA GPUs, from the repository root::

    python benchmarks/bench_gpt_pytorch_vs_megatron.py --case gpt3_1.3B --max-steps 30 \
        --skip-steps 10 --output results/side_by_side

Each framework runs through ``harness run --vendor nvidia --json`` with the vendor's per-case
config for that framework (bf16, the same micro batch, no recompute, flash attention through
scaled_dot_product_attention in both); a memory planner may still shrink one side's micro
batch, so unequal (micro batch, global batch) stops it before the table. The table
gives tokens/s, MFU, the framework's and NVML's peak memory, step-time CV, energy per token and
the GPU's mean SM clock and share of samples at its power cap over the measured steps, then the
PyTorch/Megatron ratio. ``--json-out`` writes the table and the two result files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

FRAMEWORKS = ("pytorch", "megatron")


def run_case(framework: str, args: argparse.Namespace) -> dict:
    argv = [sys.executable, "-m", "harness", "run", "--vendor", "nvidia", "--case", args.case,
            "--framework", framework, "--max-steps", str(args.max_steps), "--nproc", str(args.nproc),
            "--set", f"skip_steps={args.skip_steps}",
            # Equal settings whatever each framework's vendor default is; recompute set here so
            # that neither framework's memory planner may turn it on for one side only.
            "--set", f"grad_accum_steps={args.grad_accum}", "--set", "recompute=none",
            "--output", str(args.output), "--json",
            *[item for pair in args.set for item in ("--set", pair)]]
    print(f"$ {' '.join(argv[1:])}", file=sys.stderr, flush=True)
    done = subprocess.run(argv, capture_output=True, text=True)
    try:
        start = done.stdout.index("{")
        return json.loads(done.stdout[start:])
    except ValueError:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{framework}: harness run produced no result (exit {done.returncode})")


def row(result: dict) -> dict:
    eff = result.get("efficiency") or {}
    metrics = result.get("device_metrics") or {}
    throughput = result.get("throughput") or {}
    step = result.get("step_time") or {}
    return {
        "framework": f"{result['framework']} {result.get('framework_version') or ''}".strip(),
        "status": result["status"],
        "tokens_per_s": throughput.get("value"),
        "mfu": eff.get("mfu"),
        "step_ms_median": step.get("median", 0) * 1000 if step else None,
        "step_time_cv": step.get("cv"),
        "peak_memory_gib": (result.get("peak_memory_bytes") or 0) / 2**30 or None,
        "nvml_peak_memory_gib": (metrics.get("nvml_peak_memory_bytes_max") or 0) / 2**30 or None,
        "energy_j_per_token": eff.get("energy_per_unit_j"),
        # The GPU's clocks over the measured steps (NVML, the nvidia vendor's monitor): at its
        # power cap the same kernels run slower when fewer gaps separate them.
        "sm_clock_mhz": min(_known(metrics.get("training_sm_clock_mhz")), default=None),
        "power_capped_pct": max(_known(metrics.get("training_power_capped_pct")), default=None),
        "run_id": result["run_id"],
    }


def _known(values) -> list[float]:
    """A per-GPU list's readings, without the GPUs that gave none."""
    return [v for v in values or [] if v is not None]


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", default="gpt3_1.3B", help="a GPT case both frameworks run")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--nproc", type=int, default=1, help="GPUs (processes) of both runs")
    parser.add_argument("--skip-steps", type=int, default=10)
    parser.add_argument("--output", type=Path, default=Path("results/side_by_side"))
    parser.add_argument("--grad-accum", type=int, default=1,
                        help="micro-batches per step for both runs (BENCHMARKS.md: 1 on 2026-11-21, "
                             "4 or 8 on 2026-11-23)")
    parser.add_argument("--set", action="append", default=[], help="extra key=value for both runs")
    parser.add_argument("--json-out", type=Path, help="write the table and both results here")
    args = parser.parse_args(argv)

    results = {fw: run_case(fw, args) for fw in FRAMEWORKS}
    batches = {fw: (r.get("micro_batch_size"), r.get("global_batch_size")) for fw, r in results.items()}
    if len(set(batches.values())) > 1:  # a memory planner shrank one side's micro batch
        raise SystemExit(f"unequal settings, (micro batch, global batch) per framework: {batches}; "
                         "pass --set micro_batch_size=N to pin it")
    rows = [row(results[fw]) for fw in FRAMEWORKS]
    header = (f"{'framework':<22} {'status':<8} {'tokens/s':>10} {'MFU':>6} {'step ms':>8} "
              f"{'CV':>6} {'peak GiB':>9} {'NVML GiB':>9} {'J/token':>8} {'SM MHz':>7} {'capped':>7}")
    print(f"\n{args.case}: PyTorch plugin vs Megatron-core, {args.max_steps} steps, "
          f"first {args.skip_steps} skipped")
    print(header)
    for r in rows:
        print(f"{r['framework']:<22} {r['status']:<8} {fmt(r['tokens_per_s'], ',.0f'):>10} "
              f"{fmt(r['mfu'], '.1%'):>6} {fmt(r['step_ms_median'], '.1f'):>8} "
              f"{fmt(r['step_time_cv'], '.1%'):>6} {fmt(r['peak_memory_gib'], '.1f'):>9} "
              f"{fmt(r['nvml_peak_memory_gib'], '.1f'):>9} {fmt(r['energy_j_per_token'], '.4f'):>8} "
              f"{fmt(r['sm_clock_mhz'], ',.0f'):>7} {fmt(r['power_capped_pct'], '.0f'):>6}%")
    ratio = None
    if rows[0]["tokens_per_s"] and rows[1]["tokens_per_s"]:
        ratio = rows[0]["tokens_per_s"] / rows[1]["tokens_per_s"]
        print(f"PyTorch / Megatron-core throughput: {ratio:.3f}x")
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps({"case": args.case, "rows": rows, "ratio": ratio,
                                             "results": results}, indent=2) + "\n")
    return 0 if all(r["status"] == "success" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
