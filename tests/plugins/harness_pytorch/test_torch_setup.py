"""The PyTorch scripts' runtime: the start, DataLoader options, the end of training."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
sys.path[:0] = [str(SCRIPTS), str(SHARED_SCRIPTS_DIR)]  # as the launch sets them
from torch_setup import Runtime, finish_training, start_training  # noqa: E402


def runtime(dedicated: bool) -> Runtime:
    return Runtime(device=torch.device("cpu"), world=1, rank=0, device_name="cpu", dedicated=dedicated,
                   precisions=frozenset({"fp32"}), peak_memory_source="process_rss")


def test_accelerators_get_persistent_pinned_workers_within_the_host_s_cpus(monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    cpus = len(os.sched_getaffinity(0))
    options = runtime(dedicated=True).loader_options(workers=64)
    assert options["num_workers"] == max(1, min(64, cpus - 1)) and options["pin_memory"] is True
    assert options["persistent_workers"] is True  # no respawn at every epoch boundary
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cpus))  # one CPU per process: one worker each
    assert runtime(dedicated=True).loader_options(workers=8)["num_workers"] == 1


def test_a_shared_host_reads_in_the_training_process():
    assert runtime(dedicated=False).loader_options(workers=8) == {"num_workers": 0}


def test_finish_training_prints_the_memory_line_and_the_end_on_rank_0(capsys):
    finish_training(runtime(dedicated=False), "[Rank 0] (after 3 iterations) ")
    first, *rest = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\[Rank 0\] \(after 3 iterations\) peak memory \(MB\): \d+\.\d "
                        r"\(process max RSS, max over ranks\)", first)
    assert rest == ["> training finished"]
    finish_training(runtime(dedicated=False))  # train_bert.py's and train_cnn.py's prefix
    assert capsys.readouterr().out.startswith("> peak memory (MB): ")


def test_finish_training_prints_nothing_on_other_ranks(capsys):
    other = Runtime(device=torch.device("cpu"), world=1, rank=1, device_name="cpu", dedicated=False,
                    precisions=frozenset({"fp32"}), peak_memory_source="process_rss")
    finish_training(other)
    assert capsys.readouterr().out == ""


def _config(tmp_path: Path, precision: str) -> str:
    backend = {"device_type": "cpu", "frameworks": {"torch": {"device_type": "cpu"}},
               "precisions": ["fp32", "bf16"]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"settings": {"seed": 7, "precision": precision},
                                "params": {"num_layers": 2}, "device": backend}))
    return str(path)


def test_start_training_reads_the_config_and_starts_this_rank(tmp_path, monkeypatch):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    settings, params, started = start_training(_config(tmp_path, "bf16"))
    assert settings == {"seed": 7, "precision": "bf16"} and params == {"num_layers": 2}
    assert (started.device.type, started.world, started.rank) == ("cpu", 1, 0)


def test_start_training_refuses_a_precision_the_device_lacks(tmp_path, monkeypatch, capsys):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        start_training(_config(tmp_path, "fp16"))
    assert exit_info.value.code == 2
    assert capsys.readouterr().out == "error: cpu devices have no fp16; use one of bf16, fp32\n"


def _linear(weight: float = 1.0) -> torch.nn.Linear:
    layer = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        layer.weight.fill_(weight)
    return layer


def _backward(layer: torch.nn.Linear, scaler, inputs=(3.0, 4.0)) -> None:
    """A loss whose gradient on the weight is ``inputs``."""
    scaler.scale(layer(torch.tensor([inputs])).sum()).backward()


def test_optimizer_step_in_fp32_steps_and_clears_the_gradients():
    from torch_setup import optimizer_step

    layer = _linear()
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    _backward(layer, scaler)
    assert optimizer_step(optimizer, scaler) is None  # no clipping, no norm
    assert layer.weight.flatten().tolist() == pytest.approx([1 - 0.3, 1 - 0.4])
    assert layer.weight.grad is None


def test_optimizer_step_clips_the_unscaled_gradients_and_returns_their_norm():
    from torch_setup import optimizer_step

    layer = _linear()
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=1000)
    _backward(layer, scaler)  # gradient (3, 4), norm 5, scaled by 1024
    norm = optimizer_step(optimizer, scaler, layer.parameters(), max_norm=1.0)
    assert float(norm) == pytest.approx(5.0)  # the true norm, not the scaled one
    # The step used the clipped gradient (0.6, 0.8), unscaled once only.
    assert layer.weight.flatten().tolist() == pytest.approx([1 - 0.06, 1 - 0.08], rel=1e-4)
    assert scaler.get_scale() == 2.0**10 and layer.weight.grad is None


def test_an_overflowing_fp16_step_is_skipped_and_lowers_the_scale():
    """What train_gpt.py counts as a skipped iteration: the scaler's scale fell."""
    from torch_setup import optimizer_step

    layer = _linear()
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    _backward(layer, scaler, inputs=(float("inf"), 1.0))
    optimizer_step(optimizer, scaler, layer.parameters(), max_norm=1.0)
    assert layer.weight.tolist() == [[1.0, 1.0]]  # not stepped
    assert scaler.get_scale() == 2.0**9 and layer.weight.grad is None
    _backward(layer, scaler)  # the next step is taken again, at the lower scale
    optimizer_step(optimizer, scaler)
    assert layer.weight.flatten().tolist() == pytest.approx([1 - 0.3, 1 - 0.4])
    assert scaler.get_scale() == 2.0**9


