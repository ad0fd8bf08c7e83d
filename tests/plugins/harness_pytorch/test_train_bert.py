"""The PyTorch BERT trainer's loss module: same loss as selecting the masked rows, and under
DistributedDataParallel the replicas stay identical (the gradient all-reduce runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR  # noqa: E402

SCRIPTS_DIR = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"

TINY = dict(vocab_size=64, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, dropout=0.0,
            max_position_embeddings=32, type_vocab_size=2, init_std=0.02)


def _train_bert():
    for folder in (str(SCRIPTS_DIR), str(SHARED_SCRIPTS_DIR)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import train_bert

    return train_bert


def _batch(seed: int, batch: int = 4, seq: int = 16, predictions: int = 3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 64, (batch, seq), generator=g)
    positions = torch.stack([torch.randperm(seq - 1, generator=g)[:predictions] + 1 for _ in range(batch)])
    labels = torch.gather(ids, 1, positions)
    labels[0, -1] = -1  # one padded prediction
    positions[0, -1] = 0
    nsp = torch.randint(0, 2, (batch,), generator=g)
    return ids, torch.zeros_like(ids), torch.ones_like(ids), positions, labels, nsp


def test_gathered_loss_equals_masked_selection():
    train_bert = _train_bert()
    torch.manual_seed(0)
    model = train_bert.build_model(TINY).eval()
    ids, segments, mask, positions, labels, nsp = _batch(3)
    loss = train_bert.PretrainingLoss(model)(ids, segments, mask, positions, labels, nsp)
    # the reference: a [seq] label row and a boolean selection of the masked rows
    label_row = torch.full_like(ids, -1)
    for b in range(ids.size(0)):
        real = labels[b] >= 0
        label_row[b, positions[b][real]] = labels[b][real]
    sequence, pooled = model.bert(input_ids=ids, token_type_ids=segments, attention_mask=mask,
                                  return_dict=False)[:2]
    picked = label_row.view(-1) != -1
    mlm = model.cls.predictions(sequence.reshape(-1, sequence.size(-1))[picked])
    reference = (torch.nn.functional.cross_entropy(mlm.float(), label_row.view(-1)[picked])
                 + torch.nn.functional.cross_entropy(model.cls.seq_relationship(pooled).float(), nsp))
    assert torch.allclose(loss, reference, rtol=1e-5, atol=1e-6)


def _replica(rank: int, folder: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    # A file rendezvous: no TCP port to pick (a probed free port can be taken before the
    # ranks bind it when the machine is busy).
    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=2)
    try:
        train_bert = _train_bert()
        torch.manual_seed(0)
        module = DistributedDataParallel(train_bert.PretrainingLoss(train_bert.build_model(TINY)))
        optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
        for step in range(2):
            module(*_batch(100 + 10 * step + rank)).backward()  # different data on each rank
            optimizer.step()
            optimizer.zero_grad()
        torch.save([q.detach().clone() for q in module.parameters()], os.path.join(folder, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_ddp_replicas_stay_identical(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_replica, args=(str(tmp_path),), nprocs=2)
    params = {rank: torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)}
    assert all(torch.equal(a, b) for a, b in zip(params[0], params[1]))
    # and training moved them: the test would pass trivially if nothing were updated
    torch.manual_seed(0)
    initial = list(_train_bert().build_model(TINY).parameters())
    assert any(not torch.equal(a, b.detach()) for a, b in zip(params[0], initial))
