"""The issue's scenario at smoke scale: a real sweep (2 precisions x 2 batch sizes x 1 and 2
processes), interrupted with Ctrl-C after its first run and started again, then a report
opened in headless Chromium."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from harness.store import ResultStore
from tests.harness.report.browser import chromium_binary, render_report
from tests.harness.report.test_report_browser import check_rendered


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


@pytest.mark.slow
def test_sweep_interrupted_resumed_and_reported(tmp_path):
    results = tmp_path / "results"
    env = dict(os.environ, HARNESS_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    sweep = _harness("sweep", "--case", "gpt3_125M", "--framework", "pytorch", "--vendor", "cpu",
                     "--scale", "smoke", "--precision", "fp32,bf16", "--batch-size", "2,4",
                     "--nproc", "1,2", "--max-steps", "8", "--output", str(results))
    first = subprocess.Popen(sweep, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    store = ResultStore(results)
    while time.monotonic() < deadline and first.poll() is None:
        if store.path.exists() and store.list(status="success"):
            break
        time.sleep(0.2)
    assert first.poll() is None, "the sweep ended before it could be interrupted:\n" + first.stdout.read()
    first.send_signal(signal.SIGINT)  # what Ctrl-C sends
    output, _ = first.communicate(timeout=120)
    assert first.returncode == 130, output
    assert "sweep: run 1 of 8" in output
    assert "interrupted: run the same command again to resume" in output
    recorded = {r.config_hash for r in store.list(status="success")}
    assert 1 <= len(recorded) < 8

    second = subprocess.run(sweep, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"8 points, {8 - len(recorded)} to run, {len(recorded)} already recorded" in second.stderr
    assert f"run {8 - len(recorded)} of {8 - len(recorded)}" in second.stderr
    successes = store.list(status="success")
    assert len({r.config_hash for r in successes}) == 8
    assert {r.config_hash for r in successes if r.run_id} >= recorded
    # nothing that had succeeded was run twice
    assert len(successes) == 8

    report_dir = tmp_path / "report"
    report = subprocess.run(_harness("report", "--output", str(results), "--out", str(report_dir)),
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    md = (report_dir / "report.md").read_text()
    assert "| processes | FP32(BS=2) | FP32(BS=4) | BF16(BS=2) | BF16(BS=4) |" in md
    if chromium_binary() is None:
        pytest.skip("headless Chromium not installed (Debian package `chromium`); "
                    "the report was written but not rendered")
    rendered = render_report(report_dir / "report.html", tmp_path, "report-sweep-e2e.png")
    check_rendered(rendered, min_charts=1 + 2 + 8)
