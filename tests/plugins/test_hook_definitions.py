"""Every plugin module defines each function once: a second ``def`` of a hook's name replaces
the first, so pluggy registers only the last and the first never runs (no error, no warning).

Checked on the source with ``ast`` for every module under plugins/ and vendors/ (and the demo
third-party plugin), at module level and in class bodies.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = [REPO / "plugins", REPO / "vendors", REPO / "tests" / "fixtures" / "harness_demo_plugin"]


def redefinitions(path: Path, root: Path) -> list[str]:
    """``file: scope.name`` for each function or class name defined twice in one scope."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        names = Counter(node.name for node in scope.body
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        where = getattr(scope, "name", "<module>")
        found += [f"{path.relative_to(root)}: {where}.{name}" for name, count in names.items() if count > 1]
    return found


def test_no_plugin_module_defines_a_name_twice():
    found = [hit for root in ROOTS for path in sorted(root.rglob("*.py"))
             for hit in redefinitions(path, REPO)]
    assert found == []


def test_a_redefined_hook_is_caught(tmp_path):
    """The check itself, on the shape of the PyTorch plugin's former two unsupported_reason."""
    module = tmp_path / "plugin.py"
    module.write_text("@hookimpl\ndef unsupported_reason(context):\n    return 'a'\n\n"
                      "@hookimpl\ndef unsupported_reason(context):\n    return None\n\n"
                      "class P:\n    def run(self): ...\n    def run(self): ...\n")
    assert redefinitions(module, tmp_path) == ["plugin.py: <module>.unsupported_reason",
                                               "plugin.py: P.run"]
