"""Every hook is documented, and every hook has a test named test_hook_<name> somewhere."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from harness import hookspecs

HOOKS = sorted(
    name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
    if hasattr(fn, "harness_spec")
)
TESTS_DIR = Path(__file__).resolve().parents[1]


def test_hooks_are_found():
    assert {"prepare_env", "prepare_data", "run", "parse_log", "register_cases"} <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook):
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    assert len(doc) > 40, f"hookspec {hook} needs a docstring: it is the plugin API documentation"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_tested(hook):
    pattern = re.compile(rf"def test_hook_{hook}\b")
    found = [p for p in TESTS_DIR.rglob("test_*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert found, f"no test named test_hook_{hook} under tests/"
