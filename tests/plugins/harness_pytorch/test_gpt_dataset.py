"""The training script's dataset reads the PaddleNLP format into shifted windows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

torch = pytest.importorskip("torch")
SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
sys.path[:0] = [str(SCRIPTS), str(SHARED_SCRIPTS_DIR)]
from gpt_dataset import GPTWindowDataset  # noqa: E402
from gpt_model import GPT  # noqa: E402


def write(tmp_path, docs):
    ids = np.concatenate(docs).astype(np.uint16)
    np.save(tmp_path / "d_ids.npy", ids)
    np.savez(tmp_path / "d_idx.npz", lens=np.array([len(d) for d in docs]), docs=np.arange(len(docs) + 1))
    return str(tmp_path / "d")


def test_windows_span_documents_and_targets_are_shifted(tmp_path):
    docs = [np.arange(0, 5), np.arange(100, 107), np.arange(200, 204)]
    ds = GPTWindowDataset(write(tmp_path, docs), seq_len=4, seed=3)
    assert len(ds) == (16 - 1) // 4
    seen = []
    for i in range(len(ds)):
        x, y = ds[i]
        assert x.shape == y.shape == (4,)
        assert torch.equal(x[1:], y[:-1])
        seen.extend(x.tolist())
    # every token read comes from some document, in document order within a document
    assert set(seen) <= set(np.concatenate(docs).tolist())


def test_inconsistent_index_is_rejected(tmp_path):
    np.save(tmp_path / "d_ids.npy", np.arange(10, dtype=np.uint16))
    np.savez(tmp_path / "d_idx.npz", lens=np.array([3, 3]), docs=np.arange(3))
    with pytest.raises(ValueError, match="sum to 6"):
        GPTWindowDataset(str(tmp_path / "d"), seq_len=4, seed=0)


def test_gpt_parameter_count_and_tied_embeddings():
    model = GPT(vocab_size=100, seq_len=16, num_layers=2, hidden_size=32, num_heads=4)
    h, v, s, L = 32, 100, 16, 2
    per_layer = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (4 * h * h + 4 * h) + (4 * h * h + h)
    expected = v * h + s * h + L * per_layer + 2 * h
    assert model.num_parameters() == expected
    assert model.lm_head.weight is model.wte.weight


@pytest.mark.parametrize("recompute", ["none", "full", "selective"])
def test_recompute_modes_give_the_same_gradients(recompute):
    torch.manual_seed(0)
    ref = GPT(vocab_size=50, seq_len=8, num_layers=2, hidden_size=16, num_heads=2)
    model = GPT(vocab_size=50, seq_len=8, num_layers=2, hidden_size=16, num_heads=2, recompute=recompute)
    model.load_state_dict(ref.state_dict())
    x = torch.randint(0, 50, (2, 8))
    ref(x, x).backward()
    model(x, x).backward()
    for (name, a), b in zip(ref.named_parameters(), model.parameters()):
        assert torch.allclose(a.grad, b.grad, atol=1e-6), name
