"""A sweep's recorded run whose folder was deleted or whose result.json was truncated is not
trusted: the sweep says so and runs the point again; a report names such runs; a report that
cannot be written (a read-only folder) is one line, not a traceback."""

from __future__ import annotations

import os
import subprocess

import pytest

from harness.store import ResultStore
from tests.conftest import run_cli

SWEEP = ["sweep", "--case", "demo_steps", "--framework", "demo", "--batch-size", "2,4,8"]


def _folders(results):
    """Batch size -> the run folder of its newest successful run."""
    dirs = ResultStore(results).run_dirs()
    runs = sorted(ResultStore(results).list(status="success"), key=lambda run: run.started_at)
    return {run.micro_batch_size: dirs[run.run_id] for run in runs}


def test_damaged_points_are_said_and_run_again_and_reports_name_them(cli_env, tmp_path):
    results = tmp_path / "results"
    first = run_cli(SWEEP, cli_env, tmp_path)
    assert first.returncode == 0, first.stderr
    folders = _folders(results)
    assert sorted(folders) == [2, 4, 8]
    truncated = os.path.join(folders[2], "result.json")
    with open(truncated, "r+b") as handle:
        handle.truncate(100)
    subprocess.run(["rm", "-rf", folders[4]], check=True)

    report = run_cli(["report"], cli_env, tmp_path)  # before the resume: the damage is named
    assert report.returncode == 0, report.stderr
    assert f"warning: run {os.path.basename(folders[2])}: {truncated} is damaged" in report.stderr
    assert f"its run folder {folders[4]} is missing" in report.stderr
    md = (results / "report" / "report.md").read_text()
    assert "2 recorded runs have a damaged run folder" in md

    second = run_cli(SWEEP, cli_env, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "3 points, 2 to run, 1 already recorded" in second.stderr
    assert "is damaged (not a readable result): running it again" in second.stderr
    assert "is missing: running it again" in second.stderr
    again = _folders(results)
    assert again[8] == folders[8] and again[2] != folders[2] and again[4] != folders[4]


def test_a_report_into_a_read_only_folder_is_one_line(cli_env, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a read-only mount (root can write into any folder otherwise) needs root")
    assert run_cli(SWEEP[:5] + ["--batch-size", "2"], cli_env, tmp_path).returncode == 0
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    bound = subprocess.run(["mount", "--bind", "-o", "ro", str(tmp_path / "results"), str(read_only)],
                           capture_output=True, text=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount read-only here: {bound.stderr.strip()}")
    try:
        proc = run_cli(["report", "--output", str(read_only)], cli_env, tmp_path)
    finally:
        subprocess.run(["umount", "-l", str(read_only)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(f"error: could not write the report into {read_only / 'report'}")
    assert "Read-only file system" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
