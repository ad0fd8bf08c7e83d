"""harness results list / export and harness list cases: columns, filters, --json."""

from __future__ import annotations

import csv
import io
import json

import pytest

from harness.cli.main import main
from harness.export.table import REPEAT_COLUMNS, RUN_COLUMNS
from tests.harness.report.factory import make_result, record


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    record(root, make_result("r-old", value=100.0, repeats=[99.0, 100.0, 101.0], minutes=0))
    record(root, make_result("r-paddle", value=90.0, framework="paddle", minutes=60))
    record(root, make_result("r-failed", value=None, status="failed", minutes=120))
    record(root, make_result("r-bert", value=50.0, case="bert_base_seq128", unit="sequences/s",
                             minutes=24 * 60))
    return root


def test_results_list_columns_filters_and_json(results, capsys):
    assert main(["results", "list", "--output", str(results)]) == 0
    out = capsys.readouterr().out
    for header in ("case", "framework", "vendor", "layout", "precision", "batch", "scale", "status",
                   "FINAL_RESULT", "MFU", "date"):
        assert header in out
    assert out.index("r-bert") < out.index("r-old")  # newest first
    assert main(["results", "list", "--output", str(results), "--json", "--framework", "paddle"]) == 0
    assert [row["run_id"] for row in json.loads(capsys.readouterr().out)] == ["r-paddle"]
    assert main(["results", "list", "--output", str(results), "--json", "--status", "failed,success",
                 "--case", "gpt3_125M", "--vendor", "cpu"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["run_id"] for row in rows] == ["r-failed", "r-paddle", "r-old"]
    assert rows[2]["layout"] == "1x1" and rows[2]["final_result"] == 100.0 and rows[2]["scale"] == "smoke"
    assert main(["results", "list", "--output", str(results), "--json", "--since", "2026-11-22"]) == 0
    assert [row["run_id"] for row in json.loads(capsys.readouterr().out)] == ["r-bert"]
    assert main(["results", "list", "--output", str(results), "--status", "great"]) == 2
    assert "--status: 'great' is not one of" in capsys.readouterr().err
    assert main(["results", "list", "--output", str(results / "missing")]) == 2


def test_export_csv_and_jsonl_with_stable_columns(results, tmp_path, capsys):
    target = tmp_path / "runs.csv"
    assert main(["results", "export", "--output", str(results), "--format", "csv", "--to", str(target)]) == 0
    rows = list(csv.DictReader(target.open()))
    assert tuple(rows[0]) == RUN_COLUMNS and len(rows) == 4
    old = next(row for row in rows if row["run_id"] == "r-old")
    assert float(old["final_result"]) == 100.0 and old["repeats"] == "3"
    assert float(old["repeat_cv"]) == pytest.approx(0.01) and old["noise_source"] == "repeats"
    capsys.readouterr()
    assert main(["results", "export", "--output", str(results), "--format", "jsonl", "--repeats",
                 "--case", "gpt3_125M", "--status", "success"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert tuple(lines[0]) == RUN_COLUMNS + REPEAT_COLUMNS
    assert sorted((row["run_id"], row["repeat_index"]) for row in lines) == [
        ("r-old", 1), ("r-old", 2), ("r-old", 3), ("r-paddle", 1)]
    assert [row["repeat_final_result"] for row in lines if row["run_id"] == "r-old"] == [99.0, 100.0, 101.0]
    assert main(["results", "export", "--output", str(results), "--format", "xml"]) == 2


@pytest.mark.parametrize("target, message", [
    (lambda tmp: ["--to", str(tmp)], "is a folder; give a file name"),
    (lambda tmp: ["--to", str(tmp / "file.txt" / "runs.csv")], "file.txt is a file, not a folder"),
    (lambda tmp: ["--tensorboard", str(tmp / "file.txt")], "is a file; give a folder"),
])
def test_export_to_a_bad_target_exits_2(results, tmp_path, capsys, target, message):
    (tmp_path / "file.txt").write_text("x")
    assert main(["results", "export", "--output", str(results), *target(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_export_to_an_unwritable_target_exits_2(results, tmp_path, capsys, monkeypatch):
    import harness.results_io

    def full(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(harness.results_io, "atomic_write_text", full)
    assert main(["results", "export", "--output", str(results), "--to", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert "cannot write it (No space left on device)" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["results", "list"], ["results", "show", "r-old"],
                                     ["results", "export"], ["report"]])
def test_a_damaged_database_is_one_line_and_exit_2(tmp_path, capsys, command):
    root = tmp_path / "results"
    root.mkdir()
    (root / "harness.db").write_bytes(b"SQLite format 3\0" + b"\xff" * 4000)
    assert main([*command, "--output", str(root)]) == 2
    err = capsys.readouterr().err
    assert "harness.db cannot be used" in err and len(err.strip().splitlines()) == 1, err


def test_docs_document_the_export_columns():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "results.md").read_text(encoding="utf-8")
    text = page[page.index("The export's columns are stable"):]
    documented = [name for name in text.split("Throughputs are in")[0].split("`")[1::2] if name != "--repeats"]
    assert documented == list(RUN_COLUMNS + REPEAT_COLUMNS)


def test_list_cases_headline_first_filters_and_json(capsys):
    assert main(["list", "cases", "--json"]) == 0
    cases = json.loads(capsys.readouterr().out)
    flags = [case["headline"] for case in cases]
    assert flags == sorted(flags, reverse=True) and flags[0] and not flags[-1]
    assert {"gpt3_6.7B", "bert_base_seq128", "resnet50"} <= {c["case"] for c in cases if c["headline"]}
    assert main(["list", "cases", "--json", "--model", "bert"]) == 0
    assert [c["case"] for c in json.loads(capsys.readouterr().out)] == ["bert_base_seq128"]
    assert main(["list", "cases", "--json", "--framework", "mxnet"]) == 0
    assert {c["model"] for c in json.loads(capsys.readouterr().out)} == {"mobilenet_v1", "resnet50"}
    assert main(["list", "cases", "--json", "--headline"]) == 0
    assert all(c["headline"] for c in json.loads(capsys.readouterr().out))
    assert main(["list", "cases", "--framework", "tensorflow"]) == 2


def test_list_cases_shows_only_the_frameworks_that_run_a_layout(capsys):
    assert main(["list", "cases", "--json"]) == 0
    cases = {c["case"]: c for c in json.loads(capsys.readouterr().out)}
    assert cases["MP_1x16x1_16_3072x16"]["frameworks"] == ["megatron", "paddle"]
    assert cases["MP_1x16x1_16_3072x16"]["left_out"] == {"pytorch": ["tensor"]}
    assert cases["gpt3_6.7B"]["left_out"] == {}
    assert main(["list", "cases", "--framework", "pytorch", "--json"]) == 0
    assert "DP_PP_1x1x4_512_1536x16" not in {c["case"] for c in json.loads(capsys.readouterr().out)}
    assert main(["list", "cases"]) == 0
    captured = capsys.readouterr()
    [row] = [line for line in captured.out.splitlines() if "MP_1x16x1_16_3072x16" in line]
    assert "megatron, paddle+" in row and "pytorch" not in row
    assert "pytorch: 17 case(s) asking for pipeline or tensor parallel (it runs data parallel only)" in captured.err
    assert "paddle: 6 case(s) asking for pipeline parallel (it runs tensor parallel besides data " \
           "parallel)" in captured.err
