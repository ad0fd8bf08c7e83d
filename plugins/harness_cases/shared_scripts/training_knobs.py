"""The values the BERT and CNN cases' string knobs may take, written down once.

Standard library only: the training scripts check them in their own environments, and the
cases declare them as ``choices``, so config resolution refuses any other value before launch
(a one-line error naming the valid ones) instead of a training process failing after start-up.
"""

from __future__ import annotations

#: torch.compile's modes (PyTorch's ``compile_mode``); "reduce-overhead" replays CUDA graphs.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: The gradients' wire precision in data parallel (PyTorch's ``grad_allreduce``).
GRAD_ALLREDUCE = ("fp32", "fp16", "bf16")
#: How PyTorch's data parallel averages the gradients (``grad_sync``, ``torch_setup``).
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
