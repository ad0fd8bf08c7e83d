"""BENCHMARKS.md is generated from benchmarks/tables.toml and the result files it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.main import main
from harness.errors import UserInputError
from harness.report.benchmarks import cited_files, command_text, layout_text, load_spec, render
from harness.models.result import BenchmarkResult

REPO = Path(__file__).resolve().parents[3]
TABLES = REPO / "benchmarks" / "tables.toml"
RESULTS = REPO / "benchmarks" / "results"


def test_committed_benchmarks_md_is_what_the_generator_writes():
    assert (REPO / "BENCHMARKS.md").read_text(encoding="utf-8") == render(TABLES), (
        "BENCHMARKS.md is stale: run `harness benchmarks`")


def test_results_hold_only_files_the_tables_cite():
    cited = {(TABLES.parent / name).resolve() for name in cited_files(load_spec(TABLES))}
    present = {path.resolve() for path in RESULTS.rglob("*") if path.is_file()}
    assert present - cited == set(), "uncited result files: name them in benchmarks/tables.toml or delete them"
    assert cited - present == set()


def _result(name: str) -> BenchmarkResult:
    return BenchmarkResult.model_validate_json((RESULTS / name).read_text(encoding="utf-8"))


def test_the_command_names_what_the_command_line_set_and_nothing_else():
    result = _result("h200/20261126-173443-gpt3_1.3B-pytorch-nvidia-f1a0.result.json")
    command = command_text(result)
    assert command.startswith("harness run --vendor nvidia --case gpt3_1.3B --framework pytorch ")
    assert "--batch-size 16" in command and "--set grad_accum_steps=4" in command
    assert "--max-steps 10" in command and "--set gradient_accumulation_fusion=true" in command
    # precision and master weights came from the vendor config, not the command line
    assert "--precision" not in command and "master_weights" not in command
    assert layout_text(result) == "dp1 tp1 pp1, mbs 16 x 4"


def test_a_multi_node_job_names_its_job_id_and_node_ranks():
    command = command_text(_result("h100/h100pair-gpt3_1.3B-pytorch-nvidia.result.json"))
    assert "--nnodes 2" in command and "--job-id h100pair --node-rank {0..1}" in command


def test_a_field_an_old_result_lacks_is_a_dash():
    text = render(TABLES)
    row = next(line for line in text.splitlines() if "| 211 ms |" in line)
    assert row.endswith("| - | - | - | - |")  # machine, date, commit, command not recorded then


def test_an_unknown_anchor_is_a_one_line_error(tmp_path):
    spec = tmp_path / "tables.toml"
    spec.write_text('[[table]]\ntopic = "x"\n[[table.row]]\nresult = "r.json"\nanchor = "nope"\n')
    with pytest.raises(UserInputError, match="names anchor 'nope'"):
        load_spec(spec)


def test_cli_check_and_write(tmp_path, capsys):
    out = tmp_path / "B.md"
    assert main(["benchmarks", str(TABLES), "--to", str(out), "--check"]) == 1
    assert "is stale" in capsys.readouterr().err
    assert main(["benchmarks", str(TABLES), "--to", str(out)]) == 0
    assert main(["benchmarks", str(TABLES), "--to", str(out), "--check"]) == 0
    assert main(["benchmarks", str(tmp_path / "missing.toml"), "--to", str(out)]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_curves_table_puts_the_loss_curves_side_by_side(tmp_path):
    import shutil

    names = ["h200/20261126-173443-gpt3_1.3B-pytorch-nvidia-f1a0.result.json",
             "h200/20261126-173545-gpt3_1.3B-megatron-nvidia-0c88.result.json"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(RESULTS / name, tmp_path / name)
    spec = tmp_path / "tables.toml"
    spec.write_text('[[table]]\ntopic = "Loss curves"\nkind = "curves"\nevery = 5\n'
                    + "".join(f'[[table.row]]\nresult = "{name}"\n' for name in names))
    text = render(spec)
    assert "## Loss curves" in text and "health: -" in text  # recorded before results had it
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| step |"))
    assert lines[header + 2] == "| 1 | 11.2865 | 11.2150 |"  # step 1 of each run
    assert [line.split(" | ")[0] for line in lines[header + 2:]] == ["| 1", "| 5", "| 10"]


def _scaling_table(tmp_path, row: str, base: str) -> Path:
    import shutil

    for name in (row, base):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(RESULTS / name, tmp_path / name)
    spec = tmp_path / "tables.toml"
    spec.write_text(f'[[table]]\ntopic = "scaling"\n[[table.row]]\nresult = "{row}"\n'
                    f'scaling_from = "{base}"\n')
    return spec


def test_a_weak_scaling_row_shows_its_throughput_a_device_against_the_one_device_run(tmp_path):
    row = "h200/20261128-171619-resnet50-pytorch-nvidia-5e3d.result.json"  # 2 GPUs, 6,455.46 a GPU
    base = "h200/20261128-171420-resnet50-pytorch-nvidia-6364.result.json"  # 1 GPU, 6,648.09
    text = render(_scaling_table(tmp_path, row, base))
    header = next(line for line in text.splitlines() if line.startswith("| case"))
    line = next(line for line in text.splitlines() if "20261128-171619" in line)
    column = header.split(" | ").index("a device vs 1 device")
    assert line.split(" | ")[column] == "97.1% (6364)"  # 6,455.46 / 6,648.09
    assert cited_files(load_spec(tmp_path / "tables.toml")) == {row, base}


def test_scaling_from_a_run_of_another_case_or_batch_is_a_one_line_error(tmp_path):
    row = "h200/20261128-171619-resnet50-pytorch-nvidia-5e3d.result.json"
    other = "h200/20261128-171713-bert_base_seq128-pytorch-nvidia-3df6.result.json"
    with pytest.raises(UserInputError, match="is not a one-device run of resnet50 at micro batch 256"):
        render(_scaling_table(tmp_path, row, other))
