"""NVIDIA DLLogger formats of the NGC PyTorch examples (BERT, ResNet-50)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_pytorch.dllogger_log import DLLoggerFormat, PyTorchDLEFormat

LOGS = Path(__file__).resolve().parents[3] / ".." / "shared" / "logs"

# 2023 layout: plain DLL lines, Config namespace, batch per GPU, skipped steps.
BERT_PLAIN = (
    "+ python3 -m torch.distributed.launch --nproc_per_node=8 /workspace/bert/run_pretraining.py\n"
    'DLL 2023-07-28 15:17:59.492369 - PARAMETER Config : ["Namespace(fp16=True, '
    'gradient_accumulation_steps=88, max_steps=3, train_batch_size=8448)"]\n'
    "DLL 2023-07-28 15:18:07.193462 - PARAMETER batch_size_per_gpu : 96 \n"
    "DLL 2023-07-28 15:20:00.000000 - Training Epoch: 0 Training Iteration: 1  average_loss : 11.18  "
    "step_loss : 11.20  learning_rate : 0.001  skipped_steps : 1 \n"
    "DLL 2023-07-28 15:20:10.000000 - Training Epoch: 0 Training Iteration: 2  average_loss : 11.10  "
    "step_loss : 11.05  learning_rate : 0.002  skipped_steps : 1 \n"
    "DLL 2023-07-28 15:20:30.000000 - Training Epoch: 0 Training Iteration: 3  final_loss : 10.90 None\n"
    "DLL 2023-07-28 15:20:32.000000 -  e2e_train_time : 40.0 s training_sequences_per_second : 5000.5 "
    "sequences/s final_loss : 10.90 None raw_train_time : 30.0 s\n"
)

# 2022 mpirun layout: rank prefixes with dates, lines glued behind tqdm bars and \r redraws.
BERT_MPI = (
    "Iteration:   0%|          | 0/1147 [00:00<?, ?it/s]Sun May 29 14:55:59 2022[1,0]<stdout>:"
    "[W pthreadpool-cpp.cc:99] Warning: Leaking Caffe2 thread-pool after fork.\n"
    "Iteration:   7%|\u258b         | 78/1147 [00:56<12:53,  1.38it/s]\rIteration:   7%|\u258b  | 79/1147"
    " [00:57<12:52,  1.38it/s]Sun May 29 14:57:11 2022[1,0]<stdout>:DLL 2022-05-29 14:57:11.448247 - "
    "Training Epoch: 0 Training Iteration: 27  average_loss : 8.14214015007019  step_loss : "
    "8.126195907592773  learning_rate : 0.0018973665961010274 \n"
    "Sun May 29 14:57:11 2022[1,3]<stdout>:DLL 2022-05-29 14:57:11.448247 - Training Epoch: 0 "
    "Training Iteration: 27  average_loss : 99.0  step_loss : 99.0  learning_rate : 0.5 \n"
    "Iteration:  14%|\u2588\u258d        | 166/1147 [02:14<11:50,  1.38it/s]Sun May 29 14:58:29 2022[1,0]<stdout>:"
    "DLL 2022-05-29 14:58:29.389489 - Training Epoch: 0 Training Iteration: 28  average_loss : "
    "8.132159666581588  step_loss : 8.163878440856934  learning_rate : 0.0015491933384829666 \n"
    "Sun May 29 15:01:07 2022[1,0]<stdout>:DLL 2022-05-29 15:01:07.641938 -  e2e_train_time : "
    "2344.8737654685974  training_sequences_per_second : 3496.938592099369  final_loss : "
    "8.11567497253418  raw_train_time : 2319.19428563118 Sun May 29 15:01:07 2022[1,0]<stdout>:\n"
)


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    return path


def test_bert_steps_from_timestamps_and_framework_figure(tmp_path):
    parsed = DLLoggerFormat().parse_file(write(tmp_path, BERT_PLAIN))
    assert [s.step for s in parsed.steps] == [1, 2, 3]
    assert parsed.steps[0].throughput is None  # no previous line to time it against
    global_batch = 96 * 88 * 8
    assert parsed.steps[1].step_time_s == pytest.approx(10.0)
    assert parsed.steps[1].throughput == pytest.approx(global_batch / 10.0)
    assert parsed.steps[2].throughput == pytest.approx(global_batch / 20.0)
    assert parsed.steps[1].loss == pytest.approx(11.05)  # step_loss preferred over the running average
    assert parsed.framework_reported == pytest.approx(5000.5)
    assert parsed.unit == "sequences/s"
    assert parsed.meta["gpus"] == 8 and parsed.meta["global_batch_size"] == global_batch
    # NGC's own formula from the same fields: 96 x 8 x ((3 + 1 skipped) x 88 - 4) / 30 s.
    assert parsed.meta["recomputed_throughput"] == pytest.approx(96 * 8 * (4 * 88 - 4) / 30.0)


def test_bert_mpi_prefixes_tqdm_garbage_and_other_ranks(tmp_path):
    parsed = DLLoggerFormat().parse_file(write(tmp_path, BERT_MPI), gpus=32)
    assert [s.step for s in parsed.steps] == [27, 28]  # rank 3's copy of iteration 27 is ignored
    assert parsed.steps[0].loss == pytest.approx(8.126195907592773)
    assert parsed.steps[1].step_time_s == pytest.approx(77.941242, rel=1e-6)
    assert parsed.framework_reported == pytest.approx(3496.938592099369)
    assert parsed.meta["raw_train_time"] == pytest.approx(2319.19428563118)
    assert not parsed.errors


def test_bert_detection():
    fmt = DLLoggerFormat()
    assert fmt.detect(BERT_MPI.splitlines()[2])
    assert fmt.detect(BERT_PLAIN.splitlines()[-1])
    assert not fmt.detect(BERT_PLAIN.splitlines()[2])  # a PARAMETER line says nothing of the format
    assert not fmt.detect("DLL 2023-08-01 03:13:22.663597 - Iteration: 3  throughput_train : 1239.665 sequences/s\n")


@pytest.mark.skipif(not (LOGS / "manifest.json").is_file(), reason=f"real-log corpus not found at {LOGS}")
def test_ngc_formula_recomputed_from_real_logs_equals_the_printed_figure():
    entries = [e for e in json.loads((LOGS / "manifest.json").read_text())
               if e["format"] == "dllogger" and e["method"].startswith("re-apply")]
    assert len(entries) == 3
    for entry in entries:
        parsed = DLLoggerFormat().parse_file(LOGS / entry["path"])
        assert parsed.meta["recomputed_throughput"] == pytest.approx(entry["published_value"], rel=1e-5)
        assert parsed.framework_reported == pytest.approx(entry["framework_printed_value"])


RESNET = (
    "DLL 2023-08-04 05:46:18.018259 - PARAMETER data : /imagenet  arch : resnet50  epochs : 1  batch_size : 256\n"
    "DLL 2023-08-04 05:46:28.192913 - Epoch: 0 Iteration: 1  train.loss : 7.14390 None train.compute_ips : "
    "25.22 images/s train.total_ips : 25.20 images/s train.lr : 0.1  train.grad_scale : 1.00000 None\n"
    "DLL 2023-08-04 05:46:28.892809 - Epoch: 0 Iteration: 2  train.loss : 7.85750 None train.compute_ips : "
    "366.98 images/s train.total_ips : 365.85 images/s train.lr : 0.1  train.grad_scale : 1.00000 None\n"
    "DLL 2023-08-04 05:47:41.680368 - Epoch: 0  train.loss : 6.43294 None train.compute_ips : 367.46 images/s "
    "train.total_ips : 366.74 images/s train.lr : 0.1\n"
    "DLL 2023-08-04 05:47:42.970732 - Summary: train.loss : 6.43294 None train.compute_ips : 367.46 images/s "
    "train.total_ips : 366.74 images/s\n"
)


def test_resnet_total_and_compute_ips(tmp_path):
    path = write(tmp_path, RESNET)
    parsed = PyTorchDLEFormat().parse_file(path)
    assert [s.throughput for s in parsed.steps] == [25.20, 365.85]
    assert parsed.framework_reported == 366.74
    assert parsed.meta["epoch_throughput"] == [366.74]
    assert parsed.meta["batch_size"] == 256
    assert parsed.steps[1].loss == pytest.approx(7.8575)
    compute = PyTorchDLEFormat().parse_file(path, use_compute_ips=True)
    assert [s.throughput for s in compute.steps] == [25.22, 366.98]


def test_resnet_step_times_from_consecutive_iteration_lines(tmp_path):
    """The step's wall time, as BERT's: agrees with the batch over the logged images/s."""
    parsed = PyTorchDLEFormat().parse_file(write(tmp_path, RESNET))
    assert parsed.steps[0].step_time_s is None
    assert parsed.steps[1].step_time_s == pytest.approx(0.699896, abs=1e-6)
    assert parsed.steps[1].step_time_s == pytest.approx(256 / 365.85, rel=1e-3)
    # The first step after an epoch's line (validation, a new loader) gets none.
    after_epoch = RESNET.replace("DLL 2023-08-04 05:47:42.970732 - Summary", (
        "DLL 2023-08-04 05:47:50.000000 - Epoch: 1 Iteration: 1  train.loss : 6.1 None "
        "train.total_ips : 360.0 images/s train.lr : 0.1\nDLL 2023-08-04 05:47:42.970732 - Summary"))
    steps = PyTorchDLEFormat().parse_file(write(tmp_path, after_epoch)).steps
    assert len(steps) == 3 and steps[2].step_time_s is None


def test_resnet_old_img_per_s_lines_with_mpi_prefix(tmp_path):
    text = ("Wed Jun  1 10:54:47 2022[1,0]<stdout>:DLL 2022-06-01 10:54:47.460408 - Epoch: 0 Iteration: 2  "
            "train.loss : 6.99618  train.total_ips : 21193.44 img/s\n")
    parsed = PyTorchDLEFormat().parse_file(write(tmp_path, text))
    assert parsed.steps[0].throughput == 21193.44 and parsed.unit == "images/s"
    assert PyTorchDLEFormat().detect(text)


@pytest.mark.parametrize("fmt", ["dllogger", "pytorch_dle"])
def test_harness_peak_memory_line_is_the_framework_peak(tmp_path, fmt):
    from harness_pytorch.dllogger_log import DLLoggerFormat, PyTorchDLEFormat

    lines = {
        "dllogger": "DLL 2023-07-28 14:23:09.889653 - Training Epoch: 0 Training Iteration: 1  average_loss : 11.18",
        "pytorch_dle": "DLL 2023-08-04 05:46:28.892809 - Epoch: 0 Iteration: 1  train.loss : 7.8 None "
                       "train.total_ips : 365.85 images/s",
    }
    log = tmp_path / "train.log"
    log.write_text(lines[fmt] + "\n> peak memory (MB): 1536.0 (cuda max allocated, max over ranks)\n")
    parser = DLLoggerFormat() if fmt == "dllogger" else PyTorchDLEFormat()
    assert parser.parse_file(log).peak_memory_bytes == 1536 * 2**20
