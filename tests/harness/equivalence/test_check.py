"""The verdict of one framework pair: what passes, what fails and where it diverges first."""

from __future__ import annotations

import math

import pytest

from harness.equivalence.check import compare_traces
from harness.equivalence.tolerance import UNIT_ROUNDOFF, path_sum, tolerance_for
from tests.harness.equivalence.traces import LAYERS, SHAPES, states, trace


def test_identical_traces_pass_with_zero_differences():
    verdict = compare_traces(trace("a"), trace("b"), states())
    assert verdict.passed and verdict.problems == []
    assert verdict.max_loss_difference == 0.0 and verdict.first_divergence is None
    assert verdict.parameter_count == (64 * 16 + 32 * 16 + 32 + 16 * 32 + 16,) * 2
    assert verdict.final_change == 0.0


def test_rounding_sized_differences_pass():
    tol = tolerance_for(SHAPES, [], 64, LAYERS)
    nudged = [4.0 * (1 + 0.5 * tol.loss(i + 1)) for i in range(3)]
    verdict = compare_traces(trace("a", losses=(4.0, 4.0, 4.0)), trace("b", losses=nudged), states())
    assert verdict.passed, verdict.problems
    assert verdict.max_loss_difference == pytest.approx(4.0 * 0.5 * tol.loss(3))


def test_a_loss_beyond_tolerance_fails_at_its_steps():
    verdict = compare_traces(trace("a"), trace("b", losses=(4.0, 3.5, 3.1)), states())
    assert not verdict.passed
    assert verdict.problems == ["loss beyond tolerance at steps 3"]
    assert [s.passed for s in verdict.steps] == [True, True, False]


def test_the_first_layer_beyond_tolerance_is_where_they_diverge():
    # A layer whose output changed by 1e-4 (e.g. another LayerNorm epsilon) and all after it.
    changed = {name: 1 + 1e-4 for name in ("blocks.1", "ln_f")}
    verdict = compare_traces(trace("a"), trace("b", layer_scale=changed), states())
    assert verdict.first_divergence == "blocks.1"
    assert not verdict.passed and "blocks.1" in verdict.problems[0]
    passed = {layer.name: layer.passed for layer in verdict.layers}
    assert passed == {"embeddings": True, "blocks.0": True, "blocks.1": False, "ln_f": False, "loss": True}


def test_shapes_and_parameter_counts_are_compared():
    other = {**SHAPES, "extra.bias": [4]}
    verdict = compare_traces(trace("a"), trace("b", shapes=other))
    assert verdict.shape_differences == ["extra.bias: only in b"]
    assert any("parameter count" in p for p in verdict.problems)
    swapped = {**SHAPES, "blocks.1.fc.weight": [32, 16]}  # a transposed weight: count agrees
    verdict = compare_traces(trace("a"), trace("b", shapes=swapped))
    assert verdict.shape_differences == ["blocks.1.fc.weight: [16, 32] vs [32, 16]"]
    assert verdict.parameter_count[0] == verdict.parameter_count[1] and not verdict.passed


def test_gradient_norm_and_final_weights_are_judged():
    verdict = compare_traces(trace("a"), trace("b", grad_norm=2.001), states())
    assert verdict.first_divergence == "step 1 gradients (backward)"
    assert any("gradient norm" in p for p in verdict.problems)
    verdict = compare_traces(trace("a"), trace("b"), states(change=1e-2))
    assert verdict.final_change == pytest.approx(1e-2, rel=1e-3)
    assert any("final weights differ" in p for p in verdict.problems)


def test_tolerance_derivation_from_shapes():
    # S = sqrt(fan-in) of each weight of >= 2 dims + sqrt(loss terms)
    expected = math.sqrt(16) + math.sqrt(16) + math.sqrt(32) + math.sqrt(64)
    assert path_sum(SHAPES, [], 64) == pytest.approx(expected)
    tol = tolerance_for(SHAPES, [], 64, LAYERS)
    assert tol.forward == pytest.approx(UNIT_ROUNDOFF * expected)
    assert tol.gradient == pytest.approx(3 * tol.forward)
    assert tol.loss(1) == tol.forward and tol.loss(3) == pytest.approx(7 * tol.forward)
    # Per layer: the weights of its prefix and of the layers before it, plus one.
    assert tol.layers["embeddings"] == pytest.approx(UNIT_ROUNDOFF)
    assert tol.layers["blocks.0"] == pytest.approx(UNIT_ROUNDOFF * (1 + 4))
    assert tol.layers["blocks.1"] == pytest.approx(UNIT_ROUNDOFF * (1 + 4 + math.sqrt(32)))
    assert tol.layers["loss"] == tol.forward
    # Buffers (running statistics) are not weights.
    assert path_sum(SHAPES, ["blocks.1.fc.weight"], 64) == pytest.approx(expected - math.sqrt(32))


