"""The flat-parameter optimizers trained data parallel (two gloo ranks on the CPU): the ranks
average their gradients, the offloaded one shards its host update, and every rank ends with
the weights of one optimizer fed both ranks' micro-batches."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
from tests.plugins.harness_pytorch.flat_optimizers import make_model, split  # noqa: E402

ACCUM, STEPS, CLIP = 3, 3, 0.5


def batches(step: int, rank: int) -> list:
    generator = torch.Generator().manual_seed(1000 * step + rank)
    return [torch.randn(5, 8, generator=generator) * (step + 1) for _ in range(ACCUM)]


def make_optimizer(kind: str, model, chunk: int):
    options = dict(device=torch.device("cpu"), dtype=torch.float32, lr=1e-2, betas=(0.9, 0.95),
                   eps=1e-8, weight_decay=0.1, chunk_elements=chunk)
    if kind == "host":
        from host_offload import HostOffloadAdamW

        return HostOffloadAdamW(*split(model), **options)
    from master_weights import DeviceMasterAdamW

    return DeviceMasterAdamW(*split(model), fused=False, **options)


def _rank(rank: int, folder: str, kind: str, chunk: int, seed_of_rank: bool,
          routed: bool) -> None:
    from torch_setup import run_and_exit

    # A spawned gloo rank ends as the training scripts' do (its results are saved by then).
    run_and_exit(lambda: _train(rank, folder, kind, chunk, seed_of_rank, routed))


def _train(rank: int, folder: str, kind: str, chunk: int, seed_of_rank: bool,
           routed: bool) -> int:
    import torch.distributed as dist

    # A file rendezvous: no TCP port to pick (a probed free port can be taken before the
    # ranks bind it when the machine is busy).
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=2)
    try:
        from gpt_model import Linear

        model = make_model(rank if seed_of_rank else 0, Linear if routed else torch.nn.Linear)
        try:
            optimizer = make_optimizer(kind, model, chunk)
        except RuntimeError as exc:
            torch.save(str(exc), os.path.join(folder, f"rank{rank}.pt"))
            return 0
        if routed:  # gradient accumulation fusion: the linears add into the flat fp32 gradients
            assert optimizer.expose_main_grads() == 2
            for linear in model[0], model[2]:
                linear.into_main_grad = True
        norms = []
        for step in range(STEPS):
            for x in batches(step, rank):
                (model(x).square().mean() / ACCUM).backward()
            norms.append(optimizer.step(1e-2, CLIP))
        owned = ((len(optimizer.owned_chunks()), optimizer.updated_numel, optimizer.numel)
                 if hasattr(optimizer, "owned_chunks") else None)
        torch.save(([p.detach().clone() for p in model.parameters()], norms, owned),
                   os.path.join(folder, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()
    return 0


def spawn(tmp_path, kind: str, chunk: int, seed_of_rank: bool = False, routed: bool = False) -> dict:
    import torch.multiprocessing as mp

    mp.spawn(_rank, args=(str(tmp_path), kind, chunk, seed_of_rank, routed), nprocs=2)
    return {rank: torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)}


@pytest.mark.parametrize("kind,routed", [("device", False), ("host", False), ("device", True),
                                         ("host", True)])
def test_data_parallel_ranks_match_one_optimizer_fed_both_ranks_batches(tmp_path, kind, routed):
    # routed: the weight gradients reach the flat buffer through main_grad (gradient
    # accumulation fusion), are averaged over the ranks and zeroed after each step like the rest.
    results = spawn(tmp_path, kind, chunk=7, routed=routed)  # 7 elements a chunk: the matrices span many chunks
    reference = make_model(0)
    decay, no_decay = split(reference)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    expected_norms = []
    for step in range(STEPS):
        for rank in range(2):
            for x in batches(step, rank):
                (reference(x).square().mean() / ACCUM / 2).backward()  # the mean over both ranks
        expected_norms.append(float(torch.nn.utils.clip_grad_norm_(reference.parameters(), CLIP)))
        opt.step()
        opt.zero_grad(set_to_none=True)
    for rank in range(2):
        weights, norms, owned = results[rank]
        assert norms == pytest.approx(expected_norms, rel=1e-5)
        for got, want in zip(weights, reference.parameters()):
            torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)
    if kind == "host":  # the host update was split between the ranks, not done twice
        (chunks0, updated0, numel), (chunks1, updated1, _) = results[0][2], results[1][2]
        assert chunks0 > 0 and chunks1 > 0
        small = sum(p.numel() for p in reference.parameters() if p.dim() < 2)  # every rank's
        assert updated0 + updated1 == numel + small


def test_ranks_that_start_from_different_weights_are_refused(tmp_path):
    results = spawn(tmp_path, "device", chunk=1000, seed_of_rank=True)
    assert all("start from different weights" in results[rank] for rank in range(2))
