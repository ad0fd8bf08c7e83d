"""Per-step curves of recorded runs side by side (``harness results curves``)."""

from __future__ import annotations

import pytest

from harness.curves import curve_table, describe, render, shown_steps
from harness.errors import UserInputError
from harness.models.result import LogSummary
from harness.cli.main import main
from tests.harness.report.factory import make_result, record


def with_curves(run_id: str, losses: dict[int, float], **kwargs):
    result = make_result(run_id, **kwargs)
    result.log_summary = LogSummary(format="megatron", steps_parsed=len(losses),
                                    loss_curve=sorted(losses.items()),
                                    learning_rate_curve=[(s, 1e-4 * s) for s in sorted(losses)])
    return result


def test_shown_steps_keep_the_first_the_last_and_every_nth():
    assert shown_steps(set(range(1, 26)), 10) == [1, 10, 20, 25]
    assert shown_steps(set(range(1, 5)), 1) == [1, 2, 3, 4]
    assert shown_steps(set(), 10) == []
    with pytest.raises(UserInputError, match="at least 1"):
        shown_steps({1}, 0)


def test_table_has_a_column_per_run_and_marks_missing_steps():
    a = with_curves("run-a", {1: 11.0, 2: 10.5, 3: 10.0})
    b = with_curves("run-b", {1: 11.1, 3: 9.9})
    header, rows = curve_table([a, b], "loss")
    assert header == ["step", "run-a", "run-b"]
    assert rows == [["1", "11.0000", "11.1000"], ["2", "10.5000", "-"], ["3", "10.0000", "9.9000"]]
    _, lr_rows = curve_table([a], "learning_rate")
    assert lr_rows[0] == ["1", "0.0001"]
    markdown = render(header, rows, markdown=True).splitlines()
    assert markdown[0] == "| step | run-a | run-b |" and markdown[1] == "|---|---|---|"
    assert render(header, rows, markdown=False).splitlines()[1] == "1\t11.0000\t11.1000"


def test_unknown_curve_and_runs_without_one_are_one_line_errors():
    with pytest.raises(UserInputError, match="unknown curve 'lost'; valid: loss, learning_rate"):
        curve_table([with_curves("a", {1: 1.0})], "lost")
    with pytest.raises(UserInputError, match="no loss curve recorded for run\\(s\\) bare"):
        curve_table([make_result("bare")], "loss")


def test_description_names_the_values_set_by_whoever_ran_it():
    result = with_curves("a", {1: 1.0})
    result.config.params["offload"] = "cpu"
    result.config.sources = {"offload": "cli", "micro_batch_size": "vendor:default.toml"}
    assert describe(result).endswith("(offload=cpu)")


def test_cli_prints_the_curves_of_recorded_runs(tmp_path, capsys):
    root = tmp_path / "results"
    record(root, with_curves("20261127-000000-gpt3_1.3B-pytorch-cpu-aaaa", {s: 11.0 - 0.1 * s for s in range(1, 21)}))
    record(root, with_curves("20261127-000001-gpt3_1.3B-pytorch-cpu-bbbb", {s: 11.0 - 0.1 * s for s in range(1, 21)}))
    assert main(["results", "curves", "20261127-000000", "20261127-000001", "--output", str(root),
                 "--every", "10", "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("<!-- 20261127-000000-gpt3_1.3B-pytorch-cpu-aaaa: gpt3_125M pytorch cpu fp32")
    assert lines[-3:] == ["| 1 | 10.9000 | 10.9000 |", "| 10 | 10.0000 | 10.0000 |", "| 20 | 9.0000 | 9.0000 |"]
    assert main(["results", "curves", "nope", "--output", str(root)]) == 2
    assert "no single run matches 'nope'" in capsys.readouterr().err


def test_a_non_finite_loss_reads_back_and_shows_as_nan():
    from harness.models import BenchmarkResult

    result = with_curves("nan-run", {1: 7.6, 2: float("nan"), 3: float("inf")})
    again = BenchmarkResult.model_validate_json(result.model_dump_json())  # stored as null
    assert again.log_summary.loss_curve == [(1, 7.6), (2, None), (3, None)]
    _, rows = curve_table([again], "loss")
    assert [row[1] for row in rows] == ["7.6000", "nan", "nan"]
