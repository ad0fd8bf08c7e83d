"""PaddleNLP and PaddleClas log formats on samples in the exact shapes Paddle prints."""

from __future__ import annotations

import pytest

from harness_paddle.paddle_log import PaddleClasFormat, PaddleNLPFormat
from harness.logparse.recorder import PER_DEVICE, TOTAL

TOTAL_STEP = (
    "total step: {step}, epoch: 0, batch: {batch}, loss: 11.088567, avg_reader_cost: 0.05867 sec, "
    "avg_batch_cost: 0.35035 sec, avg_samples: 96.00000, ips: {ips} sequences/sec\n"
)
TOBAL_STEP = (
    "tobal step: {step}, epoch: 0, batch: {batch}, loss: 11.246908, avg_reader_cost: 0.05589 sec, "
    "avg_batch_cost: 0.45558 sec, avg_samples: 96.00000, ips: {ips} sequences/sec\n"
)
GLOBAL_STEP = (
    "[2022-08-01 10:00:00,000] [    INFO] - global step {step}, epoch: 0, batch: {batch}, "
    "loss: 9.876543210, avg_reader_cost: 0.00020 sec, avg_batch_cost: 0.50000 sec, speed: 2.00 step/s, "
    "ips_total: {total} tokens/s, ips: {ips} tokens/s, learning rate: 1.00000e-05\n"
)
TRAIN_BRACKET = (
    "[2022-10-10 08:00:00,000] [    INFO] - [train] epoch: 0, batch: {batch}, loss: 10.987654321, "
    "avg_batch_cost: 1.25000 sec, speed: 0.80 step/s, ips_total: {total} tokens/s, ips: {ips} tokens/s, "
    "learning rate: 2.50000e-06\n"
)
CLAS_STATIC = (
    "[2023/07/28 06:42:45] ppcls INFO: epoch:{epoch}   train step:{step}   lr: 0.100000, loss:  8.3496 "
    "top1:  0.0000 top5: -0.0156 batch_cost: 0.64841 s, reader_cost: 0.00067 s, ips: {ips} samples/sec.\n"
)
CLAS_DYNAMIC = (
    "[2022/06/02 16:03:40] ppcls INFO: [Train][Epoch {epoch}/120][Iter: {step}/5005]lr(PiecewiseDecay): "
    "0.10000000, top1: 0.00000, top5: 0.00391, CELoss: 7.03112, loss: 7.03112, batch_cost: 0.32011s, "
    "reader_cost: 0.00070, ips: {ips} images/sec, eta: 2 days, 5:11:05\n"
)


def write(tmp_path, text: str):
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("template", [TOTAL_STEP, TOBAL_STEP])
def test_total_and_misspelled_tobal_step_lines(tmp_path, template):
    lines = "".join(template.format(step=10 * i, batch=10 * i - 1, ips=100.0 + i) for i in range(1, 4))
    parsed = PaddleNLPFormat().parse_file(write(tmp_path, "Namespace(batch_size=96, max_steps=500)\n" + lines))
    assert [s.step for s in parsed.steps] == [10, 20, 30]
    assert [s.throughput for s in parsed.steps] == [101.0, 102.0, 103.0]
    assert parsed.unit == "sequences/s"
    assert parsed.meta["throughput_scope"] == PER_DEVICE
    assert parsed.meta["batch_size"] == 96 and parsed.meta["max_steps"] == 500
    assert parsed.steps[0].step_time_s == pytest.approx(0.35035 if template is TOTAL_STEP else 0.45558)
    assert parsed.steps[0].loss == pytest.approx(11.088567 if template is TOTAL_STEP else 11.246908)


def test_per_gpu_ips_is_scaled_by_the_gpus_hint(tmp_path):
    text = "".join(TOTAL_STEP.format(step=10 * i, batch=i, ips=100.0) for i in range(1, 3))
    parsed = PaddleNLPFormat().parse_file(write(tmp_path, text), seq_len=128, gpus=8, batch_size=96)
    assert [s.throughput for s in parsed.steps] == [800.0, 800.0]
    assert parsed.meta["throughput_scope"] == TOTAL


