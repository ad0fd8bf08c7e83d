"""The core's own hook implementations: fallbacks that any plugin can override or wrap."""

from __future__ import annotations

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
    """Run the launch as a subprocess group with the run's timeouts."""
    settings = context.config.settings
    return execute_launch(
        launch,
        log_path,
        timeout_s=settings.timeout_s,
        hang_timeout_s=settings.hang_timeout_s,
        on_line=observer.on_line,
    )
