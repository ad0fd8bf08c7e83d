"""Host time of gradient accumulation fusion: a GPT micro-batch with and without the fused linears.

The model is the PyTorch plugin's GPT with compiled blocks and bf16 autocast, its matrices held
by ``DeviceMasterAdamW``; with ``--fused`` the block linears add their weight gradients into the
optimizer's flat fp32 gradients (``gradient_accumulation_fusion``). Dimensions are tiny and the
device is the CPU, so the time is what the host spends per micro-batch (Python, dispatch,
compiled-graph calls), not the speed of any GPU. Run from the repository root::

    python benchmarks/bench_fused_linear_host.py --layers 24 --repeats 10
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins" / "harness_pytorch" / "scripts"),
                str(ROOT / "plugins" / "harness_cases" / "shared_scripts")]

import torch  # noqa: E402

from gpt_model import GPT  # noqa: E402
from master_weights import DeviceMasterAdamW  # noqa: E402


def host_ms_per_micro_batch(fused: bool, layers: int, repeats: int) -> float:
    torch.manual_seed(0)
    model = GPT(vocab_size=64, seq_len=16, num_layers=layers, hidden_size=32, num_heads=2)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    flat = DeviceMasterAdamW(decay, no_decay, device=torch.device("cpu"), dtype=torch.bfloat16, lr=1e-3,
                             betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=False)
    if fused:
        flat.expose_main_grads()
        model.route_weight_gradients()
    model.compile_layers()
    tokens = torch.randint(0, 64, (1, 17), generator=torch.Generator().manual_seed(1))

    def micro_batch() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()

    for _ in range(3):  # compiles
        micro_batch()
    start = time.perf_counter()
    for _ in range(repeats):
        micro_batch()
    return (time.perf_counter() - start) / repeats * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for fused in (False, True):
        ms = host_ms_per_micro_batch(fused, args.layers, args.repeats)
        print(f"{'fused' if fused else 'unfused':<8} {ms:7.1f} ms per micro-batch ({args.layers} layers, "
              f"torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
