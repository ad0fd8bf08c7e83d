"""harness: a plugin-based, multi-framework training-benchmark harness.

The public Python API (docs/api.md)::

    import harness

    result = harness.run("gpt3_125M", vendor="cpu", scale="smoke", settings={"seed": 7})
    parsed = harness.parse("train.log", gpus=8)
    recorded = harness.results("results", case="gpt3_125M", status="success")

Plugins use :data:`hookimpl`. Everything not in ``__all__`` is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from harness.api import ParsedLog, RecordSpread, parse, results, run
    from harness.errors import HarnessError, UnavailableError, UserInputError
    from harness.models import BenchmarkResult, LegacyIndex

__version__ = "0.1.0"

#: Decorator for plugin hook implementations.
hookimpl = pluggy.HookimplMarker("harness")

__all__ = ["BenchmarkResult", "HarnessError", "LegacyIndex", "ParsedLog", "RecordSpread",
           "UnavailableError", "UserInputError", "__version__", "hookimpl", "parse", "results",
           "run"]

#: Public names loaded on first use, so that ``import harness`` (every plugin does it for
#: ``hookimpl``) stays as light as pluggy.
_LAZY = {"run": "harness.api", "parse": "harness.api", "results": "harness.api",
         "ParsedLog": "harness.api", "RecordSpread": "harness.api",
         "BenchmarkResult": "harness.models", "LegacyIndex": "harness.models",
         "HarnessError": "harness.errors", "UserInputError": "harness.errors",
         "UnavailableError": "harness.errors"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
