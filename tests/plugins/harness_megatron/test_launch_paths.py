"""The Megatron script imports the PyTorch plugin's dataset, which needs the shared readers."""

from __future__ import annotations

import os
import subprocess
import sys

from harness_cases.readers import READERS_DIR
from harness_megatron.plugin import _pytorch_scripts


def test_dataset_module_imports_from_the_paths_the_launch_sets():
    path = os.pathsep.join([str(_pytorch_scripts()), str(READERS_DIR)])
    proc = subprocess.run([sys.executable, "-c", "from gpt_dataset import GPTWindowDataset"],
                          env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
