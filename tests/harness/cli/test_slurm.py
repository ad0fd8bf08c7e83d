"""``harness slurm script`` and ``--launcher slurm``: the script's quoting and checks (fast), and
a real sbatch job on a one-node Slurm cluster started on localhost (slow)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.cli.local_slurm import LocalSlurm, unavailable_reason


def _harness(args: list[str], cwd: Path, env: dict[str, str] | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env or dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)


def test_script_quotes_every_word_and_starts_one_task_per_node(tmp_path):
    weird = tmp_path / "it's a $(dir)"
    proc = _harness(["slurm", "script", "--nodes", "2", "--cpus-per-task", "4", "--partition", "p1",
                     "--sbatch-option=--account=proj", "-o", "job.sbatch", "--", "--case",
                     "gpt3_125M", "--scale", "smoke", "--output", str(weird)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "job.sbatch").read_text()
    assert os.access(tmp_path / "job.sbatch", os.X_OK)
    assert "#SBATCH --nodes=2" in text and "#SBATCH --ntasks-per-node=1" in text
    assert "#SBATCH --partition=p1" in text and "#SBATCH --account=proj" in text
    [srun_line] = [line for line in text.splitlines() if line.startswith("srun ")]
    words = shlex.split(srun_line)
    assert words[:5] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--cpus-per-task=4"]
    assert words[words.index("--output") + 1] == str(weird)  # survives the shell unchanged
    assert words[-2:] == ["--launcher", "slurm"]
    # bash sees the same words: the $(...) is not run
    echoed = subprocess.run(["bash", "-c", "printf '%s\\n' " + srun_line.split(" ", 1)[1]],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert str(weird) in echoed
    # the job's secret is made when the job starts, one per job, never written into the file
    [export] = [line for line in text.splitlines() if line.startswith("export HARNESS_JOB_SECRET=")]
    secrets = {subprocess.run(["bash", "-c", export + '; printf %s "$HARNESS_JOB_SECRET"'],
                              capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]}).stdout
               for _ in range(2)}
    assert len(secrets) == 2 and all(len(secret) == 64 for secret in secrets)


@pytest.mark.parametrize("args, message", [
    (["--", "--case", "gpt3_125M", "--bogus"], "No such option: --bogus"),
    (["--", "--case", "gpt3_125M", "--nnodes", "2"], "--nnodes is not for"),
    (["--", "--case", "gpt3_125M", "--launcher", "local"], "--launcher is not for"),
    ([], "give the `harness run` options after `--`"),
    (["--sbatch-option", "account=x", "--", "--case", "gpt3_125M"], "give one sbatch option"),
])
def test_script_refuses_bad_run_options_in_one_line(tmp_path, args, message):
    proc = _harness(["slurm", "script", *args], tmp_path)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_launcher_slurm_outside_an_allocation_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = _harness(["run", "--case", "gpt3_125M", "--scale", "smoke", "--launcher", "slurm",
                     "--output", "results"], tmp_path, env)
    assert proc.returncode == 2 and "runs inside a Slurm allocation" in proc.stderr
    assert not (tmp_path / "results").exists()


@pytest.fixture(scope="module")
def local_slurm(tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start(cpus=2)
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.slow
def test_sbatch_job_of_two_tasks_on_one_node_records_one_result(local_slurm, tmp_path):
    env = dict(local_slurm.env, HARNESS_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    proc = _harness(["slurm", "script", "--nodes", "1", "--cpus-per-task", "2", "--time", "00:15:00",
                     "-o", "job.sbatch", "--", "--case", "gpt3_125M", "--scale", "smoke",
                     "--max-steps", "6", "--nproc", "2", "--output", "results"], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    submitted = subprocess.run(["sbatch", "--wait", "--output", str(tmp_path / "slurm-%j.out"),
                                "job.sbatch"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=900)
    job_id = re.search(r"Submitted batch job (\d+)", submitted.stdout).group(1)
    output = (tmp_path / f"slurm-{job_id}.out").read_text()
    assert submitted.returncode == 0, output[-4000:] + local_slurm.logs()
    [result_file] = (tmp_path / "results").glob("*/result.json")
    result = json.loads(result_file.read_text())
    assert result["status"] == "success" and result["job_id"] == job_id
    assert result["nproc"] == 2 and result["nnodes"] == 1 and result["steps_completed"] == 6
    assert result["config"]["sources"].get("nproc") == "cli"


@pytest.mark.slow
def test_a_node_reads_its_identity_from_a_real_srun_step(local_slurm, tmp_path):
    code = ("from harness.launch import first_slurm_host, slurm_identity; import os; "
            "i = slurm_identity(None, None); "
            "print(i.job_id == os.environ['SLURM_JOB_ID'], i.node_rank, i.nnodes, "
            "first_slurm_host(os.environ['SLURM_JOB_NODELIST']))")
    proc = subprocess.run(["srun", "--nodes=1", "--ntasks-per-node=1", sys.executable, "-c", code],
                          cwd=tmp_path, env=local_slurm.env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "0", "1", local_slurm.node]
