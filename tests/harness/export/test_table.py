"""Export rows: every column filled from the result, in the documented order."""

from __future__ import annotations

from harness.export.table import REPEAT_COLUMNS, RUN_COLUMNS, export_rows, run_row, to_csv
from tests.harness.report.factory import make_result


def test_run_row_has_exactly_the_stable_columns():
    result = make_result("x", value=200.0, nproc=2, step_cv=0.07)
    row = run_row(result, "/r/x")
    assert tuple(row) == RUN_COLUMNS
    assert row["final_result_per_device"] == 100.0 and row["world_size"] == 2
    assert row["noise_source"] == "steps" and row["noise_cv"] == 0.07 and row["run_dir"] == "/r/x"
    failed = run_row(make_result("f", value=None, status="failed"))
    assert failed["final_result"] is None and failed["failure_reason"]


def test_repeat_rows_and_csv_header():
    result = make_result("x", value=100.0, repeats=[98.0, 100.0])
    rows = export_rows([(result, None)], per_repeat=True)
    assert [row["repeat_index"] for row in rows] == [1, 2]
    assert to_csv(rows, True).splitlines()[0] == ",".join(RUN_COLUMNS + REPEAT_COLUMNS)
