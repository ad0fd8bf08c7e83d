"""The results database's layout: versioned, stable within a version, readable by SQLite tools."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from harness.errors import UserInputError
from harness.store import DB_NAME, DB_SCHEMA_VERSION, ResultStore
from tests.harness.test_hooks import toy, toy_report  # noqa: F401  (fixtures)

#: sha256 of each schema version's layout (``schema_text``). A change of the layout without a
#: new DB_SCHEMA_VERSION fails here; a new version adds its line (and migrates older files).
LAYOUT_SHA256 = {
    1: "8df3a53ba5715f290dfc5c1f3a89479ad7e97af7281ffb48bd383571b11d19a5",
}


def schema_text(path) -> str:
    """The database's tables, indexes and views as SQLite recorded their statements."""
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                            "ORDER BY type, name").fetchall()
    return "\n".join(f"{kind} {name}: {' '.join(sql.split())}" for kind, name, sql in rows)


def user_version(path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_layout_changes_only_with_a_new_schema_version(toy_report):
    path = toy_report[0].run_dir.parent / DB_NAME
    assert user_version(path) == DB_SCHEMA_VERSION
    digest = hashlib.sha256(schema_text(path).encode()).hexdigest()
    assert LAYOUT_SHA256.get(DB_SCHEMA_VERSION) == digest, (
        f"the results database layout changed:\n{schema_text(path)}\nbump DB_SCHEMA_VERSION in "
        "harness/store.py, migrate older files, and record the new layout's sha256 here")


def test_a_database_from_before_the_version_is_stamped_not_changed(toy_report, tmp_path):
    report, _ = toy_report
    old = tmp_path / DB_NAME
    shutil.copy(report.run_dir.parent / DB_NAME, old)
    with closing(sqlite3.connect(old)) as conn:
        conn.execute("PRAGMA user_version = 0")
        conn.commit()
    layout = schema_text(old)
    store = ResultStore(tmp_path)
    assert [r.run_id for r in store.list()] == [report.result.run_id]
    store.add(report.result.model_copy(update={"run_id": "another"}), None)
    assert user_version(old) == DB_SCHEMA_VERSION and schema_text(old) == layout


def test_a_newer_database_is_refused_in_one_line(toy_report, tmp_path):
    path = tmp_path / DB_NAME
    shutil.copy(toy_report[0].run_dir.parent / DB_NAME, path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA user_version = {DB_SCHEMA_VERSION + 1}")
        conn.commit()
    store = ResultStore(tmp_path)
    for action in (store.list, lambda: store.add(toy_report[0].result, None)):
        with pytest.raises(UserInputError, match=f"schema version {DB_SCHEMA_VERSION + 1}, newer"):
            action()


def test_sqlite3_reads_the_documented_columns(toy_report):
    report, _ = toy_report
    with closing(sqlite3.connect(report.run_dir.parent / DB_NAME)) as conn:
        row = conn.execute(
            "SELECT run_id, case_name, framework, status, final_result, unit, "
            "json_extract(result_json, '$.step_time.cv') FROM runs").fetchone()
    result = report.result
    assert row == (result.run_id, result.case, result.framework, result.status,
                   result.throughput.value, result.throughput.unit,
                   result.step_time.cv if result.step_time else None)


def test_sqlite_utils_opens_the_database(toy_report):
    sqlite_utils = pytest.importorskip(
        "sqlite_utils", reason="sqlite-utils is not installed (pip install sqlite-utils); the "
                               "sqlite3 test above reads the same columns")
    report, _ = toy_report
    path = report.run_dir.parent / DB_NAME
    db = sqlite_utils.Database(path)
    assert db.table_names() == ["runs"]
    [row] = db["runs"].rows
    assert row["run_id"] == report.result.run_id and row["final_result"] == report.result.throughput.value
    [queried] = db.query("select case_name, json_extract(result_json, '$.config_hash') as hash "
                         "from runs where status = ?", [report.result.status])
    assert queried == {"case_name": report.result.case, "hash": report.result.config_hash}
    # The command line of docs/database.md (``sqlite-utils`` is ``python -m sqlite_utils``).
    printed = subprocess.run([sys.executable, "-m", "sqlite_utils", "rows", str(path), "runs",
                              "-c", "run_id", "-c", "final_result", "--nl"],
                             capture_output=True, text=True, check=True).stdout
    assert json.loads(printed) == {"run_id": report.result.run_id,
                                   "final_result": report.result.throughput.value}
