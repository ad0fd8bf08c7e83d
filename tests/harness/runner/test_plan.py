"""plan(): process layout, where each setting came from, and what it decides without
touching the request."""

from __future__ import annotations

import dataclasses

import pytest

from harness.errors import UserInputError
from harness.runner.pipeline import RunRequest, plan
from tests.harness.core_harness import FIXTURE_FRAMEWORK, FIXTURE_VENDOR, fixture_harness
from tests.harness.test_efficiency import FakeGpuVendor  # three fake GPUs


@pytest.fixture
def planner(tmp_path):
    harness = fixture_harness(FakeGpuVendor())

    def planned(**fields):
        request = RunRequest(**{"case": "gpt3_1.3B", "output": tmp_path,
                                "cache_dir": tmp_path / "cache", **fields})
        return plan(harness, request)

    return planned


def test_sp_runs_one_process_on_a_vendor_with_several_devices(planner):
    settings = planner(vendor="fakegpu", run_mode="sp").config.settings
    assert (settings.nproc, settings.run_mode) == (1, "sp")


def test_sp_with_more_processes_is_refused(planner):
    with pytest.raises(UserInputError, match="--run-mode sp runs one process"):
        planner(vendor="fakegpu", run_mode="sp", nproc=2)


def test_mp_and_default_use_every_device(planner):
    assert planner(vendor="fakegpu", run_mode="mp").config.settings.nproc == 3
    assert planner(vendor="fakegpu").config.settings.nproc == 3


def test_sources_name_where_the_layout_came_from(planner):
    # Nothing given on a CPU machine: case defaults, so no source is recorded for them.
    sources = planner(vendor=FIXTURE_VENDOR).config.sources
    assert "nproc" not in sources and "nnodes" not in sources
    # Nothing given on a GPU machine: one process per device.
    sources = planner(vendor="fakegpu").config.sources
    assert sources["nproc"] == "devices:fakegpu" and "nnodes" not in sources
    # Given by the user: the command line.
    sources = planner(vendor="fakegpu", nproc=2, nnodes=1).config.sources
    assert sources["nproc"] == "cli" and sources["nnodes"] == "cli"
    assert planner(vendor="fakegpu", run_mode="sp").config.sources["nproc"] == "cli"
    # The FlagPerf case string is the user's too.
    sources = planner(case=f"gpt3_1.3B:{FIXTURE_FRAMEWORK}_1.0:A100:1:2:1", vendor="fakegpu").config.sources
    assert (sources["nproc"], sources["nnodes"]) == ("cli", "cli")


def test_plan_returns_the_repeat_count_and_leaves_the_request_alone(gpt_harness, tmp_path):
    harness = gpt_harness
    request = RunRequest(case=f"gpt3_1.3B:{FIXTURE_FRAMEWORK}_1.0:A100:1:1:3", vendor=FIXTURE_VENDOR,
                         output=tmp_path, cache_dir=tmp_path / "cache")
    before = dataclasses.replace(request)
    context = plan(harness, request)
    assert context.repeats == 3
    assert request == before
    # --repeat given: it wins over the case string's field.
    request = dataclasses.replace(request, repeat=2)
    assert plan(harness, request).repeats == 2


def test_replanned_is_another_run_of_the_same_plan(planner, monkeypatch):
    from harness.runner.pipeline import replanned

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("HARNESS_JOB_SECRET", "s" * 32)
    first = planner(vendor=FIXTURE_VENDOR)
    again = replanned(first)
    assert again.run_id != first.run_id and again.run_dir == first.run_dir.with_name(again.run_id)
    assert again.config == first.config and again.devices == first.devices
    # A multi-node job's run id is the job's, as plan() names it.
    job = planner(vendor="fakegpu", nnodes=2, job_id="job7", node_rank=1)
    assert replanned(job).run_id == job.run_id == f"job7-gpt3_1.3B-{FIXTURE_FRAMEWORK}-fakegpu.node1"
