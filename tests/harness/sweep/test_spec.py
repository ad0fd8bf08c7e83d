"""Sweep matrices: TOML files and command-line lists expand to the right points."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.sweep.spec import SweepPoint, SweepSpec, apply_cli_axes, load_sweep_file


def _write(tmp_path, text: str):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_cli_lists_multiply():
    points = apply_cli_axes([], {"case": ["gpt3_125M"], "framework": ["pytorch", "paddle"],
                                 "precision": ["fp32", "bf16"], "micro_batch_size": [4, 8],
                                 "nproc": [1, 2]}, {"scale": "smoke", "max_steps": 8})
    assert len(points) == 2 * 2 * 2 * 2
    assert {(p.framework, p.precision, p.micro_batch_size, p.nproc) for p in points} == {
        (f, pr, b, n) for f in ("pytorch", "paddle") for pr in ("fp32", "bf16")
        for b in (4, 8) for n in (1, 2)}
    assert all(p.scale == "smoke" and p.max_steps == 8 for p in points)


def test_bundle_axis_keeps_values_coupled(tmp_path):
    spec = load_sweep_file(_write(tmp_path, """
[sweep]
name = "t"
vendor = "nvidia"
[matrix]
case = ["c"]
nproc = [1, 8]
column = [{ precision = "fp32", micro_batch_size = 32 }, { precision = "fp16", micro_batch_size = 64 }]
"""))
    points = spec.expand()
    assert [(p.nproc, p.precision, p.micro_batch_size) for p in points] == [
        (1, "fp32", 32), (1, "fp16", 64), (8, "fp32", 32), (8, "fp16", 64)]
    assert all(p.vendor == "nvidia" for p in points)


def test_batch_size_the_earlier_name_is_read_as_micro_batch_size(tmp_path):
    defaults_and_bundle = """
[sweep]
batch_size = 4
[matrix]
case = ["c"]
column = [{ precision = "fp32" }, { precision = "fp16", batch_size = 64 }]
"""
    spec = load_sweep_file(_write(tmp_path, defaults_and_bundle))
    assert [(p.precision, p.micro_batch_size) for p in spec.expand()] == [("fp32", 4), ("fp16", 64)]
    axis = load_sweep_file(_write(tmp_path, defaults_and_bundle + """
[[group]]
name = "axis"
[group.matrix]
batch_size = [8, 16]
"""))
    assert [(p.precision, p.micro_batch_size) for p in axis.expand()] == [
        ("fp32", 8), ("fp32", 16), ("fp16", 8), ("fp16", 16)]
    both = _write(tmp_path, '[sweep]\nbatch_size = 4\nmicro_batch_size = 8\n[matrix]\ncase = ["c"]\n')
    with pytest.raises(UserInputError, match="'batch_size' and 'micro_batch_size' are the same field; "
                                             "give 'micro_batch_size' alone"):
        load_sweep_file(both).expand()


def test_cli_list_replaces_a_field_inside_bundles(tmp_path):
    spec = load_sweep_file(_write(tmp_path, """
[matrix]
case = ["c"]
column = [{ precision = "fp32", micro_batch_size = 32 }, { precision = "fp16", micro_batch_size = 64 }]
"""))
    points = apply_cli_axes(spec.expand(), {"precision": ["bf16"], "nproc": [1, 2]}, {})
    assert sorted((p.precision, p.micro_batch_size, p.nproc) for p in points) == [
        ("bf16", 32, 1), ("bf16", 32, 2), ("bf16", 64, 1), ("bf16", 64, 2)]
    assert spec.name == "s"  # default name: the file's stem


def test_groups_and_set_tables_merge(tmp_path):
    spec = load_sweep_file(_write(tmp_path, """
