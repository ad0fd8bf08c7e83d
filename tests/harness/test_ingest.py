"""From a log to the uniform result: failure markers, GPU count, ingest idempotency."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.errors import UserInputError
from harness.ingest import ParseRequest, ingest, parse_log_file
from harness.app import Harness

STEP = ("total step: {step}, epoch: 0, batch: {step}, loss: {loss}, avg_reader_cost: 0.1 sec, "
        "avg_batch_cost: 0.5 sec, avg_samples: 96.00000, ips: {ips} sequences/sec\n")
LAUNCH = "LAUNCH INFO 2023-07-28 07:49:49,627 devices: 0,1,2,3\n"


@pytest.fixture(scope="module")
def registry():
    return Harness.load(load_entrypoints=False).registry


def log(tmp_path, text: str, name: str = "bert_bs96_fp16_log"):
    path = tmp_path / name
    path.write_text(text)
    return path


def steps(n: int, ips: float = 100.0, loss: str = "10.0") -> str:
    return "".join(STEP.format(step=10 * i, loss=loss, ips=ips) for i in range(1, n + 1))


def test_successful_log_builds_an_ingested_result(registry, tmp_path):
    path = log(tmp_path, LAUNCH + steps(30))
    outcome = parse_log_file(registry, ParseRequest(path=path, method="harness"))
    result = outcome.result
    assert result.source == "ingested" and len(result.source_sha256) == 64
    assert result.status == "success" and outcome.legacy.JOB_FAIL_FLAG == 0
    assert result.nproc == 4 and result.run_mode == "mp"  # GPU count read from the launcher lines
    assert result.throughput.value == pytest.approx(400.0)  # per-GPU ips x 4
    assert result.throughput.per_device == pytest.approx(100.0)
    assert result.precision == "fp16" and result.micro_batch_size == 96
    assert result.steps_completed == 300 and result.loss_first == 10.0
    assert result.step_time.mean == pytest.approx(0.5)
    assert outcome.legacy.FINAL_RESULT == 400.0 and outcome.legacy.UNIT == "sequences/s"
    assert outcome.legacy.gpu_num == 4


def test_gpus_on_the_command_line_win(registry, tmp_path):
    path = log(tmp_path, LAUNCH + steps(30))
    outcome = parse_log_file(registry, ParseRequest(path=path, gpus=8, method="harness"))
    assert outcome.result.throughput.value == pytest.approx(800.0) and outcome.result.nproc == 8


@pytest.mark.parametrize("tail, reason", [
    ("Traceback (most recent call last):\n  File \"run_pretrain.py\", line 1\n"
     "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "Traceback"),
    (STEP.format(step=400, loss="nan", ips=100.0), "non-finite loss"),
])
def test_failure_markers_set_job_fail_flag(registry, tmp_path, tail, reason):
    path = log(tmp_path, steps(30) + tail)
    outcome = parse_log_file(registry, ParseRequest(path=path))
    assert outcome.result.status == "failed" and reason in outcome.result.failure_reason
    assert outcome.legacy.JOB_FAIL_FLAG == 1 and outcome.legacy.FINAL_RESULT == 0.0


def test_crash_before_the_first_step(registry, tmp_path):
    path = log(tmp_path, "Namespace(batch_size=96)\nTraceback (most recent call last):\nValueError: bad\n")
    outcome = parse_log_file(registry, ParseRequest(path=path, format="paddlenlp"))
    assert outcome.legacy.JOB_FAIL_FLAG == 1 and outcome.result.throughput is None


def test_no_completed_steps(registry, tmp_path):
    path = log(tmp_path, ':::MLLOG {"time_ms": 1, "key": "run_start", "value": null, "metadata": {}}\n')
    outcome = parse_log_file(registry, ParseRequest(path=path))
    assert outcome.result.failure_reason == "no completed training steps were found in the log"
    assert outcome.legacy.JOB_FAIL_FLAG == 1


def test_forced_format_with_no_line_of_it_is_an_error(registry, tmp_path):
    path = log(tmp_path, steps(3))
    with pytest.raises(UserInputError, match="no line is in the 'megatron' format"):
        parse_log_file(registry, ParseRequest(path=path, format="megatron"))


def test_ingesting_the_same_log_twice_is_a_no_op(registry, tmp_path):
    path = log(tmp_path, steps(30))
    out = tmp_path / "results"
    first = parse_log_file(registry, ParseRequest(path=path, case="bert_base", gpus=1))
    added, run_dir = ingest(first, out)
    assert added and (run_dir / "result.json").is_file()
    assert len(list((run_dir / "index").iterdir())) == 1
    again = parse_log_file(registry, ParseRequest(path=path, case="bert_base", gpus=2, method="last"))
    assert ingest(again, out) == (False, run_dir)
    with sqlite3.connect(out / "harness.db") as conn:
        rows = conn.execute("SELECT source, source_sha256 FROM runs").fetchall()
    assert rows == [("ingested", first.result.source_sha256)]


def test_traceback_behind_an_mpi_prefix_is_a_failure(registry, tmp_path):
    path = log(tmp_path, steps(30) + "[1,3]<stderr>:Traceback (most recent call last):\n"
                                      "Sun May 29 15:01:07 2022[1,3]<stderr>:RuntimeError: NCCL error\n")
    outcome = parse_log_file(registry, ParseRequest(path=path))
    assert outcome.legacy.JOB_FAIL_FLAG == 1
    assert "RuntimeError: NCCL error" in outcome.result.failure_reason


def test_warnings_and_error_words_are_not_failures(registry, tmp_path):
    noise = ("/usr/lib/python3.8/site-packages/x.py:1: DeprecationWarning: np.int is deprecated\n"
             "[1,0]<stderr>:  Error message:     failed to bind memory\n"
             "UserWarning: the loss scale is being reduced\n")
    outcome = parse_log_file(registry, ParseRequest(path=log(tmp_path, noise + steps(30))))
    assert outcome.legacy.JOB_FAIL_FLAG == 0


def test_infinite_loss_scale_is_not_a_nan_loss(registry, tmp_path):
    outcome = parse_log_file(registry, ParseRequest(path=log(tmp_path, "loss_scale: inf, skipping step\n" + steps(30))))
    assert outcome.legacy.JOB_FAIL_FLAG == 0
    outcome = parse_log_file(registry, ParseRequest(path=log(tmp_path, "eval loss: nan\n" + steps(30), "b_log")))
    assert outcome.legacy.JOB_FAIL_FLAG == 1


def test_an_ingested_log_is_judged_below_uniform_at_any_learning_rate(registry):
    # The log of a 14-step gpt3_1.3B run on an H200: its learning rates are logged, but an
    # ingested log's config holds no schedule to say how far into the warm-up they are, so the
    # rule is judged as on any log (a recorded run of it is not: tests/harness/test_health.py).
    path = (Path(__file__).parent / "data" / "h200_gpt_runs"
            / "20261128-024658-gpt3_1.3B-pytorch-nvidia-d090" / "train.log")
    result = parse_log_file(registry, ParseRequest(path=path, case="gpt3_1.3B")).result
    assert len(result.log_summary.learning_rate_curve) == 14 and result.health.peak_learning_rate is None
    assert result.health.status == "unhealthy"
    assert result.health.reasons == ["mean loss of the window's last quarter 11.12 (steps 14-14) is above "
                                     "the uniform-guess loss 10.83"]
