"""gluon-cv and NGC MXNet ResNet log formats on samples in their published shapes."""

from __future__ import annotations

import pytest

from harness_mxnet.mxnet_log import GluonCVFormat, MXNetDLEFormat

GLUON = (
    "INFO:root:Namespace(batch_size=64, num_gpus=8)\n"
    "INFO:root:Epoch[0] Batch [49]\tSpeed: 1234.567890 samples/sec\taccuracy=0.001000\tlr=0.100000\n"
    "INFO:root:Epoch[0] Batch [99]\tSpeed: 1300.500000 samples/sec\taccuracy=0.002000\tlr=0.100000\n"
    "INFO:root:[Epoch 0] training: accuracy=0.012345\n"
    "INFO:root:[Epoch 0] speed: 1250 samples/sec\ttime cost: 1036.123456\n"
    "INFO:root:[Epoch 0] validation: err-top1=0.950000 err-top5=0.850000\n"
    "INFO:root:Epoch[1] Batch [49]\tSpeed: 1290.000000 samples/sec\taccuracy=0.010000\tlr=0.200000\n"
    "INFO:root:[Epoch 1] speed: 1280 samples/sec\ttime cost: 1000.000000\n"
)


def write(tmp_path, text: str):
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    return path


def test_gluoncv_batch_lines_and_epoch_summaries(tmp_path):
    parsed = GluonCVFormat().parse_file(write(tmp_path, GLUON), gpus=8, batch_size=64)
    assert [s.throughput for s in parsed.steps] == [1234.56789, 1300.5, 1290.0]
    # gluon-cv numbers batches from 0: "Batch [49]" is the 50th step; epoch 1 continues epoch 0
    assert [s.step for s in parsed.steps] == [50, 100, 150]
    assert [s.learning_rate for s in parsed.steps] == [0.1, 0.1, 0.2]
    assert parsed.unit == "samples/s"
    assert parsed.meta["epoch_throughput"] == [1250.0, 1280.0]
    assert parsed.framework_reported == 1280.0
    assert parsed.meta["throughput_scope"] == "total"  # Speed is the whole process, all its GPUs


def test_gluoncv_speedometer_range_and_loss(tmp_path):
    text = "Epoch[2] Batch [20-40]\tSpeed: 456.78 samples/sec\tcross-entropy=6.543210\tlr=0.050000\n"
    parsed = GluonCVFormat().parse_file(write(tmp_path, text))
    # MXNet's Speedometer prints the 0-based index of the batch just done: 41 batches
    assert parsed.steps[0].step == 41 and parsed.steps[0].throughput == 456.78
    assert parsed.steps[0].loss is None  # cross-entropy is a metric here, not a loss key
    text = "Epoch[0] Batch [10]\tSpeed: 100.0 samples/sec\tloss=nan\n"
    parsed = GluonCVFormat().parse_file(write(tmp_path, text))
    assert parsed.errors and "non-finite loss" in parsed.errors[0]


def test_gluoncv_detection():
    fmt = GluonCVFormat()
    assert fmt.detect("INFO:root:Epoch[0] Batch [49]\tSpeed: 1234.5 samples/sec\taccuracy=0.1\tlr=0.1\n")
    # Logs holding only per-epoch lines (action recognition) or other layouts are gluon-cv too.
    assert fmt.detect("INFO:root:[Epoch 0] speed: 1250 samples/sec\ttime cost: 1036.1\n")
    assert fmt.detect("Epoch[136]\t\tSpeed: 1215 samples/sec over 122 secs\tloss=0.000350\n")
    assert fmt.detect("[Epoch 198][Batch 99], LR: 1.00E-05, Speed: 181.084 samples/sec, ObjLoss=8.454\n")
    assert not fmt.detect("Speed: fast\n")


def test_gluoncv_detection_layout(tmp_path):
    text = ("[Epoch 0][Batch 99], LR: 1.00E-04, Speed: 100.0 samples/sec, ObjLoss=9.1, ClassLoss=2.0\n"
            "[Epoch 0][Batch 199], LR: 1.00E-04, Speed: 110.0 samples/sec, ObjLoss=9.0, ClassLoss=2.0\n"
            "[Epoch 0] Training cost: 139.986, ObjLoss=8.459\n"
            "[Epoch 1][Batch 99], LR: 2.00E-04, Speed: 120.0 samples/sec, ObjLoss=8.9, ClassLoss=1.9\n")
    parsed = GluonCVFormat().parse_file(write(tmp_path, text))
    assert [s.throughput for s in parsed.steps] == [100.0, 110.0, 120.0]
    assert [s.step for s in parsed.steps] == [99, 199, 299]
    assert [s.learning_rate for s in parsed.steps] == [1e-4, 1e-4, 2e-4]
    assert parsed.steps[0].loss == 9.1


def test_gluoncv_per_epoch_only_logs_become_records(tmp_path):
    pose = ("Epoch[0] Batch [99]\tSpeed: 900.3 samples/sec\tloss=0.00035\tlr=0.00001\n"
            "Epoch[0]\t\tSpeed: 1215 samples/sec over 122 secs\tloss=0.000350\n")
    parsed = GluonCVFormat().parse_file(write(tmp_path, pose))
    assert [s.throughput for s in parsed.steps] == [900.3]  # batch lines are the records
    assert parsed.meta["epoch_throughput"] == [1215.0]
    action = ("[Epoch 000] training: accuracy=10.787260\t loss=3.828077\n"
              "[Epoch 000] speed: 141 samples/sec\ttime cost: 26.926219\n"
              "[Epoch 001] speed: 321 samples/sec\ttime cost: 15.457790\n")
    parsed = GluonCVFormat().parse_file(write(tmp_path, action))
    assert [(s.step, s.throughput, s.step_time_s) for s in parsed.steps] == [
        (1, 141.0, 26.926219), (2, 321.0, 15.45779)]