[sweep]
set = { recompute = "none" }
[[group]]
name = "A"
[group.matrix]
case = ["x"]
cfg = [{ label = "one", set = { sharding_stage = 2 } }, { label = "two", set = { recompute = "full" } }]
[[group]]
name = "B"
nproc = 4
[group.matrix]
case = ["y", "z"]
"""))
    points = spec.expand()
    assert [(p.group, p.case, p.label) for p in points] == [
        ("A", "x", "one"), ("A", "x", "two"), ("B", "y", None), ("B", "z", None)]
    assert points[0].set_pairs() == ["recompute=none", "sharding_stage=2"]
    assert points[1].set_pairs() == ["recompute=full"]
    assert points[2].nproc == 4


def test_duplicates_are_dropped():
    points = apply_cli_axes([SweepPoint(case="c"), SweepPoint(case="c")], {"nproc": [1, 1]}, {})
    assert len(points) == 1


@pytest.mark.parametrize("text, message", [
    ("[matrix]\ncase = 'c'\n", "must be a non-empty list"),
    ("[matrix]\nbogus = [1, 2]\n", "must be tables of fields"),
    ("[matrix]\ncolumn = [{ precisoin = 'fp32' }]\n", "unknown field(s) precisoin"),
    ("[matrix]\nprecision = ['fp4']\n", "invalid 'precision'"),
    ("[matrix]\nnproc = [0]\n", "invalid 'nproc'"),
    ("[sweeps]\n", "unknown top-level table"),
    ("[[group]]\n[group.matrix]\ncase=['c']\n", "needs a name"),
    ("[matrix\n", "not valid TOML"),
    ("sweep = 3\n", "[sweep] must be a table"),
    ("group = 'x'\n", "'group' must be an array of tables"),
    ("group = [1]\n", "[[group]] number 1 must be a table"),
    ("[[group]]\nname = 1\n", "[[group]] number 1: invalid 'name'"),
    ("[[group]]\nname = 'a'\nmatrix = 3\n", "[[group]] number 1: invalid 'matrix'"),
    ("[sweep]\ncase = 'c'\nset = 3\n", "'set' must be a table"),
    ("[sweep]\ndescription = 3\n", "invalid 'description'"),
])
def test_bad_files_give_clear_errors(tmp_path, text, message):
    with pytest.raises(UserInputError, match=None) as info:
        load_sweep_file(_write(tmp_path, text)).expand()
    assert message in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(UserInputError, match="does not exist"):
        load_sweep_file(tmp_path / "nope.toml")


def test_unreadable_files_give_clear_errors(tmp_path):
    with pytest.raises(UserInputError, match="is a folder"):
        load_sweep_file(tmp_path)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UserInputError, match="not UTF-8 text"):
        load_sweep_file(binary)


def test_empty_spec_expands_to_one_blank_point():
    assert SweepSpec().expand() == [SweepPoint()]


def test_set_values_hydra_style():
    from harness.sweep.spec import set_values

    assert set_values("full,none") == ["full", "none"]
    assert set_values("1e-3") == ["1e-3"]
    assert set_values('"a,b"') == ["a,b"] and set_values("'a,b'") == ["a,b"]
    with pytest.raises(UserInputError, match="empty item"):
        set_values("full,")


def test_set_axis_multiplies_points_and_labels_them():
    from harness.sweep.spec import SweepPoint, apply_cli_axes

    points = apply_cli_axes([SweepPoint(case="gpt3_125M")], {"nproc": [1, 2]}, {"set": {"seed": "7"}},
                            {"recompute": ["full", "none"]})
    assert [(p.nproc, dict(p.set)["recompute"], p.label) for p in points] == [
        (1, "full", "recompute=full"), (1, "none", "recompute=none"),
        (2, "full", "recompute=full"), (2, "none", "recompute=none")]
    assert all(dict(p.set)["seed"] == "7" for p in points)


def test_sweep_cli_turns_a_comma_set_into_an_axis(capsys, tmp_path):
    from harness.cli.main import main

    assert main(["sweep", "--case", "gpt3_125M", "--scale", "smoke", "--set", "recompute=full,none",
                 "--set", "learning_rate=1e-3", "--dry-run", "--output", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "2 points, 2 to run" in captured.err
    assert "[recompute=full]" in captured.out and "[recompute=none]" in captured.out


def test_sweep_file_values_are_labelled_with_the_file_not_the_command_line(tmp_path, monkeypatch):
    """A sweep file's values are the file's (``sweep:<file name>``), the command line's stay
    ``cli``; window keys from either still mark the run modified."""
    from harness.cli.main import main
    from harness.result_builder import modified_keys
    from harness.sweep import planner

    planned = []

    def recording(*args, **kwargs):
        planned.extend(plan_sweep(*args, **kwargs))
        return planned

    plan_sweep = planner.plan_sweep
    monkeypatch.setattr(planner, "plan_sweep", recording)
    path = tmp_path / "explore.toml"
    path.write_text('[sweep]\ncase = "gpt3_125M:pytorch_2.11:cpu:1:2:1"\nscale = "smoke"\n'
                    'max_steps = 6\nset = {learning_rate = 0.002, recompute = "full"}\n'
                    '[matrix]\nmicro_batch_size = [2]\nprecision = ["fp32"]\n')
    assert main(["sweep", str(path), "--max-steps", "7", "--precision", "bf16", "--set", "seed=3",
                 "--dry-run", "--output", str(tmp_path / "results")]) == 0
    [point] = planned
    sources = point.context.config.sources
    assert {key: sources[key] for key in ("learning_rate", "recompute", "micro_batch_size",
                                          "nproc", "nnodes")} == dict.fromkeys(
        ("learning_rate", "recompute", "micro_batch_size", "nproc", "nnodes"), "sweep:explore.toml")
    assert (sources["max_steps"], sources["precision"], sources["seed"]) == ("cli", "cli", "cli")
    assert point.context.config.settings.max_steps == 7
    assert modified_keys(point.context.config) == ["learning_rate", "max_steps", "seed"]

    # A case string given on the command line: its layout is the command line's, not the file's.
    planned.clear()
    assert main(["sweep", str(path), "--case", "gpt3_125M:pytorch_2.11:cpu:1:2:1", "--dry-run",
                 "--output", str(tmp_path / "results")]) == 0
    sources = planned[0].context.config.sources
    assert (sources["nproc"], sources["nnodes"]) == ("cli", "cli")
    assert sources["micro_batch_size"] == sources["learning_rate"] == "sweep:explore.toml"

    # Without a file every value is the command line's.
    planned.clear()
    assert main(["sweep", "--case", "gpt3_125M", "--scale", "smoke", "--max-steps", "6",
                 "--dry-run", "--output", str(tmp_path / "results")]) == 0
    assert planned[0].context.config.sources["max_steps"] == "cli"
