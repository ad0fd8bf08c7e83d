"""Data flows one way: no two parts of the harness package import each other.

A part is a subpackage (``harness.logparse``, ``harness.report``, ...) or a top-level module
(``harness.compare``). Imports anywhere in a module count, also inside functions; imports under
``if TYPE_CHECKING:`` (annotations only) do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness

PACKAGE = Path(harness.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() and len(parts) == 2:
        return ".".join(parts[:2])
    return module


def _is_type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _runtime_imports(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_type_checking_block(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return found


def part_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        for imported in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if imported in modules and _part(imported) != _part(name):
                graph.setdefault(_part(name), set()).add(_part(imported))
    return graph


def test_no_two_parts_of_the_package_import_each_other():
    graph = part_graph()
    mutual = sorted((a, b) for a, targets in graph.items() for b in targets
                    if a < b and a in graph.get(b, set()))
    assert mutual == [], f"parts that import each other: {mutual}"


def test_the_graph_sees_the_layers_it_checks():
    graph = part_graph()
    assert "harness.logparse" in graph["harness.ingest"]
    assert "harness.report" in graph["harness.compare"]
    assert "harness.result_builder" not in graph.get("harness.logparse", set())
    assert "harness.compare" not in graph.get("harness.report", set())