def test_gluoncv_epoch_records_end_at_the_epochs_last_iteration_where_the_log_states_its_size(tmp_path):
    """Warm-up is in iterations: 10 of them lie inside the first 13-iteration epoch, so only that
    epoch is skipped (counting an epoch as one iteration skipped ten epochs)."""
    lines = ["Total batch size is set to 256 on 8 GPUs\n", "Load 3570 training samples and 1530 validation samples.\n"]
    lines += [f"[Epoch {e:03d}] speed: {100 if e == 0 else 300 + e} samples/sec\ttime cost: 15.0\n" for e in range(12)]
    parsed = GluonCVFormat().parse_file(write(tmp_path, "".join(lines)))
    assert [s.step for s in parsed.steps][:3] == [13, 26, 39]  # floor(3570 / 256) = 13
    assert parsed.meta["iterations_per_epoch"] == 13

    from harness.logparse.methods import aggregate
    from harness.logparse.summary import stream_log

    streamed = stream_log(write(tmp_path, "".join(lines)), GluonCVFormat())
    result = aggregate("harness", streamed.parsed, streamed.summary)
    assert result.used == 11 and result.value == pytest.approx(sum(300 + e for e in range(1, 12)) / 11)

MXNET_DLE = (
    "[1,0]<stdout>:DLL 2023-07-31 06:24:28.055105 - PARAMETER arch : resnetv15  num_layers : 50  "
    "gpus : [0, 1, 2, 3, 4, 5, 6, 7]  kv_store : horovod  dtype : float16  batch_size : 2048  num_epochs : 3\n"
    "[1,0]<stderr>:2023-07-31 06:24:30,549:INFO: starting epoch 0\n"
    "[1,0]<stdout>:DLL 2023-07-31 06:24:53.060273 - Epoch: 0 Iteration: 19  train.loss : 7.10  "
    "train.ips : 9000.5 images/s train.lr : 0.0019456 \n"
    "[1,0]<stdout>:DLL 2023-07-31 06:27:15.674897 - Epoch: 0  train.loss : 6.40  train.ips : 11596.0 images/s\n"
    "[1,0]<stdout>:DLL 2023-07-31 06:27:19.210118 - Epoch: 1 Iteration: 19  train.loss : 6.28  "
    "train.ips : 11586.8 images/s train.lr : 0.896 \n"
    "[1,0]<stdout>:DLL 2023-07-31 06:29:04.591886 - Epoch: 1  train.loss : 6.16  train.ips : 10000.0 images/s\n"
    "[1,0]<stdout>:DLL 2023-07-31 06:30:36.574038 - Epoch: 2  train.loss : 6.05  train.ips : 12000.0 images/s\n"
    "[1,0]<stdout>:DLL 2023-07-31 06:30:36.590096 - Summary: train.loss : 6.05  train.ips : 10756.7 images/s\n"
)


def test_mxnet_dle_epochs_summary_and_gpu_list(tmp_path):
    parsed = MXNetDLEFormat().parse_file(write(tmp_path, MXNET_DLE))
    assert [s.throughput for s in parsed.steps] == [9000.5, 11586.8]
    assert [s.step for s in parsed.steps] == [20, 40]
    assert parsed.meta["epoch_throughput"] == [11596.0, 10000.0, 12000.0]
    assert parsed.framework_reported == 10756.7
    assert parsed.meta["gpus"] == 8 and parsed.meta["global_batch_size"] == 2048
    assert parsed.unit == "images/s"


def test_mxnet_dle_default_method_is_harmonic_epoch(tmp_path):
    from harness.logparse.methods import aggregate
    from harness.logparse.summary import stream_log

    streamed = stream_log(write(tmp_path, MXNET_DLE), MXNetDLEFormat())
    result = aggregate(MXNetDLEFormat.default_method, streamed.parsed, streamed.summary)
    assert result.value == pytest.approx(2 / (1 / 10000.0 + 1 / 12000.0))


def test_mxnet_dle_detection_ignores_other_dllogger_lines():
    fmt = MXNetDLEFormat()
    assert fmt.detect("[1,0]<stdout>:DLL 2023-07-31 06:27:19.210118 - Epoch: 1 Iteration: 19  train.ips : 1.0 images/s\n")
    assert not fmt.detect("DLL 2023-08-04 05:46:28.192913 - Epoch: 0 Iteration: 1  train.total_ips : 25.20 images/s\n")


def test_gluoncv_cifar_epochs_are_records(tmp_path):
    """train_cifar10.py prints only each epoch's time: 50000 // (batch x GPUs) whole batches per epoch."""
    text = ("INFO:root:Namespace(batch_size=32, lr=0.1, model='cifar_resnext29_16x64d', num_epochs=3, "
            "num_gpus=4, num_workers=4)\n"
            "INFO:root:[Epoch 0] train=0.25 val=0.38 loss=2.388983 time: 121.0\n"
            "INFO:root:[Epoch 1] train=0.45 val=0.50 loss=1.5 time: 104.0\n"
            "INFO:root:[Epoch 2] train=0.55 val=0.60 loss=1.2 time: 100.0\n")
    fmt = GluonCVFormat()
    assert fmt.detect(text.splitlines()[1])
    parsed = fmt.parse_file(write(tmp_path, text))
    assert [s.step for s in parsed.steps] == [390, 780, 1170]  # 50000 // 128 iterations per epoch
    assert [s.throughput for s in parsed.steps] == pytest.approx([49920 / 121.0, 49920 / 104.0, 49920 / 100.0])
    assert parsed.steps[-1].loss == 1.2 and parsed.meta["iterations_per_epoch"] == 390