def _mean_on_rank(rank: int, store_path: str, results) -> None:
    import torch.distributed as dist

    from torch_setup import mean_over_ranks

    dist.init_process_group("gloo", init_method=f"file://{store_path}", world_size=2, rank=rank)
    results.put((rank, mean_over_ranks(torch.tensor(float(rank * 4 + 1)), 2)))
    dist.destroy_process_group()


def on_two_ranks(target, tmp_path: Path) -> dict:
    """``target(rank, store_path, results)`` in two spawned processes (a gloo group through a
    file store); what each put on ``results`` as (rank, value), by rank."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    ranks = [context.Process(target=target, args=(rank, str(tmp_path / "store"), results))
             for rank in range(2)]
    for process in ranks:
        process.start()
    values = dict(results.get(timeout=120) for _ in ranks)
    for process in ranks:
        process.join(timeout=60)
    return values


def test_mean_over_ranks_averages_across_ranks(tmp_path):
    means = on_two_ranks(_mean_on_rank, tmp_path)
    assert means == {0: 3.0, 1: 3.0}  # (1 + 5) / 2 on both


def test_mean_over_ranks_of_one_rank_is_the_value():
    from torch_setup import mean_over_ranks

    assert mean_over_ranks(torch.tensor(2.5), 1) == 2.5


def test_compiled_is_the_module_itself_unless_the_case_compiles():
    from torch_setup import compiled

    module = torch.nn.Linear(2, 2)
    assert compiled(module, {"compile": False, "compile_mode": "reduce-overhead"}) is module
    assert isinstance(compiled(module, {"compile": True}), torch._dynamo.eval_frame.OptimizedModule)


def test_compiled_refuses_a_mode_torch_compile_lacks(capsys):
    from torch_setup import compiled

    with pytest.raises(SystemExit) as exit_info:
        compiled(torch.nn.Linear(2, 2), {"compile": True, "compile_mode": "fastest"})
    assert exit_info.value.code == 2
    assert capsys.readouterr().out.strip() == (
        "error: compile_mode 'fastest' is not one of default, reduce-overhead, max-autotune, "
        "max-autotune-no-cudagraphs")


def _data_parallel_on_rank(rank: int, store_path: str, results) -> None:
    import torch.distributed as dist

    from torch_setup import Runtime, data_parallel

    dist.init_process_group("gloo", init_method=f"file://{store_path}", world_size=2, rank=rank)
    runtime = Runtime(device=torch.device("cpu"), world=2, rank=rank, device_name="cpu", dedicated=False,
                      precisions=frozenset({"fp32"}), peak_memory_source="process_rss")
    out = {}
    for wire in ("fp32", "bf16"):
        layer = torch.nn.Linear(1, 1, bias=False)
        torch.nn.init.ones_(layer.weight)
        wrapped = data_parallel(layer, runtime, wire)
        # d(sum(w * x))/dw = x: rank 0's gradient 1, rank 1's 1 + 2^-10, which bf16 cannot hold
        wrapped(torch.tensor([[1.0 + rank * 2.0 ** -10]])).sum().backward()
        out[wire] = layer.weight.grad.item()
    eager = data_parallel(torch.nn.Linear(4, 4), runtime)
    graph = data_parallel(torch.compile(torch.nn.Linear(4, 4)), runtime)
    out["eager"] = (eager.static_graph, eager.bucket_bytes_cap)
    out["compiled"] = (graph.static_graph, graph.bucket_bytes_cap)
    accumulating = data_parallel(torch.compile(torch.nn.Linear(4, 4)), runtime, micro_batches=2)
    out["accumulating"] = accumulating.static_graph
    norm = torch.nn.BatchNorm1d(2)
    with_buffers = data_parallel(norm, runtime)
    for _ in range(2):  # each rank's batch statistics differ
        with_buffers(torch.randn(64, 2) + rank * 10)
    out["running_mean"] = norm.running_mean.tolist()
    results.put((rank, out))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def data_parallel_ranks(tmp_path_factory) -> dict:
    """What ``_data_parallel_on_rank`` found on each of two ranks (one spawn for the tests below)."""
    return on_two_ranks(_data_parallel_on_rank, tmp_path_factory.mktemp("ddp"))


def test_data_parallel_averages_on_the_wire_precision_and_gives_a_compiled_module_one_bucket(data_parallel_ranks):
    for out in data_parallel_ranks.values():
        assert out["fp32"] == 1.0 + 2.0 ** -11  # the exact mean
        assert out["bf16"] == 1.0  # each gradient rounded to bf16 (8 bits) before the sum
        assert out["eager"] == (False, 25 * 2**20)  # DDP's default buckets overlap an eager backward
        static_graph, cap = out["compiled"]
        assert static_graph and cap >= (4 * 4 + 4) * 4  # every gradient in one bucket
        assert out["accumulating"] is False  # no_sync fails on a static graph


def test_data_parallel_leaves_each_rank_its_own_buffers(data_parallel_ranks):
    means = {rank: out["running_mean"] for rank, out in data_parallel_ranks.items()}
    # Rank 1's batches have mean 10, rank 0's 0; the running mean moves 0.1 of the way a batch.
    # Its own after two batches: 0.1 * 10 = 1, then 0.9 * 1 + 1 = 1.9. DDP's default would have
    # copied rank 0's (about 0) over it before the second: 0.9 * 0 + 1 = 1.
    assert all(abs(m) < 0.2 for m in means[0]) and all(abs(m - 1.9) < 0.2 for m in means[1])


def test_data_parallel_refuses_an_unknown_wire_precision(capsys):
    from torch_setup import data_parallel

    with pytest.raises(SystemExit) as exit_info:
        data_parallel(torch.nn.Linear(2, 2), runtime(dedicated=False), "int8")
    assert exit_info.value.code == 2
    assert "grad_allreduce 'int8' is not one of fp32, fp16, bf16" in capsys.readouterr().out


def test_data_parallel_refuses_an_unknown_gradient_sync(capsys):
    from torch_setup import data_parallel

    with pytest.raises(SystemExit) as exit_info:
        data_parallel(torch.nn.Linear(2, 2), runtime(dedicated=False), grad_sync="nccl")
    assert exit_info.value.code == 2
    assert "grad_sync 'nccl' is not one of ddp, flat, compiled" in capsys.readouterr().out


def _accumulate_two_micro_batches(wrapped, model, batches, backward, tolerance) -> tuple[bool, bool]:
    """The two ``batches`` through ``wrapped`` (the first under ``no_sync``) beside an unsynchronised
    copy of ``model``: whether the first only accumulated, and whether the gradients after the
    second are the mean over the ranks of each rank's accumulated gradient."""
    import copy

    import torch.distributed as dist

    local = copy.deepcopy(model)  # the same start, never synchronised
    close = {"rtol": tolerance, "atol": tolerance / 10}
    with wrapped.no_sync():
        backward(wrapped, wrapped(batches[0]).square().sum())
    local(batches[0]).square().sum().backward()
    only_accumulated = all(torch.allclose(a.grad, b.grad, **close)
                           for a, b in zip(model.parameters(), local.parameters()))
    backward(wrapped, wrapped(batches[1]).square().sum())
    local(batches[1]).square().sum().backward()
    expected = [q.grad.clone() for q in local.parameters()]
    for grad in expected:
        dist.all_reduce(grad)
        grad /= 2
    averaged = all(torch.allclose(q.grad, e, **close) for q, e in zip(model.parameters(), expected))
    return only_accumulated, averaged


