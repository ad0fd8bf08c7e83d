"""schemas/*.json are generated from the pydantic models and must not go stale."""

from __future__ import annotations

import json
from pathlib import Path

from harness.schema_export import SCHEMAS, render

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


def test_committed_schemas_match_the_models():
    stale = [name for name, text in render().items()
             if not (SCHEMA_DIR / name).exists() or (SCHEMA_DIR / name).read_text(encoding="utf-8") != text]
    assert not stale, f"stale schemas {stale}: run `python -m harness.schema_export`"


def test_result_schema_has_the_documented_fields():
    schema = SCHEMAS["result.schema.json"].model_json_schema()
    for field in ("schema_version", "run_id", "case", "framework", "framework_version", "vendor",
                  "devices", "nnodes", "nproc", "run_mode", "precision",
                  "global_batch_size", "throughput", "step_time", "loss_first", "loss_final",
                  "peak_memory_bytes", "status", "failure_reason", "config_hash", "environment",
                  "started_at", "finished_at"):
        assert field in schema["properties"], field
    legacy = SCHEMAS["legacy_index.schema.json"].model_json_schema()
    assert list(legacy["properties"]) == ["log_file", "model_name", "mission_name", "direction_id",
                                          "run_mode", "index", "gpu_num", "FINAL_RESULT",
                                          "JOB_FAIL_FLAG", "UNIT"]


def test_the_micro_batch_size_is_stored_once_and_1x_results_still_read():
    from harness.models import BenchmarkResult
    from tests.harness.report.factory import make_result

    result = make_result("r1", batch=4)
    stored = json.loads(result.model_dump_json())
    assert "micro_batch_size" not in stored and stored["config"]["settings"]["micro_batch_size"] == 4
    assert stored["schema_version"] == "2.3" and result.micro_batch_size == 4

    old = {**stored, "schema_version": "1.0", "micro_batch_size": 4}
    assert BenchmarkResult.model_validate(old).micro_batch_size == 4
    # an ingested 1.0 log whose batch was unknown said 0 at the top level; it still says 0
    unknown = {**old, "source": "ingested", "micro_batch_size": 0}
    unknown["config"] = {**old["config"], "settings": {**old["config"]["settings"], "micro_batch_size": 1}}
    assert BenchmarkResult.model_validate(unknown).micro_batch_size == 0
