"""The log format the MXNet launch declares reads the gluon-cv lines its training script prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_mxnet import plugin
from tests.plugins.conftest import parse_as_launched, plan_context

DATA = Path(__file__).parent / "data"


def test_gluoncv_lines_two_devices(tmp_path):
    context = plan_context(tmp_path, "mobilenet_v1", "mxnet", nproc=2)
    parsed = parse_as_launched(context, DATA / "mobilenet_v1_nproc2.log")
    # Batches are numbered from 0 per epoch in the log; optimizer steps from 1 across epochs.
    assert [s.step for s in parsed.steps] == list(range(1, 31)) and not parsed.errors
    first = parsed.steps[0]
    assert first.loss == pytest.approx(2.872407) and first.learning_rate == pytest.approx(0.004)
    # Speed is already the whole process (both devices): not scaled again.
    assert first.throughput == pytest.approx(205.723994)
    assert parsed.steps[-1].loss < first.loss
    assert len(parsed.meta["epoch_throughput"]) == 4  # 8 steps of 2 x 32 per epoch
    # The script's last line on the CPU: the process's peak resident memory.
    assert parsed.peak_memory_bytes == int(346.0 * 2**20)


def test_the_mxnet_plugin_owns_the_mxnet_framework():
    """The core routes --framework mxnet's hooks to this plugin and no other (harness.dispatch)."""
    from harness.app import Harness

    registry = Harness.load(load_entrypoints=False).registry
    assert registry.frameworks.owner("mxnet") == "harness_mxnet.plugin"



def test_each_step_line_carries_its_step_time(tmp_path):
    """The script prints step_time_s per step line (a real two-process CPU run's log), so an
    MXNet result has step-time statistics and total work like the other frameworks'."""
    import harness
    from harness.stats import total_work_rate

    context = plan_context(tmp_path, "mobilenet_v1", "mxnet", nproc=2)
    log = DATA / "mobilenet_v1_nproc2_step_time.log"
    parsed = parse_as_launched(context, log)
    assert len(parsed.steps) == 30 and all(s.step_time_s for s in parsed.steps)
    first = parsed.steps[0]
    assert first.step_time_s == pytest.approx(1.128926)
    # Speed covers the step the time covers: 64 images in 1.128926 s
    assert first.throughput == pytest.approx(64 / first.step_time_s, rel=1e-4)
    result = harness.parse(log, format="gluoncv", framework="mxnet", skip=5).result
    assert result.step_time is not None and result.step_time.n == 25
    # total work, as a run computes it: the images of the measured steps over their wall time
    total = total_work_rate([s.throughput for s in parsed.steps], [s.step_time_s for s in parsed.steps], 5)
    assert total == pytest.approx(64 * 25 / sum(s.step_time_s for s in parsed.steps[5:]), rel=1e-4)
