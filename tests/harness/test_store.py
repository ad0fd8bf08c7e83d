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


def _recorded(tmp_path):
    from tests.harness.report.factory import make_result, record

    root = tmp_path / "results"
    record(root, make_result("r-1"))
    return ResultStore(root)


def test_a_file_that_is_not_a_database_is_a_one_line_error(tmp_path):
    from harness.store import DamagedStoreError

    store = ResultStore(tmp_path)
    store.path.write_text("not a database at all, just text " * 100)
    for read in (store.list, lambda: store.get("r"), store.run_dirs,
                 lambda: store.find_by_config_hash("h")):
        with pytest.raises(DamagedStoreError, match="cannot be used .*file is not a database"):
            read()
    from tests.harness.report.factory import make_result

    with pytest.raises(DamagedStoreError, match="move it aside"):
        store.add(make_result("r-2"), None)


def test_a_locked_database_is_a_storage_problem_not_damage(tmp_path, monkeypatch):
    """Moving a locked database aside would lose it: a lock held past the timeout stays
    sqlite3's OperationalError (reads and writes), never DamagedStoreError."""
    import sqlite3

    from harness.store import DamagedStoreError
    from tests.harness.report.factory import make_result

    store = _recorded(tmp_path)
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **{**k, "timeout": 0.05}))
    holder = real_connect(store.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        for touch in (store.list, lambda: store.add(make_result("r-locked"), None)):
            with pytest.raises(sqlite3.OperationalError, match="locked") as info:
                touch()
            assert not isinstance(info.value, DamagedStoreError)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_truncated_database_is_a_one_line_error(tmp_path):
    from harness.store import DamagedStoreError

    store = _recorded(tmp_path)
    data = store.path.read_bytes()
    store.path.write_bytes(data[:len(data) // 2] + b"\0" * 17 + data[len(data) // 2 + 17:][:100])
    with pytest.raises(DamagedStoreError, match="cannot be used"):
        store.list()


def test_a_stored_result_that_is_no_longer_valid_is_a_one_line_error(tmp_path):
    import sqlite3

    from harness.store import DamagedStoreError

    store = _recorded(tmp_path)
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE runs SET result_json = '{\"run_id\": '")
    with pytest.raises(DamagedStoreError, match="a stored result is invalid"):
        store.list()
    with pytest.raises(DamagedStoreError, match="a stored result is invalid"):
        store.get("r-1")
