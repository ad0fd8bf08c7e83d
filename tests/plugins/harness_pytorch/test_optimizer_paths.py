"""train_gpt.py's optimizer paths follow a textbook fp32 AdamW over many accumulated
micro-batches (benchmarks/gpt_loss_paths.py): a defect of one path (the loss divided by the
micro-batch count twice, clipping on unaccumulated gradients, an update applied in the wrong
order, a missed micro-batch) makes its curve leave the reference's."""

from __future__ import annotations

import importlib.util
from argparse import Namespace
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "gpt_loss_paths.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("gpt_loss_paths", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_path_follows_the_reference_adamw(tmp_path):
    from harness_cases.gpt_data import ensure_gpt_dataset

    bench = load_benchmark()
    args = Namespace(hidden=32, layers=1, heads=2, seq_len=32, vocab=512, micro_batch=2, accum=8,
                     steps=5, lr=3e-3, warmup_steps=2, decay_steps=0, clip=0.5, init_std=0.02,
                     precision="fp32", seed=1234)
    folder, files, _ = ensure_gpt_dataset(tmp_path, args.vocab, args.seed, num_tokens=1 << 16)
    prefix = str(folder / files[0].removesuffix("_ids.npy"))
    reference = bench.run_reference(args, prefix)
    assert reference[-1][0] < reference[0][0] - 0.05  # it learns, and clipping acts (norm > 0.5)
    assert reference[0][1] > args.clip
    for path, tolerance in (("model", 1e-4), ("offload", 1e-4), ("optimizer", 2e-2)):
        curve = bench.run_script(path, args, prefix, tmp_path)
        assert len(curve) == args.steps, path
        for step, ((loss, norm), (want, want_norm)) in enumerate(zip(curve, reference), 1):
            assert loss == pytest.approx(want, rel=tolerance), (path, step)
            assert norm == pytest.approx(want_norm, rel=tolerance, abs=1e-3), (path, step)  # 3 decimals logged
