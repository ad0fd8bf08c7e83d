"""The Megatron-core memory estimate against the peaks measured on GPUs, and what the planner
does with it on an 80 GB H100 (no GPU and no Megatron-core needed)."""

from __future__ import annotations

import sys

import pytest

from harness.memory_planner import PLANNER_SOURCE, planner_note, usable_bytes
from harness.models.config import RunSettings
from harness_cases.gpt_cases import gpt3_case
from harness_cases.gpt_flops import gpt_parameter_count
from harness_megatron.case_names import parse_case_name
from harness_megatron.cases import matrix_case
from harness_megatron.megatron_memory import (estimate, layout_of, memory_plan, rank_parameters,
                                              stage_estimate)

GIB = 2**30
H100_BYTES = 85_520_809_984  # NVML total of "NVIDIA H100 80GB HBM3" (the results' devices)
H200_BYTES = 150_754_820_096  # NVML total of "NVIDIA H200"


def params(case: str, **changes) -> dict:
    """A registered case's parameters: the Megatron-LM matrix, or a gpt3_* case."""
    try:
        spec = matrix_case(parse_case_name(case))
    except Exception:
        spec = gpt3_case(case)
    return {**spec.params, **changes}


def test_rank_parameters_add_up_to_the_model():
    """Every rank's share, each parameter counted once (the replicated LayerNorms, positions
    and row-parallel biases on one tensor rank, the last stage's embedding copy not at all),
    is the model's N; at tp 1 / pp 1 one rank holds all of it."""
    for case in ("DP_1x1x1_2_1536x16", "gpt3_1.3B", "gpt3_6.7B"):
        p = params(case)
        n = gpt_parameter_count(num_layers=p["num_layers"], hidden_size=p["hidden_size"],
                                vocab_size=p["vocab_size"], seq_len=p["seq_len"])
        assert rank_parameters(p, 1, 1, 0) == n
    p, h = params("DP_PP_1x1x4_512_1536x16"), 1536
    stages = [rank_parameters(p, 1, 4, s) for s in range(4)]
    assert sum(stages) - p["vocab_size"] * h == gpt_parameter_count(
        num_layers=16, hidden_size=h, vocab_size=p["vocab_size"], seq_len=2048)
    # tp 2: the matrices and column-parallel biases halve; LayerNorms and the other biases stay.
    per_layer_replicated = 2 * h + 4 * h
    tp2 = rank_parameters(p, 2, 1, 0)
    assert 2 * tp2 - gpt_parameter_count(num_layers=16, hidden_size=h, vocab_size=p["vocab_size"],
                                         seq_len=2048) == 16 * per_layer_replicated + 2048 * h + 2 * h


# torch.cuda.max_memory_allocated (the largest rank's) of the megatron runs recorded in
# benchmarks/results/: case, micro batch, micro-batches a step, GPUs, sharding stage, MiB, runs.
MEASURED = [
    ("DP_1x1x1_2_1536x16", 2, 1, 1, 0, 13_725.3),        # H200 12d9, de29; H100 5f6b
    ("DP_2x1x1_4_1536x16", 2, 1, 2, 0, 13_725.4),        # H100 x2 4554
    ("DP_4x1x1_8_1536x16", 2, 1, 4, 0, 13_725.3),        # H200 x4 472c
    ("DP_4x1x1_8_1536x16", 2, 1, 4, 1, 9_133.3),         # H200 x4 8f3f: distributed optimizer
    ("MP_1x1x1_8_768x12", 8, 1, 1, 0, 11_907.1),         # H200 a136; H100 639c
    ("MP_1x2x1_16_1536x16", 16, 1, 2, 0, 22_693.5),      # H200 x2 c874; H100 x2 da01: tp 2
    ("MP_1x4x1_16_1536x16", 16, 1, 4, 0, 11_460.4),      # H200 x4 8e6b: tp 4
    ("2D_2x2x1_16_1536x16", 8, 1, 4, 0, 13_687.5),       # H200 x4 e58d: dp 2 x tp 2
    ("DP_PP_1x1x4_512_1536x16", 16, 32, 4, 0, 30_691.9),  # H200 x4 361f: pp 4
    ("gpt3_1.3B", 8, 1, 1, 0, 52_104.1),                 # H200 5011, 83c8 (x8); H100 2c2a, e1d4
    ("gpt3_1.3B", 16, 4, 1, 0, 81_555.0),                # H200 f765, b2a5
    ("gpt3_6.7B", 2, 4, 1, 0, 132_013.9),                # H200 305f, 1201 (x8)
]


