"""DataLoader options of the PyTorch scripts' runtime."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
sys.path[:0] = [str(SCRIPTS), str(SHARED_SCRIPTS_DIR)]  # as the launch sets them
from torch_setup import Runtime  # noqa: E402


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