def _flat_sync_on_rank(rank: int, store_path: str, results) -> None:
    import torch.distributed as dist

    from torch_setup import FlatGradientSync, data_parallel

    dist.init_process_group("gloo", init_method=f"file://{store_path}", world_size=2, rank=rank)
    runtime = Runtime(device=torch.device("cpu"), world=2, rank=rank, device_name="cpu", dedicated=False,
                      precisions=frozenset({"fp32"}), peak_memory_source="process_rss")
    out = {}
    torch.manual_seed(rank)  # each rank draws other weights: the wrapper starts both from rank 0's
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 2))
    model = model.to(memory_format=torch.channels_last)  # gradients laid out channels-last too
    wrapped = data_parallel(model, runtime, micro_batches=2, grad_sync="flat")
    out["type"] = type(wrapped) is FlatGradientSync
    out["weights"] = [q.detach().clone() for q in model.parameters()]
    torch.manual_seed(100 + rank)
    batches = [torch.randn(2, 3, 6, 6).to(memory_format=torch.channels_last) for _ in range(2)]
    out["after_no_sync"], out["averaged"] = _accumulate_two_micro_batches(
        wrapped, model, batches, lambda _, loss: loss.backward(), tolerance=1e-6)
    out["strides_kept"] = [q.grad.stride() for q in model.parameters()] == [q.stride() for q in model.parameters()]
    for wire in ("fp32", "bf16"):
        layer = torch.nn.Linear(1, 1, bias=False)
        torch.nn.init.ones_(layer.weight)
        # d(sum(w * x))/dw = x: rank 0's gradient 1, rank 1's 1 + 2^-10, which bf16 cannot hold
        data_parallel(layer, runtime, wire, grad_sync="flat")(torch.tensor([[1.0 + rank * 2.0 ** -10]])).sum().backward()
        out[wire] = layer.weight.grad.item()
    results.put((rank, out))
    dist.destroy_process_group()


