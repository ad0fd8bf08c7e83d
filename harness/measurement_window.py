"""The measurement window: the keys that decide what a benchmark figure means.

How many steps run and how many warm-up steps are left out (``max_steps``, ``skip_steps``),
the learning rate and its schedule, the dataset and the seed decide which number a run
produces and whether its loss curve is comparable with anyone else's. They belong to the
case (or to a certification suite), never to whoever runs it. This module is the one place
that names them; certification refuses them on the command line, and vendor configs and the
``modified`` marking of results use the same list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.models import ResolvedConfig

#: RunSettings fields of the window: step count, warm-up steps left out, seed.
LOCKED_SETTINGS: frozenset[str] = frozenset({"max_steps", "skip_steps", "seed"})

#: Case parameters of the learning-rate schedule (peak, floor, warm-up, decay length, in steps
#: or in tokens) and of the dataset (``num_samples``: how many synthetic samples the BERT and
#: CNN datasets hold).
LOCKED_PARAMS: frozenset[str] = frozenset({
    "learning_rate", "min_learning_rate", "lr_warmup_steps", "lr_decay_steps",
    "lr_warmup_tokens", "lr_decay_tokens", "num_samples",
})

LOCKED_KEYS: frozenset[str] = LOCKED_SETTINGS | LOCKED_PARAMS


def locked_keys_touched(keys: Iterable[str] | Mapping[str, Any]) -> list[str]:
    """The locked keys among ``keys`` (``--set`` pairs parsed to a dict, a vendor config's
    values, or plain key names), sorted."""
    return sorted(set(keys) & LOCKED_KEYS)


def locked_values(config: ResolvedConfig) -> dict[str, Any]:
    """The locked keys' values of a resolved config; keys the case does not have (e.g.
    ``num_samples`` for GPT) are left out."""
    settings, params = config.settings.model_dump(), config.params
    values = {key: settings[key] for key in LOCKED_SETTINGS if key in settings}
    values.update({key: params[key] for key in LOCKED_PARAMS if key in params})
    return values


def locked_differences(actual: ResolvedConfig, expected: ResolvedConfig) -> dict[str, tuple[Any, Any]]:
    """Locked keys whose value in ``actual`` differs from ``expected``: key -> (actual, expected)."""
    got, want = locked_values(actual), locked_values(expected)
    return {key: (got.get(key), want.get(key))
            for key in sorted(set(got) | set(want)) if got.get(key) != want.get(key)}
