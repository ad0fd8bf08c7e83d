"""The per-repeat nonce that seeds a run's data order.

The core gives every repeat of a built-in script a fresh nonce in ``HARNESS_DATA_NONCE``; the
scripts mix it into the seeds of their data order (document order, sampler shuffles) and the
read-back line reports it (``data_nonce``), which the core checks against the repeat's. A
stored log of another run then cannot pass for this one: its read-back names another nonce,
and it trained on another order. Without the variable (``harness equivalence``, whose sample
order must be the same in every framework, or a script run by hand) the seeds are the
config's own. Standard library only.
"""

from __future__ import annotations

import hashlib
import os

NONCE_ENV = "HARNESS_DATA_NONCE"


def data_nonce() -> int | None:
    """This repeat's nonce, or None when the core gave none."""
    text = os.environ.get(NONCE_ENV, "")
    return int(text) if text.isdigit() else None


def data_order_seed(seed: int) -> int:
    """``seed`` mixed with this repeat's nonce (a 31-bit seed every framework accepts);
    ``seed`` itself without a nonce."""
    nonce = data_nonce()
    if nonce is None:
        return seed
    digest = hashlib.sha256(f"{seed}:{nonce}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
