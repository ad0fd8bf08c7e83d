"""The training FLOPs formulas live in one module (``shared_scripts/model_flops.py``): MFU and
every training script's own log line count the same FLOPs, and no script keeps a copy."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORMULA_MODULE = REPO / "plugins" / "harness_cases" / "shared_scripts" / "model_flops.py"


def test_no_training_script_defines_a_flops_function():
    """A function named *flops* outside the shared module is a second copy of the rule."""
    found = []
    for path in sorted((REPO / "plugins").glob("*/scripts/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(REPO)}:{node.lineno} {node.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef) and "flops" in node.name.lower()]
    assert found == []
    assert FORMULA_MODULE.is_file()


def test_the_formula_module_needs_only_the_standard_library():
    """It is imported inside Paddle's and MXNet's interpreters, where harness is absent."""
    tree = ast.parse(FORMULA_MODULE.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__"}
