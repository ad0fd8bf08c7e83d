"""MLPerf's own compliance checker on an MLPerf log, where the ``mlperf-logging`` package is
installed (``pip install 'harness[mlperf]'``).

harness does not re-implement MLPerf's rules: it runs the package's checker
(``python -m mlperf_logging.compliance_checker --usage training --ruleset R LOG``) in a child
process and reports its verdict and messages beside harness's own figure.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, Field

from harness.errors import UserInputError

PACKAGE = "mlperf-logging"
_RULESET = re.compile(r"^training_(\d+\.\d+\.\d+)$")


class ComplianceVerdict(BaseModel):
    """What mlperf-logging's compliance checker said of one log."""

    checker: str = Field(description="The package and version that checked the log.")
    ruleset: str = Field(description="The MLPerf training ruleset the log was checked against.")
    passed: bool
    messages: list[str] = Field(default_factory=list, description="The checker's warnings and errors.")


def available() -> bool:
    return importlib.util.find_spec("mlperf_logging") is not None


def training_rulesets() -> list[str]:
    """The training rulesets the installed package knows, oldest first."""
    spec = importlib.util.find_spec("mlperf_logging.compliance_checker")
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(list(spec.submodule_search_locations)[0])
    found = [m.group(1) for p in folder.iterdir() if (m := _RULESET.match(p.name))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def check(log: Path, ruleset: str | None = None) -> ComplianceVerdict:
    """Run mlperf-logging's compliance checker on ``log`` (training usage)."""
    if not available():
        raise UserInputError(f"--compliance runs MLPerf's checker from the {PACKAGE} package, which is "
                             f"not installed: pip install {PACKAGE} (or harness[mlperf])")
    rulesets = training_rulesets()
    ruleset = ruleset or (rulesets[-1] if rulesets else None)
    if ruleset not in rulesets:
        raise UserInputError(f"unknown MLPerf training ruleset {ruleset!r}; {PACKAGE} "
                             f"{metadata.version(PACKAGE)} knows: {', '.join(rulesets)}")
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "compliance.log"
        run = subprocess.run(
            [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
             "--ruleset", ruleset, "--log_output", str(output), str(log)],
            capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
        text = output.read_text(encoding="utf-8", errors="replace") if output.exists() else run.stderr
    messages = [line.strip() for line in text.splitlines()
                if line.strip().strip("-") and not line.startswith(("INFO - SUCCESS", "ERROR - FAILED", "INFO - Running compliance"))]
    return ComplianceVerdict(checker=f"{PACKAGE} {metadata.version(PACKAGE)}", ruleset=ruleset,
                             passed=run.returncode == 0, messages=messages[:20])
