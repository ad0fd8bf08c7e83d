"""FlagPerf config names become fleet layouts; what a device cannot run is refused clearly."""

from __future__ import annotations

import pytest

from harness.errors import UnavailableError, UserInputError
from harness_paddle.parallel_layout import ParallelLayout, parse_config_name, resolve_layout


@pytest.mark.parametrize("name, expected", [
    ("config_TP1PP1SH2SP8A10080Gx1x8", (1, 1, 2, 8)),
    ("config_TP2PP1SH1SP4A10080Gx1x8", (2, 1, 1, 4)),
    ("config_TP2PP1SH2SP4A10080Gx1x8", (2, 1, 2, 4)),
    ("config_TP2PP4SH1SP1A10080Gx1x8", (2, 4, 1, 1)),
])
def test_seed_config_names(name, expected):
    layout = parse_config_name(name)
    assert (layout.tensor_parallel_degree, layout.pipeline_parallel_degree,
            layout.sharding_stage, layout.sharding_degree) == expected


def test_names_without_a_layout():
    assert parse_config_name("default") is None
    with pytest.raises(UserInputError):
        parse_config_name("config_TP0PP1SH1SP1")


def test_gpu_layouts_accepted_and_data_parallel_remainder():
    layout = resolve_layout("config_TP2PP1SH1SP4A10080Gx1x8", {}, model="gpt", device_kind="gpu", world=8)
    assert layout.hybrid and layout.data_parallel_degree(8) == 1
    layout = resolve_layout("config_TP1PP1SH2SP4", {}, model="gpt", device_kind="gpu", world=8)
    assert layout.data_parallel_degree(8) == 2


def test_refusals_name_the_reason():
    with pytest.raises(UnavailableError, match="need GPUs"):
        resolve_layout("config_TP2PP1SH1SP4A10080Gx1x8", {}, model="gpt", device_kind="cpu", world=8)
    with pytest.raises(UnavailableError, match="pipeline parallel"):
        resolve_layout("config_TP2PP4SH1SP1A10080Gx1x8", {}, model="gpt", device_kind="gpu", world=8)
    with pytest.raises(UserInputError, match="does not divide"):
        resolve_layout("config_TP2PP1SH1SP4A10080Gx1x8", {}, model="gpt", device_kind="gpu", world=6)
    with pytest.raises(UnavailableError, match="data parallel only"):
        resolve_layout(None, {"tensor_parallel_degree": 2}, model="bert", device_kind="gpu", world=2)
    with pytest.raises(UserInputError, match="sharding stage"):
        resolve_layout(None, {"sharding_degree": 2}, model="gpt", device_kind="gpu", world=2)


def test_plain_data_parallel_everywhere():
    params = {"tensor_parallel_degree": 1, "pipeline_parallel_degree": 1, "sharding_stage": 0,
              "sharding_degree": 0}
    layout = resolve_layout(None, params, model="resnet50", device_kind="cpu", world=2)
    assert layout == ParallelLayout() and not layout.hybrid


def test_cli_refuses_hybrid_layout_on_cpu(tmp_path, monkeypatch, capsys):
    from harness.cli.main import main

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--vendor", "cpu", "--case", "gpt3_125M", "--framework", "paddle",
                 "--scale", "smoke", "--nproc", "2", "--set", "tensor_parallel_degree=2",
                 "--max-steps", "6"])
    err = capsys.readouterr().err
    assert code == 2 and "need GPUs" in err and "Traceback" not in err


def test_conflicting_parameters_are_refused():
    with pytest.raises(UserInputError, match="encodes TP2PP1SH1SP4"):
        resolve_layout("config_TP2PP1SH1SP4A10080Gx1x8", {"tensor_parallel_degree": 4},
                       model="gpt", device_kind="gpu", world=8)


def test_nvidia_paddle_configs_agree_with_their_names():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "vendors" / "harness_nvidia" / "configs"
    files = sorted(root.glob("gpt3_*/paddle/config_*.toml"))
    assert len(files) == 8
    for path in files:
        values = tomllib.loads(path.read_text())["values"]
        from_name = parse_config_name(path.stem)
        assert from_name.tensor_parallel_degree == values["tensor_parallel_degree"], path
        assert from_name.pipeline_parallel_degree == values["pipeline_parallel_degree"], path
        assert from_name.sharding_stage == values["sharding_stage"], path
        assert from_name.sharding_degree == values["sharding_degree"], path
        if from_name.pipeline_parallel_degree == 1:
            assert resolve_layout(path.stem, values, model="gpt", device_kind="gpu", world=8) == from_name
        else:
            with pytest.raises(UnavailableError, match="pipeline parallel"):
                resolve_layout(path.stem, values, model="gpt", device_kind="gpu", world=8)
