"""The 27 real logs of ../shared/logs parse to the throughput their reports publish.

Each manifest entry states in words how its published value follows from the log; this
test turns that sentence into ``harness parse`` options (and fails on a sentence it does
not understand), runs the command and compares with ``published_value``: within 0.1%
(reports that truncate rather than round still fall inside), or 1% for entries whose
``match`` is neither ``exact`` nor ``close``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from harness.cli.main import main

REPO = Path(__file__).resolve().parents[3]
LOGS = REPO / ".." / "shared" / "logs"
MANIFEST = LOGS / "manifest.json"

pytestmark = pytest.mark.skipif(
    not MANIFEST.is_file(),
    reason=f"real-log corpus not found at {LOGS} (CI keeps ../shared beside the checkout)",
)


def _entries() -> list[dict]:
    if not MANIFEST.is_file():
        return []
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def method_options(entry: dict) -> list[str]:
    """The `harness parse` options that implement the entry's method sentence."""
    text = entry["method"]
    match = re.search(r"drop first (\d+) .*drop (\d+) lowest", text)
    if match:
        # The report counts its warm-up in records ("drop first 10 ..."), not iterations.
        return ["--method", "trimmed", "--skip-records", match.group(1), "--trim", match.group(2)]
    match = re.search(r"harmonic mean .* after (\d+) warm-up epoch", text)
    if match:
        return ["--method", "harmonic-epoch", "--skip", match.group(1)]
    match = re.search(r"mean of .*(?:after skipping the first|after the first) (\d+)", text)
    if match:
        return ["--method", "harness", "--skip-records", match.group(1)]
    if entry["method_source"] == "framework-printed" and entry["format"] == "dllogger":
        # "re-apply the NGC formula" / "older NGC formula": the value run_pretraining.py
        # computed and printed as training_sequences_per_second.
        return ["--method", "framework"]
    raise AssertionError(f"no harness method for the manifest sentence: {text!r}")


def tolerance(entry: dict) -> float:
    return 1e-3 if entry["match"] in ("exact", "close") else 1e-2


def parse_json(args: list[str]) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["path"])
def test_published_value_is_reproduced(entry):
    log = LOGS / entry["path"]
    code, document = parse_json(["parse", str(log), "--gpus", str(entry["gpus"]), "--json",
                                 *method_options(entry)])
    assert code == 0
    throughput = document["result"]["throughput"]
    published = entry["published_value"]
    assert throughput["value"] == pytest.approx(published, rel=tolerance(entry)), entry["method"]
    assert document["legacy_index"]["JOB_FAIL_FLAG"] == 0
    assert document["legacy_index"]["gpu_num"] == entry["gpus"]


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["path"])
def test_format_is_detected(entry):
    code, document = parse_json(["parse", str(LOGS / entry["path"]), "--gpus", str(entry["gpus"]),
                                 "--json", *method_options(entry)])
    assert document["result"]["config"]["params"]["log_format"] == entry["format"]


def test_every_manifest_format_is_registered():
    from harness.app import Harness

    names = Harness.load(load_entrypoints=False).registry.log_formats.names()
    assert {e["format"] for e in _entries()} <= set(names)
