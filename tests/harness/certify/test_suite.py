"""Suites are data: built-ins load, bad files are one-line errors (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pluggy
import pytest

from harness.certify import convergence
from harness.certify.suite import BUILTIN_DIR, load_suite, plan_points, suite_sources
from harness.cli.main import main
from harness.errors import UserInputError

hookimpl = pluggy.HookimplMarker("harness")
GOOD = """
[suite]
name = "t"
kind = "smoke"
scale = "smoke"
repeats = 3
cv_bound = 0.2
checkpoints = [4]

[[point]]
case = "gpt3_125M"
nproc = [1, "all"]
"""


def test_builtin_suites_load_and_expand(harness, registry):
    names = set(suite_sources())
    assert {"smoke", "gpt3", "ngc_bert_base", "resnet50", "mobilenet_v1"} <= names
    for name in names:
        suite = load_suite(name, harness)
        assert plan_points(suite, registry, device_count=8)
    smoke = plan_points(load_suite("smoke", harness), registry, device_count=1)
    assert [(p.case, p.nproc) for p in smoke] == [
        ("gpt3_125M", 1), ("gpt3_125M", 2), ("bert_base_seq128", 1), ("bert_base_seq128", 2),
        ("resnet50", 1), ("resnet50", 2)]
    assert load_suite("gpt3", harness).spec.suite.repeats >= 5  # full suites: 5 repeats


def test_the_benchmark_suites_in_the_repository_load(harness, registry):
    folder = Path(__file__).resolve().parents[3] / "benchmarks" / "certify"
    files = sorted(folder.glob("*.toml"))
    assert files
    for path in files:
        suite = load_suite(str(path), harness)
        assert plan_points(suite, registry, device_count=max(max(p.nproc) for p in suite.spec.point))
        # Their committed reference bands were recorded with fp32 parameters under autocast, at a
        # global batch each suite must pin: a vendor default may change (it did: mbs 8 -> 16 x 4).
        for point in suite.spec.point:
            assert point.set["master_weights"] == "model"
            for nproc in point.nproc:
                gbs = point.set["micro_batch_size"] * point.set["grad_accum_steps"] * nproc
                assert convergence.load_reference(point.case, suite.spec.suite.scale, "pytorch",
                                                  point.precision, gbs, suite.spec.suite.max_steps
                                                  ) is not None, path.name


def test_all_layout_is_the_device_count_and_deduplicated(harness, registry, tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(GOOD)
    suite = load_suite(str(path), harness)
    assert [p.nproc for p in plan_points(suite, registry, device_count=8)] == [1, 8]
    assert [p.nproc for p in plan_points(suite, registry, device_count=1)] == [1]


@pytest.mark.parametrize("text, message", [
    (GOOD.replace('name = "t"', 'name = "t'), "TOML syntax error"),
    (GOOD.replace("cv_bound = 0.2", "cv_bound = 0.2\nbogus = 1"), "suite.bogus: Extra inputs"),
    (GOOD + 'set = { not_a_setting = 3 }\n', "'not_a_setting' is not a setting of case 'gpt3_125M'"),
    (GOOD + 'set = { hidden_size = 3 }\n', "identifies the case"),
    (GOOD.replace("repeats = 3", "repeats = 3\nkind_x = 1").replace('kind = "smoke"', 'kind = "full"'),
     "suite.kind_x"),
    (GOOD.replace('kind = "smoke"', 'kind = "full"'), "needs repeats >= 5"),
    (GOOD.replace('case = "gpt3_125M"', 'case = "gpt3_999M"'), "gpt3_999M"),
])
def test_bad_suite_files(harness, tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UserInputError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        load_suite(str(path), harness)
    assert "\n" not in str(info.value)


def test_unknown_suite_is_exit_2_one_line(capsys):
    assert main(["certify", "run", "--vendor", "cpu", "--suite", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown suite 'nope'") and "smoke" in err and "\n" not in err


def test_suite_file_errors_are_exit_2(tmp_path, capsys):
    path = tmp_path / "broken.toml"
    path.write_text("[suite\n")
    assert main(["certify", "run", "--vendor", "cpu", "--suite", str(path)]) == 2
    assert "TOML syntax error" in capsys.readouterr().err


def test_suites_command_lists_what_each_runs(capsys):
    assert main(["certify", "suites"]) == 0
    out = capsys.readouterr().out
    assert "smoke (builtin, smoke, smoke scale, 3 repeats" in out
    assert "gpt3_125M nproc 1,2" in out and "gpt3_1.3B nproc 1,all bf16" in out


def test_hook_certify_suites(tmp_path, registry):
    """A plugin's suite is listed and loadable by name; it cannot replace a built-in one."""
    from harness.app import Harness

    mine = tmp_path / "acme_llm.toml"
    mine.write_text(GOOD)
    shadow = tmp_path / "smoke.toml"
    shadow.write_text(GOOD)

    class Plugin:
        @hookimpl
        def certify_suites(self):
            return [mine, shadow]

    harness = Harness.load(load_entrypoints=False, extra=(Plugin(),))
    sources = suite_sources(harness)
    assert sources["acme_llm"] == (mine, "plugin")
    assert sources["smoke"] == (BUILTIN_DIR / "smoke.toml", "builtin")
    assert load_suite("acme_llm", harness).source == "plugin:acme_llm"
