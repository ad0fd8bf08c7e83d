"""The read-back line: what a training script actually built and will run, said before step 1.

A script prints one line ``[harness-readback] {json}`` on its first rank, with what it counted
from the model it built and the batch, precision, learning rate, world size and device it is
about to train with. The core compares that line with the resolved config and the case's own
parameter count (``harness.readback``), so a config that was changed between harness and the
script (a rewritten config file, a changed argument list) makes the run ``invalid`` instead of
a faster-looking result under the official name.

Keys are the config's own names (``num_layers``, ``hidden_size``, ``micro_batch_size``,
``learning_rate``, ...), plus ``parameters`` (trainable parameters of the whole model: tied
weights once, a tensor-parallel shard for all its ranks) and ``device_type`` (the framework's
device type string: ``cpu``, ``cuda``, ``gpu``, ...). Standard library only: every framework's
interpreter imports it.
"""

from __future__ import annotations

import json

#: Marks the line in a log; the JSON object follows it on the same line.
READBACK_PREFIX = "[harness-readback] "


def readback_line(**facts) -> str:
    """The line for ``facts`` (JSON values only), keys sorted, with the repeat's data-order
    nonce (``data_nonce``) where the core gave one."""
    try:  # the scripts import this folder's modules by name; harness by package
        from data_nonce import data_nonce
    except ImportError:
        from harness_cases.shared_scripts.data_nonce import data_nonce

    nonce = data_nonce()
    if nonce is not None:
        facts = {**facts, "data_nonce": nonce}
    return READBACK_PREFIX + json.dumps(facts, sort_keys=True)


def print_readback(**facts) -> None:
    """Print the read-back line and flush, so it precedes the first step's line in the log."""
    print(readback_line(**facts), flush=True)
