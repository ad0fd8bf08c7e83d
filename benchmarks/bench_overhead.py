"""Harness overhead: tokens/s of the smoke case through `harness run` vs the training script run directly.

Usage: python benchmarks/bench_overhead.py [--pairs 5] [--max-steps 40] [--case gpt3_6.7B]

Runs alternate (harness, direct, harness, direct, ...) so drift in machine load hits both
sides alike. Both sides compute tokens/s from the same Megatron lines with the same warm-up
skip. Also times `harness --help` start-up. Prints a table; --json writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.fingerprint import harness_git_sha
from harness.logformats.megatron import MegatronFormat
from harness.stats import mean_after_warmup
from harness_cases.shared_scripts import scripts_pythonpath
from harness_pytorch.plugin import SCRIPTS, TRAIN_SCRIPTS


def harness_run(work: Path, case: str, max_steps: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--vendor", "cpu", "--case", case, "--scale", "smoke",
         "--max-steps", str(max_steps), "--json", "--output", str(work / "results")],
        capture_output=True, text=True, cwd=work, check=True,
    )
    return json.loads(proc.stdout)


def direct_run(result: dict, work: Path, skip: int) -> float:
    """The same training script, config and data, launched by hand with the cpu vendor's env."""
    run_dir = work / "results" / result["run_id"]
    prefix = Path(result["dataset"]["path"]) / result["dataset"]["files"][0].removesuffix("_ids.npy")
    # The script's modules and the shared ones, as the PyTorch plugin's launch puts them.
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS=str(len(os.sched_getaffinity(0))),
               PYTHONUNBUFFERED="1", PYTHONPATH=scripts_pythonpath(SCRIPTS))
    proc = subprocess.run(
        [sys.executable, str(TRAIN_SCRIPTS["gpt"]), "--config", str(run_dir / "config.json"),
         "--data-prefix", str(prefix)],
        capture_output=True, text=True, env=env, check=True,
    )
    log = work / "direct.log"
    log.write_text(proc.stdout)
    seq_len = result["config"]["params"]["seq_len"]
    parsed = MegatronFormat().parse_file(log, seq_len=seq_len)
    return mean_after_warmup([s.throughput for s in parsed.steps if s.throughput is not None], skip)


def help_startup_s(repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(["harness", "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--case", default="gpt3_6.7B")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        harness_run(work, args.case, args.max_steps)  # warm-up: dataset synthesis, caches
        via_harness, direct = [], []
        for pair in range(args.pairs):
            result = harness_run(work, args.case, args.max_steps)
            via_harness.append(result["throughput"]["value"])
            direct.append(direct_run(result, work, result["skip_steps"]))
            print(f"pair {pair + 1}: harness {via_harness[-1]:,.0f}  direct {direct[-1]:,.0f} tokens/s",
                  flush=True)
    med_h, med_d = statistics.median(via_harness), statistics.median(direct)
    startup = help_startup_s()
    figures = {
        "case": f"{args.case} --scale smoke --max-steps {args.max_steps}", "pairs": args.pairs,
        "harness_tokens_per_s": via_harness, "direct_tokens_per_s": direct,
        "median_harness": med_h, "median_direct": med_d,
        "overhead_pct": 100.0 * (med_d - med_h) / med_d, "help_startup_median_s": startup,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}",
        "harness_git_sha": harness_git_sha(),
        "bench_command": " ".join(["python benchmarks/bench_overhead.py", *sys.argv[1:]]),
    }
    print(f"\nmedian via harness run : {med_h:,.1f} tokens/s")
    print(f"median direct script   : {med_d:,.1f} tokens/s")
    print(f"harness overhead       : {figures['overhead_pct']:+.2f}% (limit 2%)")
    print(f"`harness --help` start : {startup * 1000:.0f} ms median of 7 (limit 500 ms)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
