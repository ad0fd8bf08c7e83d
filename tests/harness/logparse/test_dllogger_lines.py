"""The DLLogger line tokenizer shared by the NGC formats."""

from __future__ import annotations

from harness.logparse.dllogger import parse_dll_line


def test_step_kinds():
    rec = parse_dll_line("DLL 2023-08-04 05:46:28.192913 - Epoch: 0 Iteration: 1  train.loss : 7.14390 None "
                         "train.total_ips : 25.20 images/s train.lr : 0.1 ")
    assert (rec.kind, rec.epoch, rec.iteration) == ("step", 0, 1)
    assert rec.number("train.total_ips") == 25.2 and rec.units["train.total_ips"] == "images/s"
    assert "train.loss" not in rec.units
    assert parse_dll_line("DLL 2023-08-04 05:47:41.680368 - Epoch: 0  train.loss : 6.4").kind == "epoch"
    assert parse_dll_line("DLL 2023-08-04 05:47:42.970732 - Summary: train.loss : 6.4").kind == "summary"
    assert parse_dll_line("DLL 2023-08-04 05:46:18.018259 - PARAMETER batch_size : 256").kind == "parameter"
    tup = parse_dll_line("DLL 2022-11-24 03:57:01.741126 - (0, 200) total_ips : 417.72 ")
    assert (tup.kind, tup.epoch, tup.iteration) == ("step", 0, 200)
    assert parse_dll_line("DLL 2022-11-24 04:00:06.586395 - () train_throughput : 416.18 images/s").kind == "other"
    it = parse_dll_line("DLL 2023-08-01 03:13:22.663597 - Iteration: 3  throughput_train : 1239.665 sequences/s")
    assert (it.kind, it.iteration) == ("step", 3)


def test_prefixes_garbage_and_ranks():
    glued = ("Iteration:   7%|##  | 78/1147 [00:56<12:53,  1.38it/s]Sun May 29 14:57:11 2022[1,0]<stdout>:"
             "DLL 2022-05-29 14:57:11.448247 - Training Epoch: 0 Training Iteration: 27  average_loss : 8.14 ")
    rec = parse_dll_line(glued)
    assert rec.iteration == 27 and rec.number("average_loss") == 8.14
    assert parse_dll_line("[1,3]<stdout>:DLL 2022-05-29 14:57:11.448247 - Training Iteration: 27  x : 1") is None
    tail = parse_dll_line("DLL 2022-05-29 15:01:07.641938 -  raw_train_time : 2319.19 Sun May 29 15:01:07 "
                          "2022[1,0]<stdout>:")
    assert tail.number("raw_train_time") == 2319.19 and tail.units == {}
    assert parse_dll_line("no logger here") is None
