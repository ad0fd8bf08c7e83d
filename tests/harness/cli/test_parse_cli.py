"""`harness parse`: output, exit codes, ingest, keyword mode."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main

STEP = ("global step {step}, epoch: 0, batch: {step}, loss: {loss}, avg_reader_cost: 0.1 sec, "
        "avg_batch_cost: 0.5 sec, speed: 2.00 step/s, ips_total: {ips} tokens/s, ips: {ips} tokens/s, "
        "learning rate: 1.0e-05\n")


def write(tmp_path, text: str, name: str = "gpt_log"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def good_log(tmp_path) -> str:
    return write(tmp_path, "".join(STEP.format(step=i, loss=10.0, ips=1000 + i) for i in range(1, 21)))


def test_prints_summary_and_legacy_index(tmp_path, capsys):
    assert main(["parse", good_log(tmp_path), "--method", "harness", "--skip", "10"]) == 0
    out = capsys.readouterr().out
    assert "format paddlenlp" in out and "FINAL_RESULT 1,015.500 tokens/s" in out
    legacy = json.loads(out[out.index("{"):])
    assert legacy["FINAL_RESULT"] == 1015.5 and legacy["JOB_FAIL_FLAG"] == 0 and legacy["UNIT"] == "tokens/s"
    assert sorted(legacy) == sorted(["log_file", "model_name", "mission_name", "direction_id", "run_mode",
                                     "index", "gpu_num", "FINAL_RESULT", "JOB_FAIL_FLAG", "UNIT"])


def test_json_output(tmp_path, capsys):
    assert main(["parse", good_log(tmp_path), "--json", "--case", "gpt3_6.7B", "--framework", "paddle",
                 "--vendor", "nvidia", "--gpus", "8"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["result"]["case"] == "gpt3_6.7B" and document["result"]["vendor"] == "nvidia"
    assert document["result"]["source"] == "ingested"
    assert document["legacy_index"]["gpu_num"] == 8 and document["legacy_index"]["run_mode"] == "mp"


def test_failed_run_exits_1(tmp_path, capsys):
    path = write(tmp_path, STEP.format(step=1, loss=10.0, ips=5) + STEP.format(step=2, loss="nan", ips=5))
    assert main(["parse", path]) == 1
    out = capsys.readouterr().out
    assert '"JOB_FAIL_FLAG": 1' in out and "non-finite loss" in out


@pytest.mark.parametrize("args, message", [
    (["--format", "nope"], "unknown log format 'nope'"),
    (["--method", "framework"], "no throughput printed by the framework"),
    (["--format", "megatron"], "no line is in the 'megatron' format"),
    (["--model-mode", "0"], "belong to keyword mode"),
])
def test_bad_input_exits_2(tmp_path, capsys, args, message):
    assert main(["parse", good_log(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unrecognised_log_exits_2_never_a_zero_result(tmp_path, capsys):
    assert main(["parse", write(tmp_path, "hello\nworld\n")]) == 2
    captured = capsys.readouterr()
    assert "is recognised by a log format" in captured.err and "FINAL_RESULT" not in captured.out


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["parse", str(tmp_path / "absent.log")]) == 2
    assert "no such log file" in capsys.readouterr().err


def _one_error_line(capsys, message: str) -> None:
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_folder_is_not_a_log(tmp_path, capsys):
    assert main(["parse", str(tmp_path), "--ingest", "--output", str(tmp_path / "results")]) == 2
    _one_error_line(capsys, "is a folder; give log files")


def test_unreadable_log_exits_2(tmp_path, capsys, monkeypatch):
    from harness.logparse import detect

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    # chmod 000 does not stop root (CI runs as root), so the read itself is made to fail.
    monkeypatch.setattr(detect, "open", denied, raising=False)
    assert main(["parse", good_log(tmp_path), "--ingest", "--output", str(tmp_path / "results")]) == 2
    _one_error_line(capsys, "cannot read the log (Permission denied)")


def test_ingest_into_a_file_or_a_damaged_database_exits_2(tmp_path, capsys):
    log = good_log(tmp_path)
    not_a_folder = tmp_path / "results.txt"
    not_a_folder.write_text("x")
    assert main(["parse", log, "--ingest", "--output", str(not_a_folder)]) == 2
    _one_error_line(capsys, "is a file; give the results folder")
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "harness.db").write_text("not sqlite " * 200)
    assert main(["parse", log, "--ingest", "--output", str(damaged)]) == 2
    _one_error_line(capsys, "harness.db cannot be used (file is not a database)")


def test_ingest_twice_says_so(tmp_path, capsys):
    log, out = good_log(tmp_path), str(tmp_path / "results")
    assert main(["parse", log, "--ingest", "--output", out]) == 0
    assert "ingested into" in capsys.readouterr().out
    assert main(["parse", log, "--ingest", "--output", out]) == 0
    assert "already ingested" in capsys.readouterr().out
    assert main(["results", "list", "--output", out]) == 0
    assert capsys.readouterr().out.count("ingested-gpt_log") == 1


def test_keyword_mode(tmp_path, capsys):
    path = write(tmp_path, "".join(f"step {i} avg_ips: {v} sent./sec\n" for i, v in enumerate([1, 10, 20, 30])))
    assert main(["parse", path, "--keyword", "avg_ips:", "--skip-steps", "1", "--model-mode", "-1",
                 "--ips-unit", "sent./sec", "--gpus", "2", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["legacy_index"]["FINAL_RESULT"] == 40.0 and document["legacy_index"]["UNIT"] == "sent./sec"
    assert document["result"]["throughput"]["method"].startswith("analysis-py")


def test_several_logs_and_list_formats(tmp_path, capsys):
    first, second = good_log(tmp_path), write(tmp_path, open(good_log(tmp_path)).read(), "other_log")
    assert main(["parse", first, second, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert main(["parse", "--list-formats"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in ("megatron", "flagperf", "mllog", "gluoncv", "keyword"))


@pytest.mark.parametrize("option, value", [
    ("--case", "/../../../x"), ("--case", ".."), ("--vendor", "../v"), ("--framework", "a/b"),
    ("--case", ".hidden"), ("--case", "x" * 129),
])
def test_a_name_that_would_leave_the_results_folder_is_refused(tmp_path, capsys, option, value):
    outside = tmp_path / "x"
    results = tmp_path / "a" / "b" / "c" / "results"
    assert main(["parse", good_log(tmp_path), "--ingest", "--output", str(results), option, value]) == 2
    _one_error_line(capsys, f"{option} {value!r} cannot be part of a file name")
    assert not results.exists() and not outside.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpt_log"]


def test_a_case_taken_from_an_odd_file_name_stays_in_the_results_folder(tmp_path, capsys):
    log = write(tmp_path, "".join(STEP.format(step=i, loss=10.0, ips=1000) for i in range(1, 21)),
                name="..%2f..%2fevil .log")
    results = tmp_path / "results"
    assert main(["parse", log, "--ingest", "--output", str(results)]) == 0
    run_dirs = [p for p in results.iterdir() if p.is_dir()]
    assert len(run_dirs) == 1 and run_dirs[0].name.startswith("ingested-2f.._2fevil_-")
    assert all(results in p.resolve().parents for p in results.rglob("*"))


def test_a_huge_line_is_read_in_bounded_chunks(tmp_path):
    """A 160 MiB line without a newline, then a log: the parse keeps its memory far below
    the line's size (it held twice the file before) and still reads the steps after it."""
    import subprocess
    import sys

    log = tmp_path / "huge.log"
    with open(log, "wb") as handle:
        chunk = b"x" * (1 << 20)
        for _ in range(160):
            handle.write(chunk)
        handle.write(b"\n" + "".join(STEP.format(step=i, loss=10.0, ips=1000) for i in range(1, 21)).encode())
    measure = ("import resource, subprocess, sys; "
               "p = subprocess.run([sys.executable, '-m', 'harness', 'parse', sys.argv[1], '--json'], "
               "capture_output=True, text=True); "
               "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); "
               "print(p.stdout)")
    proc = subprocess.run([sys.executable, "-c", measure, str(log)], capture_output=True, text=True,
                          timeout=600)
    code, peak_mib = map(int, proc.stdout.splitlines()[0].split())
    assert code == 0, proc.stdout
    assert peak_mib < 128, f"peak {peak_mib} MiB for a 160 MiB line"
    document = json.loads(proc.stdout.split("\n", 1)[1])
    assert document["result"]["steps_completed"] == 20
