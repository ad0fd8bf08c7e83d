"""The training scripts' side of `harness equivalence` (shared_scripts/equivalence.py)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
from equivalence import Equivalence, checksum  # noqa: E402


def _setting(tmp_path, **extra):
    return {"trace": str(tmp_path / "trace.json"), "final_state": str(tmp_path / "final.npz"), **extra}


def test_checksum_changes_with_any_element_and_its_order():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = a.copy()
    b[2, 3] += 1e-3
    assert checksum(a)["shape"] == [3, 4] and checksum(a)["mean"] == pytest.approx(5.5)
    assert checksum(a)["probe"] != checksum(b)["probe"]
    swapped = a.ravel()[::-1].reshape(3, 4)  # the same values in another order
    assert checksum(swapped)["rms"] == pytest.approx(checksum(a)["rms"])
    assert checksum(swapped)["probe"] != pytest.approx(checksum(a)["probe"])


def test_sample_order_is_seeded_whole_batches_and_reshuffled_each_epoch(tmp_path):
    eq = Equivalence(_setting(tmp_path), "x", "1")
    batches = eq.batches(10, 3, seed=7)
    first = [next(batches) for _ in range(6)]
    assert all(len(b) == 3 for b in first)
    assert sorted(np.concatenate(first[:3])) == sorted(set(np.concatenate(first[:3])))  # no repeats
    again = Equivalence(_setting(tmp_path), "y", "2").batches(10, 3, seed=7)
    assert all((next(again) == b).all() for b in first)  # the same order in every framework
    assert not (np.concatenate(first[:3]) == np.concatenate(first[3:])).all()  # a new epoch, a new order
    # numpy's legacy MT19937 stream, fixed across numpy versions: the first batch of seed 7
    assert list(first[0]) == list(np.random.RandomState(7).permutation(10)[:3])


def test_export_then_load_round_trips_and_a_wrong_state_is_one_line(tmp_path):
    params = {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}
    exporter = Equivalence(_setting(tmp_path, export_state=str(tmp_path / "init.npz")), "x", "1")
    assert exporter.start(params, loss_terms=6) is None
    loader = Equivalence(_setting(tmp_path, initial_state=str(tmp_path / "init.npz")), "y", "1")
    loaded = loader.start({"w": np.zeros((2, 3), np.float32), "b": np.ones(3, np.float32)})
    assert (loaded["w"] == 1).all() and (loaded["b"] == 0).all()
    with pytest.raises(SystemExit, match=r"missing \['c'\], unknown \[\], other shape \['w'\]"):
        loader.start({"w": np.zeros((3, 2), np.float32), "b": np.ones(3, np.float32),
                      "c": np.ones(1, np.float32)})


def test_the_trace_holds_what_harness_compares(tmp_path):
    eq = Equivalence(_setting(tmp_path), "x", "1.0")
    eq.start({"w": np.ones((2, 3), np.float32), "m": np.zeros(3, np.float32)}, buffers=["m"],
             loss_terms=6)
    eq.activation("blocks.0", np.ones((2, 3)))
    eq.gradients({"w": np.full((2, 3), 2.0)})
    eq.step(1, 3.5)
    with pytest.raises(ValueError, match="out of order"):
        eq.step(3, 3.0)
    eq.finish({"w": np.ones((2, 3), np.float32)})
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace["parameters"] == {"w": [2, 3], "m": [3]} and trace["buffers"] == ["m"]
    assert trace["losses"] == [3.5] and trace["grad_norm_step1"] == pytest.approx(np.sqrt(24))
    assert trace["activations"][0]["name"] == "blocks.0" and trace["loss_terms"] == 6
    assert set(np.load(tmp_path / "final.npz").files) == {"w"}
    from harness.equivalence.trace import read_trace

    assert read_trace(tmp_path / "trace.json").parameter_count == 6  # buffers not counted


def test_positional_names_number_layers_by_kind_in_forward_order():
    from equivalence import positional_names

    order = [("stem.0", "conv"), ("stem.1", "bn"), ("body.conv", "conv"), ("down.0", "conv"),
             ("body.bn", "bn"), ("head", "fc")]
    rename = positional_names(order, {"conv": {"weight": "weight"},
                                      "bn": {"gamma": "weight", "_mean": "running_mean"},
                                      "fc": {"weight": "weight"}})
    assert rename == {"stem.0.weight": "conv.0.weight", "stem.1.gamma": "bn.0.weight",
                      "stem.1._mean": "bn.0.running_mean", "body.conv.weight": "conv.1.weight",
                      "down.0.weight": "conv.2.weight", "body.bn.gamma": "bn.1.weight",
                      "body.bn._mean": "bn.1.running_mean", "head.weight": "fc.weight"}


def test_first_outputs_keep_each_layers_first_output_in_order(tmp_path):
    eq = Equivalence(_setting(tmp_path), "x", "1")
    outputs = eq.first_outputs()
    calls = []
    for name, value in (("b", 1.0), ("a", 2.0), ("b", 3.0)):  # b runs again: its first output stays
        outputs.add(name, lambda value=value: calls.append(value) or np.full(2, value))
    outputs.record(np.float32(0.5))
    assert calls == [1.0, 2.0]  # a repeated layer's output is not even converted
    assert [(a["name"], a["mean"]) for a in eq.trace["activations"]] == [("b", 1.0), ("a", 2.0), ("loss", 0.5)]


def test_an_fp64_check_keeps_float64_and_passes_float32_hyper_parameters(tmp_path):
    eq = Equivalence(_setting(tmp_path, initial_state=str(tmp_path / "init.npz"), precision="fp64",
                              growth=100.0, safety=8.0), "x", "1")
    np.savez(tmp_path / "init.npz", w=np.full(3, 0.1, np.float32))  # exported in float32
    loaded = eq.start({"w": np.zeros(3)})
    assert loaded["w"].dtype == np.float64 and loaded["w"][0] == np.float32(0.1)
    assert eq.float64 and eq.hyper(0.1) == float(np.float32(0.1)) != 0.1
    outputs = eq.first_outputs()
    outputs.add("layer", lambda: np.array([1 / 3]))
    outputs.record(np.float64(1 / 3))
    eq.finish({"w": np.array([1 / 3])})
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert (trace["precision"], trace["growth"], trace["safety"]) == ("fp64", 100.0, 8.0)
    assert trace["activations"][0]["mean"] == 1 / 3  # not rounded to float32 on the way
    with np.load(tmp_path / "final.npz") as final:
        assert final["w"].dtype == np.float64 and final["w"][0] == 1 / 3
    # an fp32 check: hyper-parameters as given, arrays in float32
    plain = Equivalence(_setting(tmp_path), "x", "1")
    assert not plain.float64 and plain.hyper(0.1) == 0.1
