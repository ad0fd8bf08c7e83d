"""schemas/*.json are generated from the pydantic models and must not go stale."""

from __future__ import annotations

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
                  "devices", "nnodes", "nproc", "run_mode", "precision", "micro_batch_size",
                  "global_batch_size", "throughput", "step_time", "loss_first", "loss_final",
                  "peak_memory_bytes", "status", "failure_reason", "config_hash", "environment",
                  "started_at", "finished_at"):
        assert field in schema["properties"], field
    legacy = SCHEMAS["legacy_index.schema.json"].model_json_schema()
    assert list(legacy["properties"]) == ["log_file", "model_name", "mission_name", "direction_id",
                                          "run_mode", "index", "gpu_num", "FINAL_RESULT",
                                          "JOB_FAIL_FLAG", "UNIT"]
