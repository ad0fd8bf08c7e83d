"""The PyTorch scripts' runtime: DataLoader options, the end of training."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
sys.path[:0] = [str(SCRIPTS), str(SHARED_SCRIPTS_DIR)]  # as the launch sets them
from torch_setup import Runtime, finish_training  # noqa: E402


def runtime(dedicated: bool) -> Runtime:
    return Runtime(device=torch.device("cpu"), world=1, rank=0, device_name="cpu", dedicated=dedicated,
                   precisions=frozenset({"fp32"}), peak_memory_source="process_rss")


def test_accelerators_get_persistent_pinned_workers_within_the_host_s_cpus(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    cpus = len(os.sched_getaffinity(0))
    options = runtime(dedicated=True).loader_options(workers=64)
    assert options["num_workers"] == max(1, min(64, cpus - 1)) and options["pin_memory"] is True
    assert options["persistent_workers"] is True  # no respawn at every epoch boundary
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cpus))  # one CPU per process: one worker each
    assert runtime(dedicated=True).loader_options(workers=8)["num_workers"] == 1


def test_a_shared_host_reads_in_the_training_process():
    assert runtime(dedicated=False).loader_options(workers=8) == {"num_workers": 0}


def test_finish_training_prints_the_memory_line_and_the_end_on_rank_0(capsys):
    finish_training(runtime(dedicated=False), "[Rank 0] (after 3 iterations) ")
    first, *rest = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\[Rank 0\] \(after 3 iterations\) peak memory \(MB\): \d+\.\d "
                        r"\(process max RSS, max over ranks\)", first)
    assert rest == ["> training finished"]
    finish_training(runtime(dedicated=False))  # train_bert.py's and train_cnn.py's prefix
    assert capsys.readouterr().out.startswith("> peak memory (MB): ")


def test_finish_training_prints_nothing_on_other_ranks(capsys):
    other = Runtime(device=torch.device("cpu"), world=1, rank=1, device_name="cpu", dedicated=False,
                    precisions=frozenset({"fp32"}), peak_memory_source="process_rss")
    finish_training(other)
    assert capsys.readouterr().out == ""