@pytest.mark.parametrize("case, mbs, micro_batches, gpus, sharding, measured_mib", MEASURED)
def test_estimate_is_within_one_percent_of_the_measured_peak(case, mbs, micro_batches, gpus,
                                                             sharding, measured_mib):
    """What megatron_memory's docstring claims of its fitted coefficients."""
    got = estimate(params(case, sharding_stage=sharding), precision="bf16", micro_batch=mbs,
                   micro_batches=micro_batches, world=gpus, recompute="none")
    assert got.total_bytes == sum(got.components.values())
    assert got.total_bytes / (measured_mib * 2**20) == pytest.approx(1.0, abs=0.01)


def test_an_80gb_h100_holds_micro_batch_8_and_not_16():
    """gpt3_1.3B at micro batch 16 ran out of memory on one H100 at step 1 (78.8 GiB in use,
    asking for 6.14 GiB more); at 8 it peaked at 50.9 GiB."""
    usable = usable_bytes(H100_BYTES)
    eight, sixteen = (estimate(params("gpt3_1.3B"), precision="bf16", micro_batch=b,
                               micro_batches=4, world=1, recompute="none") for b in (8, 16))
    assert eight.total_bytes <= usable < sixteen.total_bytes


def test_the_h100_plan_halves_the_micro_batch_and_keeps_the_global_batch():
    settings = RunSettings(precision="bf16", micro_batch_size=16, grad_accum_steps=4)
    plan = memory_plan(params("gpt3_1.3B"), settings, usable_hint=usable_bytes(H100_BYTES))
    assert plan.candidates[0].overrides == {}
    fitting = [c for c in plan.candidates if c.estimate.total_bytes <= usable_bytes(H100_BYTES)]
    assert fitting[0].overrides == {"micro_batch_size": 8, "grad_accum_steps": 8}
    assert any(c.overrides == {"recompute": "full"} for c in fitting)  # micro batch kept
    assert plan.hints and "tensor_parallel_degree=2" in plan.hints[0]


def test_the_foreach_optimizer_s_copy_does_not_fit_gpt3_6_7b_on_an_h200():
    """Runs fc3a and d54f (AdamW in torch's multi-tensor mode) ran out of memory in the
    optimizer step with 131.7 GiB allocated, at micro batch 2 and at 1; the fused kernel ran."""
    foreach = [estimate(params("gpt3_6.7B", fused_optimizer=False), precision="bf16",
                        micro_batch=b, micro_batches=8, world=1, recompute="none") for b in (2, 1)]
    fused = estimate(params("gpt3_6.7B"), precision="bf16", micro_batch=2, micro_batches=8,
                     world=1, recompute="none")
    assert all(e.total_bytes > max(131.7 * GIB, usable_bytes(H200_BYTES)) for e in foreach)
    assert "optimizer step temporaries" in foreach[0].components
    assert fused.total_bytes <= usable_bytes(H200_BYTES)


def test_data_parallel_runs_may_shard_the_optimizer_and_matrix_cases_get_no_layout_hint():
    p = params("DP_4x1x1_8_1536x16")
    settings = RunSettings(precision="bf16", micro_batch_size=2, nproc=4)
    plan = memory_plan(p, settings, recompute_choices=("none", "full"), layout_fixed=True,
                       usable_hint=usable_bytes(H100_BYTES))
    sharded = next(c for c in plan.candidates if c.overrides == {"sharding_stage": 1})
    assert sharded.estimate.components["optimizer states"] * 4 == plan.candidates[0].estimate.components[
        "optimizer states"]
    assert all(c.overrides.get("recompute") != "selective" for c in plan.candidates)
    assert plan.hints == []


