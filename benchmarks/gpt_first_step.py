"""The loss after AdamW's first step, as a function of learning rate, width and depth (CPU).

AdamW's first update of every parameter is ``-lr * sign(g)`` (bias-corrected first and second
moments are ``g`` and ``g**2``; ``eps`` is negligible beside the gradients), whatever the
gradient's size: clipping does not change it. Every weight of the model moves by exactly
``lr`` at once, in the direction its gradient gives, and those directions are coherent: a
linear layer's gradient is a sum over tokens of outer products whose input factors share a
mean, so the sign matrix is close to rank one and moves every token's activation the same
way by about ``lr * fan_in``. The change of the network's function in one step therefore grows
with ``lr * width`` (and with depth, as each block adds its shift to the residual stream), not
with ``lr`` alone.

This measures it: a GPT (the training script's model class, real vocabulary, the case's init)
computes one accumulated gradient, then for each learning rate takes AdamW's first step
(weight decay 0.1 on the matrices, as the cases do) from the same weights and evaluates the
loss on held-out batches. One row per (layers, width); columns are learning rates.

    python benchmarks/gpt_first_step.py --widths 256,1024,2048 --layers 2 --lrs 7e-8,2e-6,2e-5
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "plugins" / "harness_pytorch" / "scripts"
SHARED = ROOT / "plugins" / "harness_cases" / "shared_scripts"


def numbers(text: str, kind=float) -> list:
    return [kind(v) for v in text.split(",") if v.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", default="256,1024,2048", help="hidden sizes (heads: width / 128, at least 2)")
    parser.add_argument("--layers", default="2", help="numbers of blocks, comma-separated")
    parser.add_argument("--lrs", default="7e-8,2e-6,2e-5", help="learning rates of the first step")
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--grad-sequences", type=int, default=8, help="sequences in the gradient's batch")
    parser.add_argument("--eval-sequences", type=int, default=4, help="held-out sequences the loss is measured on")
    parser.add_argument("--init-std", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/harness_loss_paths"))
    args = parser.parse_args()
    sys.path[:0] = [str(SCRIPTS), str(SHARED), str(ROOT / "plugins")]
    import torch

    from gpt_dataset import GPTWindowDataset
    from gpt_model import GPT
    from harness_cases.gpt_data import ensure_gpt_dataset

    folder, files, _ = ensure_gpt_dataset(args.data_dir, args.vocab, args.seed, num_tokens=1 << 20)
    dataset = GPTWindowDataset(str(folder / files[0].removesuffix("_ids.npy")), args.seq_len, args.seed, args.vocab)
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(args.seed)).tolist()

    def batch(indices):
        pairs = [dataset[i] for i in indices]
        return torch.stack([p[0] for p in pairs]).long(), torch.stack([p[1] for p in pairs]).long()

    train = batch(order[:args.grad_sequences])
    held_out = batch(order[args.grad_sequences:args.grad_sequences + args.eval_sequences])
    lrs = numbers(args.lrs)
    print(f"# vocab {args.vocab}, seq {args.seq_len}, gradient over {args.grad_sequences * args.seq_len:,} "
          f"tokens, loss on {args.eval_sequences * args.seq_len:,} held-out tokens, init std "
          f"{args.init_std}; ln(vocab) = {math.log(args.vocab):.3f}")
    print("layers width  params   loss@init " + " ".join(f"lr={lr:<9.2g}" for lr in lrs))
    for layers in numbers(args.layers, int):
        for width in numbers(args.widths, int):
            start = time.perf_counter()
            torch.manual_seed(args.seed)
            model = GPT(vocab_size=args.vocab, seq_len=args.seq_len, num_layers=layers, hidden_size=width,
                        num_heads=max(2, width // 128), init_std=args.init_std)
            with torch.no_grad():
                initial = float(model(*held_out))
            for i in range(0, args.grad_sequences, 2):  # accumulated, two sequences at a time
                inputs, targets = train[0][i:i + 2], train[1][i:i + 2]
                (model(inputs, targets) * inputs.shape[0] / args.grad_sequences).backward()
            params = list(model.parameters())
            start_weights = [p.detach().clone() for p in params]
            signs = [p.grad.sign() for p in params]
            losses = []
            for lr in lrs:
                with torch.no_grad():
                    for p, w, s in zip(params, start_weights, signs):
                        decay = 0.1 if p.dim() >= 2 else 0.0
                        p.copy_(w * (1 - lr * decay) - lr * s)  # AdamW's first step
                    losses.append(float(model(*held_out)))
            print(f"{layers:6d} {width:5d} {sum(p.numel() for p in params) / 1e6:6.1f}M {initial:9.4f} "
                  + " ".join(f"{v:12.4f}" for v in losses) + f"   ({time.perf_counter() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
