"""The GPT training script's optimizer paths against a plain fp32 AdamW, on the CPU.

Each path is ``plugins/harness_pytorch/scripts/train_gpt.py`` itself, launched on a resolved
config written here (the cpu vendor's device backend) with one of its optimizer layouts:

- ``model``: fp32 parameters, ``torch.optim.AdamW`` through the loss scaler (``--precision``
  bf16 runs it under autocast);
- ``optimizer``: bf16 weights, fp32 master weights and moments held by the optimizer
  (``master_weights=optimizer``, ``master_weights.DeviceMasterAdamW``);
- ``offload``: the host-memory optimizer (``offload=cpu``, ``host_offload.HostOffloadAdamW``),
  in the run's precision.

The reference is written here from the textbook, sharing nothing with the script but the
model class, the dataset reader and the schedule function: fp32 throughout, the mean loss over
all micro-batches of a step, the norm of the whole accumulated gradient clipped, one
``torch.optim.AdamW`` step with weight decay on the matrices only. Every path sees the same
initial weights (same seed) and the same batches in the same order.

A defect in an optimizer path shows as a curve departing from the reference; a problem of the
schedule (warm-up, learning rate, initial scale) shows in every path alike. Prints one row per
step with each path's loss and the largest departure from the reference; ``--json`` writes the
curves.

    python benchmarks/gpt_loss_paths.py --hidden 256 --layers 4 --heads 4 --seq-len 256 \\
        --micro-batch 2 --accum 16 --steps 20 --lr 2e-4 --warmup-steps 10
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "plugins" / "harness_pytorch" / "scripts"
SHARED = ROOT / "plugins" / "harness_cases" / "shared_scripts"
PATHS = ("model", "optimizer", "offload")
_LOSS = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?lm loss: (\S+) \|.*?grad norm: (\S+) \|")


def cpu_backend() -> dict:
    """The cpu vendor's device backend, as harness writes it into a resolved config."""
    from harness.app import Harness

    return Harness.load(load_entrypoints=False).registry.vendors.get("cpu").backend.model_dump(mode="json")


def gpt_params(args) -> dict:
    return {
        "num_layers": args.layers, "hidden_size": args.hidden, "num_heads": args.heads,
        "seq_len": args.seq_len, "vocab_size": args.vocab, "ffn_multiplier": 4, "dropout": 0.0,
        "learning_rate": args.lr, "min_learning_rate": args.lr / 10, "lr_warmup_steps": args.warmup_steps,
        "lr_decay_steps": args.decay_steps, "weight_decay": 0.1, "adam_beta1": 0.9, "adam_beta2": 0.95,
        "grad_clip": args.clip, "init_std": args.init_std, "recompute": "none", "compile": False,
        "fused_optimizer": True, "attention_backend": "auto", "offload": "none", "master_weights": "model",
        "gradient_accumulation_fusion": False, "sharding_stage": 0, "sharding_degree": 0,
        "tensor_parallel_degree": 1, "pipeline_parallel_degree": 1, "log_interval": 1,
    }


def settings(args, precision: str) -> dict:
    return {"precision": precision, "micro_batch_size": args.micro_batch, "grad_accum_steps": args.accum,
            "max_steps": args.steps, "skip_steps": 0, "seed": args.seed}