def test_selective_recompute_is_offered_only_where_it_drops_the_score_matrices():
    settings = RunSettings(precision="bf16", micro_batch_size=8)
    sdpa = memory_plan(params("gpt3_1.3B"), settings)
    local = memory_plan(params("gpt3_1.3B", attention_backend="local"), settings)
    assert not any(c.overrides.get("recompute") == "selective" for c in sdpa.candidates)
    selective = next(c for c in local.candidates if c.overrides == {"recompute": "selective"})
    assert selective.estimate.total_bytes == sdpa.candidates[0].estimate.total_bytes
    assert local.candidates[0].estimate.total_bytes > 2 * sdpa.candidates[0].estimate.total_bytes


def test_pipeline_stages_hold_as_many_micro_batches_as_are_in_flight():
    """1F1B: the first of 4 stages holds 4 micro-batches' activations, unless the step has
    fewer; the peak is the stage that needs most (the last one holds the logits)."""
    p = params("DP_PP_1x1x4_512_1536x16")
    layout = layout_of(p, 4)
    first = [stage_estimate(p, precision="bf16", micro_batch=16, micro_batches=m, layout=layout,
                            recompute="none", stage=0) for m in (32, 2)]
    assert first[1].components["activations"] * 2 == first[0].components["activations"]
    peak = estimate(p, precision="bf16", micro_batch=16, micro_batches=32, world=4, recompute="none")
    assert peak == first[0] and "x 4 micro-batch" in peak.formula
    last = stage_estimate(p, precision="bf16", micro_batch=16, micro_batches=32, layout=layout,
                          recompute="none", stage=3)
    assert last.components["logits"] > 0 == first[0].components["logits"]


# ---------------------------------------------------------------- the planner, end to end


@pytest.fixture
def one_h100(monkeypatch):
    """The nvidia vendor sees one 80 GB H100 through a fake NVML (no GPU here)."""
    from tests.vendors.harness_nvidia.fake_nvml import FakeGpu, make_fake_nvml

    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml(
        [FakeGpu(name="NVIDIA H100 80GB HBM3", total=H100_BYTES)]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def plan_on_h100(tmp_path, *set_pairs):
    from harness.app import Harness
    from harness.runner.pipeline import RunRequest, plan

    harness = Harness.load(load_entrypoints=False)
    return plan(harness, RunRequest(
        case="gpt3_1.3B", vendor="nvidia", framework="megatron", set_pairs=list(set_pairs),
        output=tmp_path / "results", cache_dir=tmp_path / "cache"))


def test_the_vendor_default_fits_an_h100_unchanged(one_h100, tmp_path):
    context = plan_on_h100(tmp_path)
    assert context.config.settings.micro_batch_size == 8
    assert PLANNER_SOURCE not in context.config.sources.values()
    assert 45 * GIB < context.memory_estimate.total_bytes < 55 * GIB


def test_micro_batch_16_set_on_the_command_line_is_replanned_to_full_recompute(one_h100, tmp_path):
    context = plan_on_h100(tmp_path, "micro_batch_size=16", "grad_accum_steps=4")
    assert context.config.settings.micro_batch_size == 16  # the user's, never changed
    assert context.config.params["recompute"] == "full"
    assert context.config.sources["recompute"] == PLANNER_SOURCE
    assert "planner set recompute=full" in planner_note(context)


def test_micro_batch_16_without_recompute_is_refused_before_launch(one_h100, tmp_path, capsys):
    from harness.cli.main import main

    code = main(["run", "--vendor", "nvidia", "--case", "gpt3_1.3B", "--framework", "megatron",
                 "--set", "micro_batch_size=16", "--set", "grad_accum_steps=4",
                 "--set", "recompute=none", "--output", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: gpt3_1.3B needs about 79.6 GiB"), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
    assert "NVIDIA H100 80GB HBM3 has 75.7 GiB usable" in err
    assert "--nproc 2 --set tensor_parallel_degree=2" in err


def test_a_config_the_plugin_refuses_gets_no_plan(one_h100, tmp_path):
    """offload=cpu is refused by unsupported_reason with its own message, not by the planner."""
    context = plan_on_h100(tmp_path, "offload=cpu", "micro_batch_size=64")
    assert context.memory_estimate is None