def test_global_step_prefers_ips_total(tmp_path):
    text = "".join(GLOBAL_STEP.format(step=i, batch=i - 1, total=16384, ips=2048) for i in range(1, 3))
    parsed = PaddleNLPFormat().parse_file(write(tmp_path, text), gpus=8)
    assert [s.throughput for s in parsed.steps] == [16384.0, 16384.0]  # not 8 x 2048 x 8
    assert parsed.unit == "tokens/s"
    assert parsed.steps[0].learning_rate == pytest.approx(1e-5)
    assert parsed.steps[0].step_time_s == pytest.approx(0.5)
    assert parsed.meta["throughput_scope"] == TOTAL


def test_train_bracket_lines_count_steps(tmp_path):
    text = "".join(TRAIN_BRACKET.format(batch=b, total=13653, ips=1707) for b in (9, 19, 29))
    parsed = PaddleNLPFormat().parse_file(write(tmp_path, text))
    assert [s.step for s in parsed.steps] == [1, 2, 3]
    assert parsed.steps[0].throughput == 13653.0 and parsed.steps[0].loss == pytest.approx(10.987654321)


def test_memory_and_nan_loss(tmp_path):
    line = GLOBAL_STEP.format(step=1, batch=0, total=100, ips=100).replace(
        ", learning rate", ", max_memory_allocated: 2048.0 MB, learning rate")
    nan_line = TOTAL_STEP.format(step=20, batch=19, ips=5.0).replace("loss: 11.088567", "loss: nan")
    parsed = PaddleNLPFormat().parse_file(write(tmp_path, line + nan_line))
    assert parsed.peak_memory_bytes == 2048 * 2**20
    assert any("non-finite loss" in e for e in parsed.errors)


def test_nlp_detection_is_specific():
    fmt = PaddleNLPFormat()
    assert fmt.detect(TOTAL_STEP.format(step=10, batch=9, ips=1.0))
    assert fmt.detect(TOBAL_STEP.format(step=10, batch=9, ips=1.0))
    assert fmt.detect(GLOBAL_STEP.format(step=1, batch=0, total=1, ips=1))
    assert fmt.detect(TRAIN_BRACKET.format(batch=1, total=1, ips=1))
    assert not fmt.detect("LAUNCH INFO 2023-07-28 07:49:49,627 ips: None\n")
    assert not fmt.detect(CLAS_STATIC.format(epoch=0, step=10, ips=1.0))
    assert not fmt.detect("global step 10 finished\n")


def test_clas_static_lines_continue_across_epochs(tmp_path):
    text = (
        "LAUNCH INFO 2023-07-28 07:49:49,627 devices: 0,1,2,3,4,5,6,7\n"
        "LAUNCH INFO 2023-07-28 07:49:49,628 nnodes: 1\n"
        + CLAS_STATIC.format(epoch=0, step=10, ips=394.81086)
        + CLAS_STATIC.format(epoch=0, step=20, ips=394.43388)
        + "[2022/06/02 16:06:58] ppcls INFO: END epoch:0  train  loss:  2.1362 top1:  0.5392 batch_cost: 0.20459 s,\n"
        + CLAS_STATIC.format(epoch=1, step=10, ips=393.0)
    )
    parsed = PaddleClasFormat().parse_file(write(tmp_path, text))
    assert [s.step for s in parsed.steps] == [10, 20, 30]
    assert parsed.steps[0].throughput == pytest.approx(394.81086)
    assert parsed.steps[0].learning_rate == pytest.approx(0.1)
    assert parsed.steps[0].step_time_s == pytest.approx(0.64841)
    assert parsed.unit == "samples/s"
    assert parsed.meta["gpus"] == 8  # from the launcher's configuration
    assert parsed.meta["throughput_scope"] == PER_DEVICE


def test_clas_dynamic_lines(tmp_path):
    text = "".join(CLAS_DYNAMIC.format(epoch=1, step=s, ips=800.0 + s) for s in (10, 20))
    parsed = PaddleClasFormat().parse_file(write(tmp_path, text), gpus=4)
    assert [s.throughput for s in parsed.steps] == [4 * 810.0, 4 * 820.0]
    assert parsed.unit == "images/s"
    assert parsed.steps[0].loss == pytest.approx(7.03112)
    assert parsed.meta["steps_per_epoch"] == 5005


def test_clas_detection():
    fmt = PaddleClasFormat()
    assert fmt.detect(CLAS_STATIC.format(epoch=0, step=10, ips=1.0))
    assert fmt.detect(CLAS_DYNAMIC.format(epoch=1, step=10, ips=1.0))
    assert not fmt.detect(TOTAL_STEP.format(step=10, batch=9, ips=1.0))
    assert not fmt.detect("ips: 127.0.0.1\n")
