"""Streaming throughput of `harness parse` on a ~1 GB training log.

Writes a Megatron-LM (or PaddleNLP) log of about ``--size-gb`` GB into a temporary folder (iteration
lines in the new layout, each followed by the kind of noise real logs carry: a warning, a
tqdm redraw with ``\\r``, a memory report every 100 iterations), times the real command
``harness parse LOG --json`` on it in a subprocess, reports wall time, MB/s, lines/s and
the peak resident memory of the parsing process, and deletes the folder.

    python benchmarks/bench_parse_stream.py            # ~1 GB, the figure in BENCHMARKS.md
    python benchmarks/bench_parse_stream.py --size-gb 0.1
    python benchmarks/bench_parse_stream.py --format paddlenlp   # PaddleNLP 'global step' lines
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.fingerprint import harness_git_sha

ITERATION = (
    " [2024-05-01 10:{minute:02d}:{second:02d}] iteration {step:8d}/{total:8d} | consumed samples: "
    "{consumed:12d} | elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): "
    "{tflops:.1f} | learning rate: {lr:.6E} | global batch size:   512 | lm loss: {loss:.6E} | "
    "loss scale: 1.0 | grad norm: {norm:.3f} | number of skipped iterations:   0 | "
    "number of nan iterations:   0 |\n"
)
NOISE = (
    "[W pthreadpool-cpp.cc:90] Warning: Leaking Caffe2 thread-pool after fork. (function pthreadpool)\n"
    "Iteration:  {pct:2d}%|####      | {step}/{total} [01:23<02:34,  1.38it/s]\r"
    "Iteration:  {pct:2d}%|####      | {step}/{total} [01:24<02:33,  1.38it/s]\n"
)
PADDLENLP = (
    "[2024-05-01 10:{minute:02d}:{second:02d},000] [    INFO] - global step {step}, epoch: 0, batch: {step}, "
    "loss: {loss:.9f}, avg_reader_cost: 0.00021 sec, avg_batch_cost: {cost:.5f} sec, speed: 1.25 step/s, "
    "ips_total: {total:.0f} tokens/s, ips: {ips:.0f} tokens/s, learning rate: {lr:.5e}\n"
    "[2024-05-01 10:{minute:02d}:{second:02d},001] [ WARNING] - fused_multi_transformer is slower than expected\n"
)
MEMORY = "[Rank 0] (after {step} iterations) memory (MB) | allocated: 12345.6 | max allocated: 23456.7 | reserved: 30000.0 | max reserved: 30000.0\n"


def write_paddlenlp_log(path: Path, size_bytes: int) -> int:
    """A PaddleNLP GPT log (global step lines, each with a warning); returns the step count."""
    written = steps = 0
    with open(path, "w", encoding="utf-8", buffering=1 << 22) as handle:
        chunk: list[str] = []
        while written < size_bytes:
            steps += 1
            cost = 0.8 + (steps * 7919) % 100 / 1000.0
            text = PADDLENLP.format(minute=(steps // 60) % 60, second=steps % 60, step=steps,
                                    loss=11.0 - steps / 1e7, cost=cost, total=16 * 2048 / cost,
                                    ips=2048 / cost, lr=1e-4)
            chunk.append(text)
            written += len(text)
            if len(chunk) >= 10_000:
                handle.write("".join(chunk))
                chunk.clear()
        handle.write("".join(chunk))
    return steps


def write_log(path: Path, size_bytes: int) -> int:
    """Write the Megatron log; returns the number of iteration lines."""
    written = steps = 0
    total = 10_000_000
    with open(path, "w", encoding="utf-8", buffering=1 << 22) as handle:
        chunk: list[str] = []
        while written < size_bytes:
            steps += 1
            text = ITERATION.format(
                minute=(steps // 60) % 60, second=steps % 60, step=steps, total=total,
                consumed=steps * 512, ms=1200.0 + (steps * 7919) % 200 / 10.0,
                tflops=150.0 + (steps % 13), lr=1.5e-4 * (1 - steps / total),
                loss=11.0 - steps / total, norm=1.0 + (steps % 17) / 10.0,
            ) + NOISE.format(pct=steps * 100 // total, step=steps, total=total)
            if steps % 100 == 0:
                text += MEMORY.format(step=steps)
            chunk.append(text)
            written += len(text)
            if len(chunk) >= 10_000:
                handle.write("".join(chunk))
                chunk.clear()
        handle.write("".join(chunk))
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=1.0, help="Size of the generated log (default 1).")
    parser.add_argument("--limit-s", type=float, default=15.0, help="Fail above this parse time (default 15).")
    parser.add_argument("--format", choices=("megatron", "paddlenlp"), default="megatron",
                        help="Layout of the generated log (default megatron).")
    parser.add_argument("--json-out", type=Path, help="Also write the figures here (BENCHMARKS.md reads them).")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="harness-bench-parse-"))
    try:
        log = folder / f"{args.format}_gpt.log"
        started = time.perf_counter()
        writer = write_log if args.format == "megatron" else write_paddlenlp_log
        steps = writer(log, int(args.size_gb * 1e9))
        size = log.stat().st_size
        print(f"generated {size / 1e9:.2f} GB, {steps:,} iterations in {time.perf_counter() - started:.1f} s: {log}")

        extra = ["--seq-len", "2048"] if args.format == "megatron" else []
        command = [sys.executable, "-m", "harness", "parse", str(log), *extra, "--json"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        del before
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            return 1
        document = json.loads(proc.stdout)
        ingest = document["result"]["log_summary"]
        assert ingest["steps_parsed"] == steps, (ingest["steps_parsed"], steps)
        report = {
            "command": " ".join(["harness parse LOG", *extra, "--json"]),
            "format": document["result"]["config"]["params"]["log_format"],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "log_bytes": size,
            "lines": ingest["lines"],
            "steps": steps,
            "parse_seconds": round(elapsed, 2),
            "MB_per_s": round(size / 1e6 / elapsed, 1),
            "lines_per_s": round(ingest["lines"] / elapsed),
            "peak_rss_MB": round(peak_rss_mb, 1),
            "FINAL_RESULT": document["legacy_index"]["FINAL_RESULT"],
            "harness_git_sha": harness_git_sha(),
            "bench_command": " ".join(["python benchmarks/bench_parse_stream.py", *sys.argv[1:]]),
        }
        print(json.dumps(report, indent=1))
        if args.json_out:
            args.json_out.write_text(json.dumps(report, indent=1) + "\n")
        if elapsed > args.limit_s:
            print(f"FAIL: {elapsed:.1f} s is over the {args.limit_s:.0f} s limit", file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
