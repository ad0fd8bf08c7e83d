"""Real logs written by other people (tests/harness/logparse/real_logs) reproduce the figures
published next to them in ``manifest.json``.

Each entry names its provenance (repository, commit, path), its sha256 and the independently
published figure: within 0.1% where the source prints the figure itself (``match`` ``exact``),
1% where it was computed by hand from the log's own records. MLPerf entries also carry the
status and time to train (run_start to run_stop, in minutes) the result must show.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path

import pytest

from harness.cli.main import main

CORPUS = Path(__file__).resolve().parent / "real_logs"
# One manifest per collection (``real_logs/manifest.json`` and ``real_logs/<source>/manifest.json``);
# an entry's path is relative to the corpus folder.
MANIFESTS = sorted(CORPUS.rglob("manifest.json"))
ENTRIES = [entry for manifest in MANIFESTS for entry in json.loads(manifest.read_text(encoding="utf-8"))]


def tolerance(match: str) -> float:
    return 1e-3 if match == "exact" else 1e-2


def parse_json(entry: dict) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["parse", str(CORPUS / entry["path"]), "--gpus", str(entry["gpus"]), "--json",
                     *entry["options"]])
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["path"])
def test_file_is_the_recorded_one(entry):
    raw = (CORPUS / entry["path"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == entry["sha256"]
    assert len(raw.decode("utf-8")) == entry["chars"]
    assert len(raw) < 300_000


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["path"])
def test_published_figures_are_reproduced(entry):
    code, document = parse_json(entry)
    result = document["result"]
    assert result["config"]["params"]["log_format"] == entry["format"]
    throughput = result["throughput"]
    assert throughput["value"] == pytest.approx(entry["published_value"], rel=tolerance(entry["match"]))
    assert throughput["unit"] == entry["unit"]
    if "framework_field" in entry:
        assert throughput["field"] == entry["framework_field"]
    if "records_used" in entry:
        assert throughput["records_used"] == entry["records_used"]
    if "samples_from" in entry:
        assert entry["samples_from"] in throughput["samples_from"]
    if "other_value" in entry:  # the figure shown beside the default one
        assert throughput["other"]["value"] == pytest.approx(entry["other_value"], rel=1e-3)
    if "status" in entry:
        assert code == 0 and result["status"] == entry["status"]
        assert not any("truncated" in warning for warning in result["warnings"])
    if "time_to_train_min" in entry:
        assert result["time_to_train_min"] == pytest.approx(
            entry["time_to_train_min"], rel=tolerance(entry["time_to_train_match"]))


def test_every_entry_names_its_source_and_figure():
    for entry in ENTRIES:
        assert entry["source_repo"] and len(entry["source_commit"]) == 40 and entry["source_path"]
        assert entry["published_in"] and entry["unit"].endswith("/s")


def test_corpus_covers_each_parsing_class():
    """Issue classes 1-5 (samples trained, warm-up units, the framework's figure, LLM units,
    layouts) each have real logs of their own."""
    assert {e["issue_class"] for e in ENTRIES if "issue_class" in e} >= {1, 2, 3, 4, 5}


def test_corpus_spans_several_mlperf_submitters():
    submitters = {e["submitter"] for e in ENTRIES if e["format"] == "mllog"}
    assert len(submitters) >= 3
