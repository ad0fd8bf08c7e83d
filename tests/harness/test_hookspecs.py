"""Every hook is documented with a working example, exercised by a test and in the guide."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from harness import hookspecs
from harness.plugin_docs import DOC_PATH, REGION, hook_names

HOOKS = hook_names()
TESTS_DIR = Path(__file__).resolve().parents[1]
THIS_FILE = Path(__file__).resolve()


def examples(doc: str) -> list[str]:
    """The code of every ``Example...::`` literal block of a docstring."""
    found, lines = [], doc.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*Example\b.*::\s*$", line):
            block = []
            for following in lines[i + 1:]:
                if following.strip() and not following.startswith((" ", "\t")):
                    break
                block.append(following)
            found.append(textwrap.dedent("\n".join(block)).strip("\n"))
    return found


def _is_hookimpl(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "hookimpl") or (
        isinstance(target, ast.Attribute) and target.attr == "hookimpl")


def hookimpls(tree: ast.AST, hook: str) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == hook
            and any(_is_hookimpl(d) for d in node.decorator_list)]


def _is_router(node: ast.AST) -> bool:
    """``router``, ``<harness>.router()`` or ``HookRouter(...)``: the core's owner-scoped hook
    caller (harness.dispatch)."""
    if isinstance(node, ast.Name):
        return node.id == "router"
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "HookRouter")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "router"))


def hook_calls(tree: ast.AST, hook: str) -> list[ast.Call]:
    """Calls of ``<plugin manager>.hook.<hook>(...)`` or of the router's ``<hook>(...)``."""
    names = {hook, hook.replace("unsupported_reason", "unsupported_reasons")}
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in names
            and ((isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "hook")
                 or _is_router(node.func.value))]


def exercises(source: str, hook: str) -> bool:
    """A test module exercises a hook when it has a test and implements or calls the hook."""
    tree = ast.parse(source)
    has_test = any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_") for n in ast.walk(tree))
    return has_test and bool(hookimpls(tree, hook) or hook_calls(tree, hook))


def test_hooks_are_found():
    assert {"prepare_env", "prepare_data", "run", "parse_log", "register_cases"} <= set(HOOKS)
    assert HOOKS[0] == "register_cases"  # in the order of hookspecs.py, as the guide lists them


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_an_example(hook):
    spec = getattr(hookspecs, hook)
    doc = inspect.getdoc(spec) or ""
    blocks = examples(doc)
    assert blocks, f"hookspec {hook} needs an 'Example::' block in its docstring"
    spec_params = set(inspect.signature(spec).parameters)
    for code in blocks:
        impls = hookimpls(ast.parse(code), hook)  # a SyntaxError fails the test too
        assert impls, f"the example of {hook} must define an @hookimpl function named {hook}"
        for impl in impls:
            params = {a.arg for a in impl.args.args} - {"self"}
            # pluggy passes arguments by name: an implementation may take fewer, never others
            assert params <= spec_params, f"example of {hook} takes {params - spec_params}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_exercised_by_a_test(hook):
    exercising = [p for p in TESTS_DIR.rglob("test_*.py")
                  if p.resolve() != THIS_FILE and exercises(p.read_text(encoding="utf-8"), hook)]
    assert exercising, f"no test module under tests/ implements (@hookimpl) or calls harness.hook.{hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test_named_after_it(hook):
    pattern = re.compile(rf"def test_hook_{hook}\b")
    found = [p for p in TESTS_DIR.rglob("test_*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert found, f"no test named test_hook_{hook} under tests/"


def test_mentions_of_a_hook_do_not_count_as_exercising_it():
    mentioned = '''
def test_something():
    """run is mentioned here"""
    run = 1
    harness.run(context=None)
    assert "execute" in "harness.hook.execute("
'''
    assert not exercises(mentioned, "run") and not exercises(mentioned, "execute")
    implemented = "class P:\n    @hookimpl(wrapper=True)\n    def run(self, context):\n        yield\n"
    assert not exercises(implemented, "run"), "an implementation without a test is not exercised"
    assert exercises(implemented + "def test_p():\n    pass\n", "run")
    assert exercises("def test_p(harness):\n    harness.hook.execute(context=None)\n", "execute")
    assert exercises("def test_p():\n    harness.hookimpl\n@harness.hookimpl\ndef run(): pass\n", "run")


@pytest.mark.parametrize("hook", HOOKS)
def test_the_guide_covers_every_hook(hook):
    text = DOC_PATH.read_text(encoding="utf-8")
    assert f"### `{hook}`" in text, f"docs/plugins.md has no reference entry for {hook}"
    written_by_hand = REGION.sub("", text)
    assert f"`{hook}`" in written_by_hand, f"the guide's own text never mentions `{hook}`"
