"""The core's own hook implementations: fallbacks that any plugin can override or wrap."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from harness import hookimpl
from harness.models import ExecutionEnv, LaunchSpec, ProcessOutcome
from harness.models.context import RunContext
from harness.runner.process import execute_launch


@hookimpl(trylast=True)
def prepare_env(context: RunContext) -> ExecutionEnv:
    """Fallback: run in the current interpreter with no extra variables."""
    return ExecutionEnv(python=sys.executable, framework=context.framework,
                        description="current interpreter")


@hookimpl(trylast=True)
def execute(context: RunContext, launch: LaunchSpec, log_path: Path, observer) -> ProcessOutcome:
    """Run the launch as a subprocess group with the run's timeouts.

    The core's step clock names where the log goes as captured (``capture_path``): the
    output is written there, and ``log_path``, which the vendor's ``execute`` wrappers see,
    gets a copy once the processes ended; the original never passes through a wrapper."""
    settings = context.config.settings
    capture = getattr(observer, "capture_path", None)
    outcome = execute_launch(
        launch,
        Path(capture) if capture else log_path,
        timeout_s=settings.timeout_s,
        hang_timeout_s=settings.hang_timeout_s,
        on_line=observer.on_line,
    )
    if capture:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(capture, log_path)
        observer.capture_done = True
    return outcome.model_copy(update={"log_path": str(log_path)})