def test_flat_gradient_sync_averages_accumulated_gradients_in_one_all_reduce(tmp_path):
    outs = on_two_ranks(_flat_sync_on_rank, tmp_path)
    for out in outs.values():
        assert out["type"]
        assert out["after_no_sync"]  # the first micro-batch only accumulated, as under DDP's no_sync
        assert out["averaged"] and out["strides_kept"]
        assert out["fp32"] == 1.0 + 2.0 ** -11  # the exact mean
        assert out["bf16"] == 1.0  # halves rounded to bf16 (8 bits) before the sum
    assert all(torch.equal(a, b) for a, b in zip(outs[0]["weights"], outs[1]["weights"]))


def _compiled_sync_on_rank(rank: int, store_path: str, results) -> None:
    import torch.distributed as dist

    from torch_setup import CompiledGradientSync, backward, data_parallel

    dist.init_process_group("gloo", init_method=f"file://{store_path}", world_size=2, rank=rank)
    runtime = Runtime(device=torch.device("cpu"), world=2, rank=rank, device_name="cpu", dedicated=False,
                      precisions=frozenset({"fp32"}), peak_memory_source="process_rss")
    out = {}
    torch.manual_seed(rank)  # DDP starts both ranks from rank 0's weights
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
    wrapped = data_parallel(torch.compile(model), runtime, micro_batches=2, grad_sync="compiled")
    out["type"] = type(wrapped) is CompiledGradientSync
    out["weights"] = [q.detach().tolist() for q in model.parameters()]  # lists outlive the process
    torch.manual_seed(100 + rank)
    batches = [torch.randn(4, 8) for _ in range(2)]
    # compiled and eager kernels round differently
    out["after_no_sync"], out["averaged"] = _accumulate_two_micro_batches(
        wrapped, model, batches, backward, tolerance=1e-5)
    # DDP's Python reducer also averages from eager hooks: the backward must have been traced
    from torch._dynamo.utils import counters

    out["backwards_traced"] = counters["compiled_autograd"]["captures"]
    results.put((rank, out))
    dist.destroy_process_group()


def test_compiled_gradient_sync_averages_accumulated_gradients_from_the_compiled_backward(tmp_path):
    outs = on_two_ranks(_compiled_sync_on_rank, tmp_path)
    for out in outs.values():
        assert out["type"]
        assert out["after_no_sync"]  # the first micro-batch only accumulated
        assert out["averaged"]
        assert out["backwards_traced"] >= 2  # by compiled autograd: with and without the sync
    assert outs[0]["weights"] == outs[1]["weights"]


def test_compiled_gradient_sync_needs_a_compiled_module_and_an_fp32_wire(capsys):
    from torch_setup import data_parallel

    with pytest.raises(SystemExit) as exit_info:
        data_parallel(torch.nn.Linear(2, 2), runtime(dedicated=False), grad_sync="compiled")
    assert exit_info.value.code == 2 and "needs a compiled module (compile=true)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        data_parallel(torch.compile(torch.nn.Linear(2, 2)), runtime(dedicated=False), "bf16",
                      grad_sync="compiled")
    assert exit_info.value.code == 2 and "all-reduces in fp32" in capsys.readouterr().out