def run_script(path: str, args, data_prefix: str, workdir: Path) -> list[tuple[float, float]]:
    """(loss, grad norm) of every step of train_gpt.py on the layout ``path``."""
    params = gpt_params(args)
    precision = args.precision
    if path == "optimizer":
        params["master_weights"] = "optimizer"
        precision = "bf16"
    elif path == "offload":
        params["offload"] = "cpu"
    config = {"settings": settings(args, precision), "params": params, "device": cpu_backend()}
    config_path = workdir / f"config_{path}.json"
    config_path.write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SCRIPTS), str(SHARED)]), PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(SCRIPTS / "train_gpt.py"), "--config", str(config_path),
                           "--data-prefix", data_prefix], env=env, capture_output=True, text=True)
    steps = [(float(m.group(2)), float(m.group(3))) for m in _LOSS.finditer(proc.stdout)]
    if proc.returncode not in (0, 1) or not steps:  # 1: a non-finite loss, still a curve
        raise SystemExit(f"train_gpt.py ({path}) failed, exit {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return steps


def run_reference(args, data_prefix: str) -> list[tuple[float, float]]:
    """The textbook fp32 AdamW loop over the same initial weights and batches."""
    sys.path[:0] = [str(SCRIPTS), str(SHARED)]
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    from gpt_dataset import GPTWindowDataset
    from gpt_model import GPT
    from lr_schedule import lr_at

    torch.manual_seed(args.seed)  # as train_gpt.py's start-up does, right before the model
    model = GPT(vocab_size=args.vocab, seq_len=args.seq_len, num_layers=args.layers, hidden_size=args.hidden,
                num_heads=args.heads, init_std=args.init_std)
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1},
                                   {"params": vectors, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    dataset = GPTWindowDataset(data_prefix, args.seq_len, args.seed, args.vocab)
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=args.seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=args.micro_batch, sampler=sampler, drop_last=True, num_workers=0)
    batches = iter(loader)
    decay_steps = args.decay_steps or args.steps
    curve = []
    for step in range(1, args.steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, args.lr, args.warmup_steps, decay_steps, floor=args.lr / 10)
        total = 0.0
        for _ in range(args.accum):
            inputs, targets = next(batches)
            loss = model(inputs, targets)
            (loss / args.accum).backward()
            total += float(loss.detach()) / args.accum
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        curve.append((total, norm))
    return curve


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=50304, help="GPT-3's padded vocabulary (default)")
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--accum", type=int, default=16, help="micro-batches accumulated per step")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=2e-4, help="peak learning rate (gpt3_1.3B: 2e-4)")
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--decay-steps", type=int, default=0, help="0: cosine decay over --steps")
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--init-std", type=float, default=0.02)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"),
                        help="of the model and offload paths (the optimizer path is bf16)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--paths", default="reference," + ",".join(PATHS),
                        help=f"comma-separated: reference and any of {', '.join(PATHS)}")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "harness_loss_paths")
    parser.add_argument("--json", type=Path, help="write the curves here")
    args = parser.parse_args()
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = sorted(set(paths) - {"reference", *PATHS})
    if unknown:
        parser.error(f"unknown path(s) {', '.join(unknown)}; valid: reference, {', '.join(PATHS)}")

    sys.path.insert(0, str(ROOT / "plugins"))
    from harness_cases.gpt_data import ensure_gpt_dataset

    tokens = max(1 << 20, 2 * args.steps * args.accum * args.micro_batch * (args.seq_len + 1))
    folder, files, _ = ensure_gpt_dataset(args.data_dir, args.vocab, args.seed, num_tokens=tokens)
    prefix = str(folder / files[0].removesuffix("_ids.npy"))
    print(f"# {args.layers} layers, hidden {args.hidden}, vocab {args.vocab}, seq {args.seq_len}, "
          f"{args.micro_batch} x {args.accum} micro-batches ({args.micro_batch * args.accum * args.seq_len:,} "
          f"tokens a step), lr {args.lr:g}, warm-up {args.warmup_steps} steps, init std {args.init_std}, "
          f"precision {args.precision}; ln(vocab) = {math.log(args.vocab):.3f}", flush=True)
    curves: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as work:
        for path in paths:
            start = time.perf_counter()
            curves[path] = run_reference(args, prefix) if path == "reference" else run_script(path, args, prefix, Path(work))
            print(f"# {path}: {time.perf_counter() - start:.0f} s", flush=True)
    print("step " + " ".join(f"{p:>10}" for p in paths) + ("   max |path - reference| / reference" if "reference" in paths else ""))
    for i in range(args.steps):
        row = [curves[p][i][0] if i < len(curves[p]) else math.nan for p in paths]
        line = f"{i + 1:4d} " + " ".join(f"{v:10.4f}" for v in row)
        if "reference" in curves:
            ref = curves["reference"][i][0]
            line += "   " + f"{max(abs(v - ref) / ref for p, v in zip(paths, row) if p != 'reference') if len(paths) > 1 else 0.0:.2e}"
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                         "curves": {p: [{"step": i + 1, "loss": l, "grad_norm": g}
                                                        for i, (l, g) in enumerate(c)] for p, c in curves.items()}},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
