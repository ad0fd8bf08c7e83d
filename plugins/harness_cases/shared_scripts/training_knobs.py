"""The values the BERT and CNN cases' string knobs may take, written down once.

Standard library only: the training scripts check them in their own environments, and the
cases declare them as ``choices``, so config resolution refuses any other value before launch
(a one-line error naming the valid ones) instead of a training process failing after start-up.
"""

from __future__ import annotations

#: torch.compile's modes (PyTorch's ``compile_mode``): "reduce-overhead" replays each compiled
#: graph as a CUDA graph, one launch for all of a graph's kernels, for steps whose host launches
#: outlast the device's work.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: The gradients' wire precision in PyTorch's data parallel (``grad_allreduce``): fp32 as the
#: gradients are kept, or compressed to half precision for the transfer and restored after it.
GRAD_ALLREDUCE = ("fp32", "fp16", "bf16")
#: How PyTorch's data parallel averages the gradients over the ranks (``grad_sync``): "ddp",
#: DistributedDataParallel's all-reduce of each bucket from autograd hooks as its gradients
#: become ready; "flat", one all-reduce of all gradients in one flat buffer after the backward
#: has finished (``torch_setup.FlatGradientSync``); "compiled", DDP's all-reduces traced into
#: the compiled backward graph (``torch_setup.CompiledGradientSync``).
GRAD_SYNCS = ("ddp", "flat", "compiled")
#: Paddle's AMP level (``amp_level``): auto is O2 on accelerators, O1 on CPUs.
AMP_LEVELS = ("auto", "O1", "O2")

#: The cases' ``choices``: each knob and its allowed values.
TRAINING_KNOB_CHOICES: dict[str, tuple[str, ...]] = {
    "compile_mode": COMPILE_MODES,
    "grad_allreduce": GRAD_ALLREDUCE,
    "grad_sync": GRAD_SYNCS,
    "amp_level": AMP_LEVELS,
}
