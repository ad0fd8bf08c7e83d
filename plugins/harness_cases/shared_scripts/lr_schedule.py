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
