"""`harness parse --compliance`: MLPerf's own checker (the mlperf-logging package) beside the figure."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.logparse import compliance

CORPUS = Path(__file__).resolve().parent / "real_logs"
LLAMA_8B = CORPUS / "mlperf3/v5.1/amd_MI350X_EPYC_9575F_pytorch_llama31_8b_result_9.txt"
BERT_V11 = CORPUS / "mlperf3/v1.1/lenovo_SR670v2_4xA100-SXM4-80GB-500W_bert_result_6.txt"
needs_package = pytest.mark.skipif(
    not compliance.available(),
    reason="the mlperf-logging package is not installed (pip install mlperf-logging): its checker is "
           "what --compliance runs")


def parse(*args) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["parse", *map(str, args)])
    return code, out.getvalue()


@needs_package
def test_a_compliant_log_passes_beside_the_figure():
    code, text = parse(LLAMA_8B, "--compliance", "--compliance-ruleset", "5.1.0", "--json")
    document = json.loads(text)
    assert code == 0 and document["result"]["throughput"]["value"] == pytest.approx(24.984, rel=1e-4)
    verdict = document["compliance"]
    assert verdict["checked"] and verdict["passed"] and verdict["ruleset"] == "5.1.0"
    assert verdict["checker"].startswith("mlperf-logging ")


@needs_package
def test_the_checkers_complaints_are_reported():
    code, text = parse(BERT_V11, "--compliance", "--compliance-ruleset", "1.1.0")
    assert code == 0  # the figure is still harness's to report; the verdict stands beside it
    assert "training ruleset 1.1.0): FAILED" in text
    assert "Required EXACTLY_ONE occurrence of 'submission_org' but found 2" in text


@needs_package
def test_default_ruleset_is_the_newest_the_package_knows():
    assert compliance.check(LLAMA_8B).ruleset == compliance.training_rulesets()[-1]


@needs_package
def test_other_formats_are_not_checked():
    log = CORPUS / "gluoncv_cifar/cifar_resnet20_v1.log"
    code, text = parse(log, "--compliance", "--json")
    assert json.loads(text)["compliance"] == {"checked": False, "reason": "not an MLPerf log (format gluoncv)"}


@needs_package
def test_unknown_ruleset_is_one_line_exit_2(capsys):
    code, _ = parse(LLAMA_8B, "--compliance", "--compliance-ruleset", "9.9.9")
    err = capsys.readouterr().err
    assert code == 2 and "unknown MLPerf training ruleset '9.9.9'" in err and "5.1.0" in err


def test_without_the_package_the_error_names_it(monkeypatch, capsys):
    monkeypatch.setattr(compliance, "available", lambda: False)
    code, _ = parse(LLAMA_8B, "--compliance")
    err = capsys.readouterr().err
    assert code == 2 and "pip install mlperf-logging" in err and "Traceback" not in err


def test_ruleset_without_compliance_is_refused(capsys):
    code, _ = parse(LLAMA_8B, "--compliance-ruleset", "5.1.0")
    assert code == 2 and "add --compliance" in capsys.readouterr().err
