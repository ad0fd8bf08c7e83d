"""The public Python API: ``harness.run``, ``harness.parse``, ``harness.results``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import harness
from harness.cli.main import main
from harness.errors import UserInputError
from harness.models import BenchmarkResult
from tests.harness.cli.test_parse_cli import good_log
from tests.harness.test_hooks import toy  # noqa: F401  (fixture)

PUBLIC = {"run", "parse", "results", "ParsedLog", "RecordSpread", "BenchmarkResult", "LegacyIndex",
          "HarnessError", "UserInputError", "UnavailableError", "hookimpl", "__version__"}


def test_the_public_surface_is_all_and_nothing_else():
    assert set(harness.__all__) == PUBLIC
    for name in harness.__all__:
        assert getattr(harness, name) is not None
    assert harness.BenchmarkResult is BenchmarkResult and harness.UserInputError is UserInputError
    with pytest.raises(AttributeError):
        harness.run_benchmark  # noqa: B018 - internal names are not re-exported


def test_import_harness_stays_light():
    """Every plugin imports harness for hookimpl: the API loads on first use."""
    code = ("import sys, harness; heavy = [m for m in ('harness.api', 'harness.models', 'pydantic') "
            "if m in sys.modules]; print(heavy); harness.results; print('harness.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


def test_run_records_and_returns_the_result(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    app, _ = toy
    result = harness.run("toy", vendor="toyvendor", framework="toyfw", settings={"width": 8, "max_steps": 4},
                         output=tmp_path / "results", app=app)
    assert isinstance(result, BenchmarkResult) and result.status == "success"
    assert result.config.params["width"] == 8 and result.max_steps == 4
    assert result.config.sources["width"] == "cli" and "max_steps" in result.modified
    assert harness.results(tmp_path / "results") == [result]
    assert (tmp_path / "results" / result.run_id / "result.json").is_file()


@pytest.mark.parametrize("settings, message", [
    ({"width": [1, 2]}, "settings['width']: a string, number or boolean, got list"),
    ({"": 1}, "settings: keys are setting names"),
    ({"no_such_key": 1}, "no_such_key"),
])
def test_run_refuses_bad_settings_in_one_line(toy, tmp_path, monkeypatch, settings, message):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(UserInputError, match=re.escape(message)):
        harness.run("toy", vendor="toyvendor", framework="toyfw", settings=settings,
                    output=tmp_path / "results", app=toy[0])
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_boolean_settings_reach_the_config_as_booleans():
    from harness.api import setting_pairs

    assert setting_pairs({"fused": True, "lr": 1e-4, "name": "x"}) == ["fused=true", "lr=0.0001", "name=x"]


def test_parse_returns_the_models_the_cli_prints(tmp_path, capsys):
    log = good_log(tmp_path)
    parsed = harness.parse(log, method="harness", skip=10, gpus=8, case="gpt3_6.7B")
    assert isinstance(parsed, harness.ParsedLog) and parsed.format == "paddlenlp"
    assert parsed.records == 20 and parsed.lines == 20 and not parsed.failed and parsed.ingested is None
    assert parsed.result.throughput.value == pytest.approx(1015.5) and parsed.result.nproc == 8
    assert parsed.spread is not None and parsed.spread.median == pytest.approx(1015.5)
    assert main(["parse", log, "--json", "--method", "harness", "--skip", "10", "--gpus", "8",
                 "--case", "gpt3_6.7B"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["legacy_index"] == parsed.legacy_index.model_dump()
    for key in ("case", "throughput", "nproc", "step_time", "source_sha256"):
        assert printed["result"][key] == json.loads(parsed.result.model_dump_json())[key]


def test_parse_ingests_once(tmp_path):
    log = good_log(tmp_path)
    first = harness.parse(log, ingest_into=tmp_path / "results")
    again = harness.parse(log, ingest_into=tmp_path / "results")
    assert (first.ingested, again.ingested) == (True, False)
    assert [r.run_id for r in harness.results(tmp_path / "results")] == [first.result.run_id]


def test_results_filters(tmp_path):
    from tests.harness.report.factory import make_result, record

    base = datetime(2026, 11, 20, tzinfo=timezone.utc)
    for run_id, case, framework, days, status in (("r-a", "gpt3_125M", "pytorch", 0, "success"),
                                                  ("r-b", "gpt3_125M", "paddle", 1, "success"),
                                                  ("r-c", "resnet50", "pytorch", 2, "failed")):
        result = make_result(run_id=run_id, case=case, framework=framework, status=status)
        record(tmp_path, result.model_copy(update={"started_at": base + timedelta(days=days)}))
    ids = lambda found: [r.run_id for r in found]  # noqa: E731
    assert ids(harness.results(tmp_path)) == ["r-c", "r-b", "r-a"]
    assert ids(harness.results(tmp_path, case="gpt3_125M", framework=["pytorch", "paddle"])) == ["r-b", "r-a"]
    assert ids(harness.results(tmp_path, status="failed")) == ["r-c"]
    assert ids(harness.results(tmp_path, since=datetime(2026, 11, 21))) == ["r-c", "r-b"]
    assert ids(harness.results(tmp_path, limit=1)) == ["r-c"]
    assert ids(harness.results(tmp_path, run_id="r-b")) == ["r-b"]
    assert harness.results(tmp_path, run_id="r-") == []  # not unique
    with pytest.raises(UserInputError, match="no results database"):
        harness.results(tmp_path / "missing")


def test_the_cli_commands_go_through_the_api(tmp_path, monkeypatch, capsys):
    """``harness results``/``parse``/``run`` call the public functions (one implementation)."""
    calls = []
    real = {name: getattr(harness, name) for name in ("results", "parse", "run")}
    for name in real:
        def spy(*args, _name=name, **kwargs):
            calls.append(_name)
            return real[_name](*args, **kwargs)
        monkeypatch.setattr(harness, name, spy)
    log = good_log(tmp_path)
    assert main(["parse", log, "--ingest", "--output", str(tmp_path / "results")]) == 0
    assert main(["results", "list", "--output", str(tmp_path / "results")]) == 0
    assert main(["run", "--case", "no-such-case", "--output", str(tmp_path / "results")]) == 2
    capsys.readouterr()
    assert calls == ["parse", "results", "run"]
