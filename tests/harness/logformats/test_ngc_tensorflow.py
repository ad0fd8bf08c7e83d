"""NGC TensorFlow DLLogger formats: BERT throughput_train, ResNet-50 total_ips."""

from __future__ import annotations

import pytest

from harness.logformats.ngc_tensorflow import TFBertFormat, TFResNetFormat

TF_BERT = (
    "DLL 2023-08-01 03:57:41.106103 - Iteration: 1  throughput_train : 278.624 sequences/s mlm_loss : 10.4377"
    "  nsp_loss : 0.6962  total_loss : 11.1340  avg_loss_step : 11.1220  learning_rate : 0.0  loss_scaler : 4294967296 \n"
    "DLL 2023-08-01 03:59:45.237877 - Iteration: 1  throughput_train : 544.691 sequences/s mlm_loss : 10.4207"
    "  nsp_loss : 0.6879  total_loss : 11.1086  avg_loss_step : 11.1230  learning_rate : 0.0  loss_scaler : 2147483648 \n"
    "DLL 2023-08-01 04:10:39.172208 - Iteration: 2  throughput_train : 538.423 sequences/s mlm_loss : 10.4178"
    "  nsp_loss : 0.7023  total_loss : 11.1202  avg_loss_step : 11.1223  learning_rate : 3.75e-07 \n"
    "INFO:tensorflow:Throughput Average (sentences/sec) with overhead = 455.91\n"
    "INFO:tensorflow:Throughput Average (sentences/sec) = 464.65\n"
    "DLL 2023-08-01 05:41:53.920137 -  throughput_train : 464.654 sequences/s\n"
    "INFO:tensorflow:Throughput Average (sentences/sec) = 758.28\n"
    "DLL 2023-08-01 05:42:05.594867 -  throughput_val : 758.2846324205155 \n"
)
TF_BERT_MPI = (
    "Sun May 29 09:48:38 2022[1,0]<stdout>:DLL 2022-05-29 09:48:38.090836 - Iteration: 2  throughput_train : "
    "1109.447 seq/s mlm_loss : 10.4160  nsp_loss : 0.6774  total_loss : 11.0935  avg_loss_step : 11.1167  "
    "learning_rate : 0.0 \n"
)
TF_RESNET = (
    "DLL 2022-11-24 03:54:04.072998 - PARAMETER arch : resnet50  mode : training_benchmark  batch_size : 256"
    "  num_iter : 500\n"
    "DLL 2022-11-24 03:57:01.741126 - (0, 200) total_ips : 417.7218198532487 \n"
    "DLL 2022-11-24 03:57:07.886213 - (0, 210) total_ips : 415.7120505726513 \n"
    "DLL 2022-11-24 04:00:06.586395 - () train_throughput : 416.1881084364622 images/s\n"
)


def test_tf_bert_iterations_and_summary(tmp_path):
    path = tmp_path / "log"
    path.write_text(TF_BERT)
    parsed = TFBertFormat().parse_file(path)
    assert [s.step for s in parsed.steps] == [1, 1, 2]  # the repeated loss-scale warm-up line is kept
    assert [s.throughput for s in parsed.steps] == [278.624, 544.691, 538.423]
    assert parsed.steps[0].loss == pytest.approx(11.1340)
    assert parsed.framework_reported == pytest.approx(464.654)  # not the validation figure
    assert parsed.unit == "sequences/s"


def test_tf_bert_mpi_line_and_seq_per_s_unit(tmp_path):
    path = tmp_path / "log"
    path.write_text(TF_BERT_MPI)
    parsed = TFBertFormat().parse_file(path)
    assert parsed.steps[0].throughput == 1109.447 and parsed.unit == "sequences/s"
    assert TFBertFormat().detect(TF_BERT_MPI)


def test_tf_resnet(tmp_path):
    path = tmp_path / "log"
    path.write_text(TF_RESNET)
    parsed = TFResNetFormat().parse_file(path)
    assert [(s.step, s.throughput) for s in parsed.steps] == [(200, 417.7218198532487), (210, 415.7120505726513)]
    assert parsed.framework_reported == pytest.approx(416.1881084364622)
    assert parsed.meta["batch_size"] == 256 and parsed.unit == "images/s"


def test_detection_does_not_overlap():
    lines = TF_BERT.splitlines(keepends=True) + TF_RESNET.splitlines(keepends=True)
    bert_hits = [line for line in lines if TFBertFormat().detect(line)]
    resnet_hits = [line for line in lines if TFResNetFormat().detect(line)]
    assert len(bert_hits) == 3 and len(resnet_hits) == 2
    assert not set(bert_hits) & set(resnet_hits)
    assert not TFResNetFormat().detect(
        "DLL 2023-08-04 05:46:28.192913 - Epoch: 0 Iteration: 1  train.total_ips : 25.20 images/s\n")
