"""harness compare: ratios and noise verdicts checked against numbers computed by hand."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.app import Harness
from harness.compare import Side, compare_runs, compare_sides
from harness.models import BenchmarkResult
from harness.store import ResultStore
from harness.report.steps import log_step_samples
from tests.harness.report.conftest import NOISY, QUIET, step_log
from harness.report.data import ReportRun, load_runs
from tests.harness.report.factory import make_result, record


@pytest.fixture
def two_sets(tmp_path):
    """Two result sets (folders) of the same matrix, recorded at different times, with logs."""
    a, b = tmp_path / "a", tmp_path / "b"
    # fp32 bs8 x1: A repeats 100, 102, 98 (median 100, CV 2/100); B 90, 91, 89 (median 90, CV 1/90)
    record(a, make_result("a1", value=100.0, repeats=[100.0, 102.0, 98.0]), log_lines=step_log(100.0, QUIET, 8))
    record(b, make_result("b1", value=90.0, repeats=[90.0, 91.0, 89.0], minutes=60),
           log_lines=step_log(90.0, QUIET, 8))
    # fp32 bs8 x2: one repeat each, step-time CV 1% each; B is 10% faster
    record(a, make_result("a2", value=180.0, nproc=2, step_cv=0.01), log_lines=step_log(180.0, QUIET, 16))
    record(b, make_result("b2", value=198.0, nproc=2, step_cv=0.01, minutes=60),
           log_lines=step_log(198.0, QUIET, 16))
    # fp32 bs4 x1: 3% apart, but each run's steps vary 5%: within noise
    record(a, make_result("a3", value=100.0, batch=4, step_cv=0.05), log_lines=step_log(100.0, NOISY, 4))
    record(b, make_result("b3", value=103.0, batch=4, step_cv=0.05, minutes=60),
           log_lines=step_log(103.0, NOISY, 4))
    # fp16 bs8 x1: 10% apart, but A was recorded without its log: unknown
    record(a, make_result("a5", value=100.0, precision="fp16"))
    record(b, make_result("b5", value=90.0, precision="fp16", minutes=60), log_lines=step_log(90.0, QUIET, 8))
    # in one set only
    record(a, make_result("a4", value=150.0, precision="bf16"))
    record(b, make_result("b4", value=160.0, precision="bf16", batch=16, minutes=60))
    return a, b


def compared(a, b):
    return compare_sides(Side("a", load_runs(a)), Side("b", load_runs(b)),
                         read_samples=log_step_samples(Harness.load().registry))


def _pairs_by_run(comparison):
    return {p.a.run_id: p for p in comparison.pairs}


def test_ratios_and_noise_match_hand_computed_values(two_sets):
    a, b = two_sets
    comparison = compared(a, b)
    pairs = _pairs_by_run(comparison)
    assert set(pairs) == {"a1", "a2", "a3", "a5"}
    assert [r.result.run_id for r in comparison.only_a] == ["a4"]
    assert [r.result.run_id for r in comparison.only_b] == ["b4"]

    p1 = pairs["a1"]
    assert p1.b.run_id == "b1"
    assert p1.ratio == pytest.approx(0.9)
    assert p1.slower_pct == pytest.approx(10.0)
    assert p1.noise_a.source == "repeats" and p1.noise_a.cv == pytest.approx(0.02)
    assert p1.noise_b.cv == pytest.approx(1 / 90)
    assert p1.noise == pytest.approx(math.sqrt(0.02 ** 2 + (1 / 90) ** 2))  # 0.02288
    # the 20 measured steps of each log (the 5 warm-up steps left out), re-read
    assert len(p1.samples_a) == len(p1.samples_b) == 20
    assert p1.interval.ratio == pytest.approx(0.9, rel=1e-3) and p1.interval.confidence == 0.95
    assert p1.interval.high < 1.0 and p1.beyond_noise is True

    p2 = pairs["a2"]
    assert p2.ratio == pytest.approx(1.1) and p2.slower_pct == pytest.approx(-10.0)
    assert p2.noise_a.source == "steps"
    assert p2.interval.low > 1.0 and p2.beyond_noise is True

    p3 = pairs["a3"]  # 3% apart, each run's steps vary by up to 6%
    assert p3.ratio == pytest.approx(1.03)
    assert p3.interval.low < 1.0 < p3.interval.high and p3.beyond_noise is False

    p5 = pairs["a5"]  # A's log is missing: no samples, so unknown, not "no"
    assert p5.samples_a is None and p5.interval is None and p5.beyond_noise is None


def test_cli_json_and_fail_if_slower(two_sets, capsys):
    a, b = two_sets
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ratios = {p["run_a"]: p["ratio"] for p in data["pairs"]}
    assert ratios == pytest.approx({"a1": 0.9, "a2": 1.1, "a3": 1.03, "a5": 0.9})
    verdicts = {p["run_a"]: p["beyond_noise"] for p in data["pairs"]}
    assert verdicts == {"a1": True, "a2": True, "a3": False, "a5": None}
    assert data["noise_test"]["confidence"] == 0.95
    [a1] = [p for p in data["pairs"] if p["run_a"] == "a1"]
    assert a1["step_samples_a"] == a1["step_samples_b"] == 20 and a1["median_ratio_ci"][1] < 1.0
    assert main(["compare", str(a), str(b)]) == 0
    table = capsys.readouterr().out
    assert "unknown" in table and "yes (CI 0.8" in table and "95% confidence interval" in table
    assert data["only_a"] == ["a4"] and data["only_b"] == ["b4"]

    # a1 -> b1 is 10% slower: a 5% gate fails, a 12% gate passes
    assert main(["compare", str(a), str(b), "--fail-if-slower", "5"]) == 1
    err = capsys.readouterr().err
    assert "10.0% slower > 5%" in err
    assert main(["compare", str(a), str(b), "--fail-if-slower", "12"]) == 0


def test_two_frameworks_in_one_results_folder(tmp_path, capsys):
    record(tmp_path, make_result("pt", value=100.0, framework="pytorch"))
    record(tmp_path, make_result("pd", value=80.0, framework="paddle"))
    record(tmp_path, make_result("pt2", value=50.0, framework="pytorch", batch=2))
    assert main(["compare", "--frameworks", "pytorch,paddle", "--output", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [pair] = data["pairs"]
    assert (pair["framework_a"], pair["framework_b"]) == ("pytorch", "paddle")
    assert pair["ratio"] == pytest.approx(0.8) and pair["change_pct"] == pytest.approx(-20.0)
    assert data["only_a"] == ["pt2"]


def test_two_runs_by_id_and_bad_input(tmp_path, capsys):
    record(tmp_path, make_result("run-one", value=200.0))
    record(tmp_path, make_result("run-two", value=150.0, batch=16))
    assert main(["compare", "run-one", "run-two", "--output", str(tmp_path), "--json"]) == 0
    [pair] = json.loads(capsys.readouterr().out)["pairs"]
    assert pair["ratio"] == pytest.approx(0.75)
    assert main(["compare", "run-one", "nope", "--output", str(tmp_path)]) == 2
    assert "neither a results folder nor a single run id" in capsys.readouterr().err
    assert main(["compare", "--frameworks", "pytorch", "--output", str(tmp_path)]) == 2
    assert main(["compare", "--output", str(tmp_path)]) == 2


def test_failed_run_cannot_be_compared(tmp_path, capsys):
    record(tmp_path, make_result("good", value=100.0))
    record(tmp_path, make_result("bad", value=None, status="failed", batch=2))
    assert main(["compare", "good", "bad", "--output", str(tmp_path)]) == 2
    assert "did not succeed" in capsys.readouterr().err


def _with_window(result, **settings):
    for key, value in settings.items():
        setattr(result.config.settings, key, value)
    return result


def test_runs_of_different_measurement_windows_are_not_paired(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    record(a, make_result("a1", value=100.0))
    record(b, _with_window(make_result("b1", value=130.0, minutes=60), max_steps=40, skip_steps=20))
    comparison = compare_sides(Side("a", load_runs(a)), Side("b", load_runs(b)))
    assert comparison.pairs == []
    [(run_a, run_b, differences)] = comparison.different_windows
    assert (run_a.result.run_id, run_b.result.run_id) == ("a1", "b1")
    assert differences == {"max_steps": (20, 40), "skip_steps": (5, 20)}
    allowed = compare_sides(Side("a", load_runs(a)), Side("b", load_runs(b)),
                            allow_different_windows=True)
    assert [p.ratio for p in allowed.pairs] == pytest.approx([1.3])

    assert main(["compare", str(a), str(b), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["different_windows"][0]["keys"]["max_steps"] == [20, 40]
    assert "not compared: a1 and b1 were measured over different windows" in captured.err


def test_two_runs_of_different_windows_are_refused_unless_allowed(tmp_path, capsys):
    record(tmp_path, make_result("base", value=100.0, params={"seq_len": 128, "learning_rate": 1e-3}))
    record(tmp_path, make_result("fast", value=150.0, params={"seq_len": 128, "learning_rate": 5e-3}))
    assert main(["compare", "base", "fast", "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "different windows (learning_rate 0.001 vs 0.005)" in err and "--allow-different-windows" in err
    assert main(["compare", "base", "fast", "--output", str(tmp_path), "--json",
                 "--allow-different-windows"]) == 0
    [pair] = json.loads(capsys.readouterr().out)["pairs"]
    assert pair["ratio"] == pytest.approx(1.5)


def test_an_invalid_run_is_never_compared(tmp_path, capsys):
    record(tmp_path, make_result("good", value=100.0))
    record(tmp_path, make_result("tampered", value=None, status="invalid", batch=2))
    assert main(["compare", "good", "tampered", "--output", str(tmp_path)]) == 2
    assert "did not succeed (invalid)" in capsys.readouterr().err
# ---------------------------------------------------------------------- daily-use additions


def with_max_steps(result, steps: int, run_id: str | None = None):
    """The same run as if measured over ``steps`` steps (the window lives in the config)."""
    settings = result.config.settings.model_copy(update={"max_steps": steps})
    return result.model_copy(update={"run_id": run_id or result.run_id, "max_steps": steps,
                                     "config": result.config.model_copy(update={"settings": settings})})

def test_measurement_windows_and_cases_are_warned_about():
    from harness.compare import compare_runs
    from harness.report.pairing import measurement_window, pair_warnings, windows_match

    a = make_result("w-a", value=100.0)
    window = measurement_window(a)
    assert {k: window[k] for k in ("max_steps", "skip_steps", "seed", "dataset")} == {
        "max_steps": 20, "skip_steps": 5, "seed": 1234, "dataset": None}
    short = with_max_steps(a, 8, "w-b")
    assert windows_match(a, a) and not windows_match(a, short)
    assert pair_warnings(a, short) == ["different measurement windows (max_steps 20 vs 8)"]
    other = make_result("w-c", value=18.0, case="gpt3_1.3B")
    assert pair_warnings(a, other) == ["different cases (gpt3_125M vs gpt3_1.3B)"]
    pair = compare_runs(ReportRun(a, None), ReportRun(other, None)).pairs[0]
    assert pair.warnings == ["different cases (gpt3_125M vs gpt3_1.3B)"]


def test_cli_warns_on_different_cases_and_windows(tmp_path, capsys):
    root = tmp_path / "r"
    record(root, make_result("case-a", value=100.0))
    record(root, make_result("case-b", value=18.0, case="gpt3_1.3B", minutes=5))
    assert main(["compare", "case-a", "case-b", "--output", str(root)]) == 0
    assert "warning: " in (err := capsys.readouterr().err) and "different cases" in err
    a, b = tmp_path / "a", tmp_path / "b"
    record(a, make_result("long", value=100.0))
    record(b, with_max_steps(make_result("short", value=90.0, minutes=5), 8))
    # different windows are listed apart, not paired ...
    assert main(["compare", str(a), str(b), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["pairs"] == [] and "not compared" in captured.err
    # ... unless allowed, and then the pair carries the warning
    assert main(["compare", str(a), str(b), "--json", "--allow-different-windows"]) == 0
    captured = capsys.readouterr()
    assert "different measurement windows (max_steps 20 vs 8)" in captured.err
    assert json.loads(captured.out)["pairs"][0]["warnings"] == [
        "different measurement windows (max_steps 20 vs 8)"]


def test_fail_if_slower_beyond_noise(two_sets, capsys):
    a, b = two_sets
    # a1 -> b1 is 10% slower, beyond noise: fails with or without --beyond-noise
    assert main(["compare", str(a), str(b), "--fail-if-slower", "5"]) == 1
    assert main(["compare", str(a), str(b), "--fail-if-slower", "5", "--beyond-noise"]) == 1
    capsys.readouterr()
    # a slowdown within noise: 3% apart with 5% step noise on each side
    c, d = a.parent / "c", a.parent / "d"
    record(c, make_result("c1", value=103.0, batch=4, step_cv=0.05), log_lines=step_log(103.0, NOISY, 4))
    record(d, make_result("d1", value=100.0, batch=4, step_cv=0.05, minutes=60),
           log_lines=step_log(100.0, NOISY, 4))
    assert main(["compare", str(c), str(d), "--fail-if-slower", "1"]) == 1
    assert main(["compare", str(c), str(d), "--fail-if-slower", "1", "--beyond-noise"]) == 0
    assert main(["compare", str(c), str(d), "--beyond-noise"]) == 2  # needs --fail-if-slower


def test_geometric_mean_row(two_sets, capsys):
    a, b = two_sets
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = (0.9 * 1.1 * 1.03 * 0.9) ** (1 / 4)
    assert data["geometric_mean_ratio"] == pytest.approx(expected)
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "geometric mean of 4 pairs" in out and f"{expected:.3f}" in out


def test_frameworks_comparison_cites_the_stored_equivalence_check(tmp_path, capsys):
    from datetime import datetime, timezone

    from harness.equivalence.check import compare_traces
    from harness.equivalence.result import EquivalenceResult, FrameworkRun, new_check_dir
    from tests.harness.equivalence.traces import states, trace

    pt = make_result("pt", value=100.0, framework="pytorch")
    record(tmp_path, pt)
    record(tmp_path, make_result("pd", value=80.0, framework="paddle"))
    assert main(["compare", "--frameworks", "pytorch,paddle", "--output", str(tmp_path), "--json"]) == 0
    assert "no equivalence check of paddle and pytorch" in json.loads(capsys.readouterr().out)["equivalence"][pt.case]

    verdict = compare_traces(trace("pytorch"), trace("paddle", losses=(4.0, 3.5, 3.0 + 3e-6)), states())
    folder = new_check_dir(tmp_path, pt.case)
    EquivalenceResult(
        case=pt.case, model="gpt", frameworks=["pytorch", "paddle"], reference="pytorch", steps=3,
        vendor="cpu", scale="smoke", checked_at=datetime(2026, 11, 27, tzinfo=timezone.utc),
        runs=[FrameworkRun(framework=f, status="success") for f in ("pytorch", "paddle")],
        pairs=[verdict], config_differences=[], intentional=[], folder=str(folder),
    ).write(folder)
    assert main(["compare", "--frameworks", "pytorch,paddle", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (f"{pt.case}: equivalent workload: checked on 2026-11-27 (pytorch, paddle, smoke scale, "
            "3 steps fp32), max loss difference 3.00e-06") in " ".join(out.split())


MXNET_RUNS = Path(__file__).parent / "data" / "mxnet_cpu_runs"


def recorded_real_runs(root: Path) -> dict[str, ReportRun]:
    """Three real two-process MXNet MobileNetV1 smoke runs of one config on a busy two-core
    CPU (result.json and train.log as they were recorded), in a results folder."""
    runs = {}
    for folder in sorted(MXNET_RUNS.iterdir()):
        result = BenchmarkResult.model_validate_json((folder / "result.json").read_text())
        run_dir = root / result.run_id
        run_dir.mkdir(parents=True)
        shutil.copyfile(folder / "train.log", run_dir / "train.log")
        ResultStore(root).add(result, run_dir)
        runs[result.run_id[:15]] = ReportRun(result, run_dir)
    return runs


def test_real_runs_21_percent_apart_are_beyond_noise(tmp_path, capsys):
    """Two real runs of one config, the second 20.5% slower with step-time CVs of 30% and 19%:
    the old rule (|B/A - 1| > 2 x combined CV = 70%) called it noise; the per-step test finds
    it, and a 5% difference of the same runs' kind stays within noise."""
    runs = recorded_real_runs(tmp_path / "results")
    read = log_step_samples(Harness.load().registry)
    [slower] = compare_runs(runs["20261128-004915"], runs["20261128-005546"], read_samples=read).pairs
    assert slower.change == pytest.approx(-0.2045, abs=1e-3)
    assert len(slower.samples_a) == len(slower.samples_b) == 25
    assert slower.noise_a.cv == pytest.approx(0.2956, abs=1e-3) and slower.noise_b.cv == pytest.approx(0.1868, abs=1e-3)
    assert slower.beyond_noise is True and slower.interval.high < 1.0
    [close] = compare_runs(runs["20261128-005412"], runs["20261128-005546"], read_samples=read).pairs
    assert close.change == pytest.approx(-0.052, abs=1e-3) and close.beyond_noise is False
    assert main(["compare", "20261128-004915", "20261128-005546", "--output", str(tmp_path / "results"),
                 "--json"]) == 0
    [pair] = json.loads(capsys.readouterr().out)["pairs"]
    assert pair["beyond_noise"] is True and pair["median_ratio_ci"][1] < 1.0
