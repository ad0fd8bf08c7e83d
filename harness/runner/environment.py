"""Building a run's environment ahead of the run (``harness env build``)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from harness.models import ExecutionEnv
from harness.runner.planning import plan
from harness.runner.request import RunRequest

if TYPE_CHECKING:
    from harness.app import Harness


def prepare_run_environment(harness: Harness, request: RunRequest) -> ExecutionEnv:
    """The environment ``harness run`` would run ``request`` in, built now if it is not
    cached: planned as the run is (devices, vendor config, ``framework_requirement``,
    wheelhouse) and prepared by the framework's plugin. Nothing is run and no run folder is
    kept (the plugin's env.log goes to a scratch folder; its messages go to stderr)."""
    with tempfile.TemporaryDirectory(prefix="harness-env-build-") as scratch:
        context = plan(harness, dataclasses.replace(request, output=Path(scratch)))
        return harness.router(context).prepare_env(context)
