"""The PyTorch scripts' runtime: the start, DataLoader options, the end of training."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
sys.path[:0] = [str(SCRIPTS), str(SHARED_SCRIPTS_DIR)]  # as the launch sets them
from torch_setup import Runtime, finish_training, start_training  # noqa: E402


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


def _config(tmp_path: Path, precision: str) -> str:
    backend = {"device_type": "cpu", "frameworks": {"torch": {"device_type": "cpu"}},
               "precisions": ["fp32", "bf16"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"settings": {"seed": 7, "precision": precision},
                                "params": {"num_layers": 2}, "device": backend}))
    return str(path)


def test_start_training_reads_the_config_and_starts_this_rank(tmp_path, monkeypatch):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    settings, params, started = start_training(_config(tmp_path, "bf16"))
    assert settings == {"seed": 7, "precision": "bf16"} and params == {"num_layers": 2}
    assert (started.device.type, started.world, started.rank) == ("cpu", 1, 0)


def test_start_training_refuses_a_precision_the_device_lacks(tmp_path, monkeypatch, capsys):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        start_training(_config(tmp_path, "fp16"))
    assert exit_info.value.code == 2
    assert capsys.readouterr().out == "error: cpu devices have no fp16; use one of bf16, fp32\n"
