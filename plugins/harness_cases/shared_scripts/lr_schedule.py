"""The cases' learning-rate schedule, the same in every framework's training script.

Linear warm-up from 0 to ``peak`` over ``warmup`` steps, then cosine decay to ``floor`` at
``decay_steps`` (and ``floor`` after it). Standard library only: it is imported inside every
framework's interpreter.
"""

from __future__ import annotations

import math


def lr_at(step: int, peak: float, warmup: int, decay_steps: int, floor: float = 0.0) -> float:
    """The learning rate of optimizer step ``step`` (counted from 1)."""
    if warmup > 0 and step <= warmup:
        return peak * step / warmup
    progress = min(1.0, (step - warmup) / max(1, decay_steps - warmup))
    return floor + 0.5 * (peak - floor) * (1.0 + math.cos(math.pi * progress))


def schedule_steps(params: dict, tokens_per_step: int, max_steps: int) -> tuple[int, int]:
    """(warm-up steps, decay steps) of a run that trains ``tokens_per_step`` tokens an optimizer
    step (global batch x sequence length).

    A schedule given in tokens (``lr_warmup_tokens``, ``lr_decay_tokens``, as GPT-3 states its
    own: warm-up over 375M tokens, cosine decay over 260B) becomes steps of this run's batch,
    rounded up, so every layout reaches the same rate after the same number of tokens. Otherwise
    the step counts (``lr_warmup_steps``; ``lr_decay_steps``, 0 meaning the run's
    ``max_steps``) are used as they are.
    """
    def steps(tokens) -> int:
        return max(1, math.ceil(int(tokens) / max(1, tokens_per_step)))

    warmup = steps(params["lr_warmup_tokens"]) if params.get("lr_warmup_tokens") \
        else int(params.get("lr_warmup_steps") or 0)
    decay = steps(params["lr_decay_tokens"]) if params.get("lr_decay_tokens") \
        else int(params.get("lr_decay_steps") or 0) or max_steps
    return warmup, decay
