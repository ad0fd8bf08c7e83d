"""The SQLite results database and the run-folder files."""

from __future__ import annotations

import json

import pytest

from harness.results_io import atomic_write_text, legacy_file_name, legacy_index
from harness.store import ResultStore
from tests.harness.test_hooks import CASE, toy, toy_report  # noqa: F401  (fixtures)


def test_result_is_recorded_and_read_back(toy_report, tmp_path):
    report, _ = toy_report
    store = ResultStore(report.run_dir.parent)
    [listed] = store.list()
    assert listed == report.result
    assert store.get(report.result.run_id[:-3]) == report.result
    assert store.find_by_config_hash(report.result.config_hash) == [report.result]
    assert store.list(case="other") == []


def test_ingested_log_sha_is_unique(toy_report):
    report, _ = toy_report
    store = ResultStore(report.run_dir.parent)
    ingested = report.result.model_copy(update={"run_id": "ingest-1", "source": "ingested",
                                                "source_sha256": "ab" * 32})
    assert store.add(ingested, None) is True
    assert store.add(ingested.model_copy(update={"run_id": "ingest-2"}), None) is False


def test_legacy_index_of_a_failed_run(toy_report):
    report, _ = toy_report
    failed = report.result.model_copy(update={"status": "failed"})
    index = legacy_index(failed, CASE, "x/train.log")
    assert index.JOB_FAIL_FLAG == 1 and index.FINAL_RESULT == 0.0
    assert index.model_name == "t_toy_bs8_fp32" and index.UNIT == "samples/s"
    assert legacy_file_name(failed, CASE) == "t_toy_sp_bs8_fp32_1_speed"


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    atomic_write_text(target, json.dumps({"v": 1}))

    def broken_replace(*_):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, json.dumps({"v": 2}))
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_list_filters_by_lists_and_since(tmp_path):
    from datetime import datetime, timezone

    from tests.harness.report.factory import make_result, record

    for index, (framework, status) in enumerate((("pytorch", "success"), ("paddle", "success"),
                                                 ("pytorch", "failed"))):
        record(tmp_path, make_result(f"s{index}", value=None if status == "failed" else 1.0,
                                     framework=framework, status=status, minutes=index * 60))
    store = ResultStore(tmp_path)
    assert [r.run_id for r in store.list(framework=["pytorch", "paddle"], status="success")] == ["s1", "s0"]
    since = datetime(2026, 11, 21, 13, 0, tzinfo=timezone.utc)
    assert [r.run_id for r in store.list(since=since)] == ["s2", "s1"]
    assert [r.run_id for r in store.list(since=since, limit=1)] == ["s2"]
    assert len(store.list(limit=None)) == 3