def test_own_initialisations_are_compared_within_sampling_error():
    a, b = trace("a"), trace("b")
    n = 32 * 16  # blocks.0.fc.weight
    a.init = {"blocks.0.fc.weight": {"mean": 0.0, "std": 0.02}, "ln_f.weight": {"mean": 1.0, "std": 0.0}}
    # another draw of the same normal: within a few standard errors
    b.init = {"blocks.0.fc.weight": {"mean": 0.02 / n ** 0.5, "std": 0.02 * (1 + 1 / (2 * n) ** 0.5)},
              "ln_f.weight": {"mean": 1.0, "std": 0.0}}
    assert compare_traces(a, b).init_differences == []
    # GPT-2's scaled residual init against plain std 0.02, and LayerNorm weights of zeros
    b.init = {"blocks.0.fc.weight": {"mean": 0.0, "std": 0.01}, "ln_f.weight": {"mean": 0.0, "std": 0.0}}
    verdict = compare_traces(a, b)
    assert [d.split(":")[0] for d in verdict.init_differences] == ["blocks.0.fc.weight", "ln_f.weight"]
    assert not verdict.passed


def test_batch_norm_statistics_count_as_reductions_over_batch_and_positions():
    shapes = {"conv.0.weight": [8, 3, 3, 3], "bn.0.weight": [8], "conv.1.weight": [4, 8, 1, 1],
              "bn.1.weight": [4], "fc.weight": [10, 4]}
    layer_shapes = {"conv.0": [2, 8, 4, 4], "conv.1": [2, 4, 4, 4]}
    tol = tolerance_for(shapes, [], 2, ["conv.0", "conv.1", "fc", "loss"], layer_shapes)
    # conv.1's output: conv.0 (fan-in 27), bn.0 (k = 2 * 4 * 4 = 32), its own fan-in 8
    assert tol.layers["conv.1"] == pytest.approx(UNIT_ROUNDOFF * (1 + math.sqrt(27) + math.sqrt(32)
                                                                  + math.sqrt(8)))
    assert tol.path_sum == pytest.approx(math.sqrt(27) + math.sqrt(32) + math.sqrt(8) + math.sqrt(32)
                                         + math.sqrt(4) + math.sqrt(2))


def test_fp64_growth_and_safety_scale_the_tolerances():
    fp32 = tolerance_for(SHAPES, [], 64, LAYERS)
    fp64 = tolerance_for(SHAPES, [], 64, LAYERS, precision="fp64", growth=100.0, safety=8.0)
    assert fp64.unit_roundoff == 2.0 ** -53
    assert fp64.forward == pytest.approx(8 * 2.0 ** -29 * fp32.forward)
    assert fp64.layers["blocks.1"] == pytest.approx(8 * 2.0 ** -29 * fp32.layers["blocks.1"])
    # step t: (1 + 3 (t - 1)) * growth^(t - 1)
    assert fp64.loss(1) == fp64.forward and fp64.loss(3) == pytest.approx(7 * 100 ** 2 * fp64.forward)


def test_traces_judged_with_the_reference_traces_arithmetic_and_growth():
    a, b = trace("a", losses=(4.0, 4.0, 4.0)), trace("b", losses=(4.0, 4.0, 4.0 * (1 + 1e-9)))
    assert compare_traces(a, b, states()).steps[2].passed  # within fp32 rounding
    a.precision = b.precision = "fp64"
    assert not compare_traces(a, b, states()).steps[2].passed  # 1e6 times fp64 rounding
    a.growth = 1e3  # a training that amplifies differences 1e3 times per step
    assert compare_traces(a, b, states()).steps[2].passed
    b.precision = "fp32"
    verdict = compare_traces(a, b, states())
    assert "b ran in fp32, a in fp64" in verdict.problems


def test_final_weights_leave_out_running_statistics():
    initial, final_a, final_b = states()
    final_b = {**final_b, "ln_f.weight": final_b["ln_f.weight"] * 1.001}  # a running variance
    a, b = trace("a"), trace("b")
    assert not compare_traces(a, b, (initial, final_a, final_b)).passed
    a.buffers = b.buffers = ["ln_f.weight"]
    verdict = compare_traces(a, b, (initial, final_a, final_b))
    assert verdict.final_change == 0.0 and verdict.passed, verdict.problems
