"""The Megatron script's by-name imports resolve on the paths its launch sets."""

from __future__ import annotations

import os
import subprocess
import sys

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR
from harness_megatron.plugin import SCRIPT


def test_shared_modules_import_from_the_paths_the_launch_sets():
    # A script's own folder is sys.path[0]; the launch adds the shared folder behind it.
    path = os.pathsep.join([str(SCRIPT.parent), str(SHARED_SCRIPTS_DIR)])
    code = "from gpt_dataset import GPTWindowDataset; from lr_schedule import lr_at"
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
