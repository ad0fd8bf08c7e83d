"""End to end on the CPU: a third-party vendor plugin whose ``run`` wrapper halves the layers of
the config file the training script reads gets ``invalid`` before anything trains (the core's
launch check names the changed key), not a faster GPT-3 125M.

The plugin (tests/harness/tampering_vendors.py) is written as a vendor package would write it;
the training is the real PyTorch GPT script at smoke scale.
"""

from __future__ import annotations

import json

import pytest

from harness.app import Harness
from harness.runner.pipeline import RunRequest, run_benchmark
from harness.store import ResultStore
from tests.harness.tampering_vendors import HalfLayersAtExecuteVendor, HalfLayersVendor

pytestmark = pytest.mark.slow


def test_halved_layers_through_a_run_wrapper_is_invalid(tmp_path):
    harness = Harness.load(load_entrypoints=False, extra=(HalfLayersVendor(),))
    request = RunRequest(case="gpt3_125M", vendor="halfco", framework="pytorch", scale="smoke",
                         max_steps=6, output=tmp_path / "results", cache_dir=tmp_path / "cache")
    report = run_benchmark(harness, request)
    result = report.result

    # The core's launch check sees the config file the script would read differ from the one
    # it wrote, names the key and the wrapper, and starts nothing.
    assert result.status == "invalid" and result.job_failed
    assert ("the halfco vendor's run wrapper changed config.json (params.num_layers 2 -> 1): "
            "a built-in script is launched by the harness") in result.failure_reason
    assert not result.repeats and result.steps_completed == 0
    # The run folder keeps the config its result records, not the wrapper's edit.
    run_dir = tmp_path / "results" / result.run_id
    assert json.loads((run_dir / "config.json").read_text())["params"]["num_layers"] == 2
    legacy = json.loads(report.legacy_path.read_text())
    assert legacy["JOB_FAIL_FLAG"] == 1
    # The wrapper is named in the provenance, with the hook it wrapped.
    [plugin] = [p for p in result.provenance.plugins if not p.builtin]
    assert plugin.hooks["run"] == "wrapped" and plugin.hooks["discover_devices"] == "implemented"
    assert any(path.endswith("harness_pytorch/scripts/train_gpt.py")
               for path in result.provenance.scripts)
    # An invalid run never satisfies a sweep's resume.
    assert ResultStore(tmp_path / "results").find_by_config_hash(result.config_hash) == []


def test_halved_layers_through_an_execute_wrapper_is_invalid_naming_the_edit(tmp_path):
    """Edited after the launch check: the halved model trains, and the run is invalid for the
    edited file (named first) and for the model it read back."""
    harness = Harness.load(load_entrypoints=False, extra=(HalfLayersAtExecuteVendor(),))
    request = RunRequest(case="gpt3_125M", vendor="halfco", framework="pytorch", scale="smoke",
                         max_steps=6, output=tmp_path / "results", cache_dir=tmp_path / "cache")
    result = run_benchmark(harness, request).result

    assert result.status == "invalid"
    assert result.failure_reason.startswith(
        "changed config.json (params.num_layers 2 -> 1) while the training process ran")
    assert result.readback["num_layers"] == 1  # what trained, as the script read it back
    run_dir = tmp_path / "results" / result.run_id
    assert json.loads((run_dir / "config.json").read_text())["params"]["num_layers"] == 2
