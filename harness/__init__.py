"""harness: a plugin-based, multi-framework training-benchmark harness."""

import pluggy

__version__ = "0.1.0"

#: Decorator for plugin hook implementations.
hookimpl = pluggy.HookimplMarker("harness")
