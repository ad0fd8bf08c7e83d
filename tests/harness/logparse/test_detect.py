"""Auto-detection from the first characteristic line, and the no-match error."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.logparse.detect import detect_format
from harness.app import Harness

SAMPLES = {
    "megatron": " iteration       10/     100 | consumed samples:          160 | elapsed time per iteration "
                "(ms): 1234.5 | learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 1.08E+01 |\n",
    "paddlenlp": "tobal step: 10, epoch: 0, batch: 9, loss: 11.2, avg_batch_cost: 0.45 sec, ips: 187.6 sequences/sec\n",
    "paddleclas": "[2023/07/28 06:42:45] ppcls INFO: epoch:0   train step:10   lr: 0.100000, loss:  8.3496 "
                  "batch_cost: 0.64841 s, reader_cost: 0.00067 s, ips: 394.81086 samples/sec.\n",
    "gluoncv": "INFO:root:Epoch[0] Batch [49]\tSpeed: 1234.567890 samples/sec\taccuracy=0.001000\tlr=0.100000\n",
    "flagperf": '[PerfLog] {"event": "STEP_END", "value": {"global_steps": 1, "seq/s": 1.0}}\n',
    "mllog": ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "run_start", '
             '"value": null, "metadata": {}}\n',
    "dllogger": "[1,0]<stdout>:DLL 2022-05-29 14:57:11.448247 - Training Epoch: 0 Training Iteration: 27  "
                "average_loss : 8.14  step_loss : 8.12  learning_rate : 0.0018 \n",
    "pytorch_dle": "DLL 2023-08-04 05:46:28.892809 - Epoch: 0 Iteration: 2  train.loss : 7.85750 None "
                   "train.compute_ips : 366.98 images/s train.total_ips : 365.85 images/s\n",
    "mxnet_dle": "[1,0]<stdout>:DLL 2023-07-31 09:00:53.060273 - Epoch: 0 Iteration: 19  train.loss : 7.1  "
                 "train.ips : 265.8 images/s train.lr : 0.0019 \n",
    "dllogger_tf_bert": "DLL 2023-08-01 03:13:22.663597 - Iteration: 3  throughput_train : 1239.665 sequences/s "
                        "total_loss : 11.2 \n",
    "tensorflow_dle": "DLL 2022-11-24 03:57:01.741126 - (0, 200) total_ips : 417.7218198532487 \n",
    "deepspeed": "[2022-11-22 10:03:37,042] [INFO] [timer.py:198:stop] 0/200, RunningAvgSamplesPerSec=90.3, "
                 "CurrSamplesPerSec=82.7, MemAllocated=0.72GB, MaxMemAllocated=7.0GB\n",
}
PREAMBLE = "".join(f"setting up {i}: ips: none, loss: fine, speed: ok\n" for i in range(50))


@pytest.fixture(scope="module")
def formats():
    registry = Harness.load(load_entrypoints=False).registry
    return list(registry.log_formats.items.values())


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_format_is_detected_after_a_preamble(name, formats, tmp_path):
    path = tmp_path / "train.log"
    path.write_text(PREAMBLE + SAMPLES[name] * 3)
    assert detect_format(path, formats).name == name


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_no_other_format_claims_the_sample(name, formats):
    claimed = [f.name for f in formats if f.detect(SAMPLES[name])]
    assert claimed == [name]


def test_no_recognisable_line_is_a_clear_error(formats, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(PREAMBLE)
    with pytest.raises(UserInputError, match="none of its 50 lines is recognised") as info:
        detect_format(path, formats)
    assert "--format" in str(info.value) and "--keyword" in str(info.value)


def test_detection_stops_after_max_lines(formats, tmp_path):
    path = tmp_path / "train.log"
    path.write_text(PREAMBLE + SAMPLES["megatron"])
    with pytest.raises(UserInputError, match="first 10 lines"):
        detect_format(path, formats, max_lines=10)
