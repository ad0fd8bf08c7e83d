"""No plugin imports another plugin: shared pieces live in neutral modules.

Checked on the source with ``ast`` for every module under plugins/ and vendors/ (and the demo
third-party plugin): package imports, and the by-name imports of the training scripts, which
run with a plugin's scripts folder and the shared folder on their path.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = [REPO / "plugins", REPO / "vendors", REPO / "tests" / "fixtures" / "harness_demo_plugin"]
#: Packages every plugin may import: the core, and the case catalog whose cases the framework
#: plugins implement (its dataset readers, FLOPs formulas and learning-rate schedule are the
#: contract of those cases, the same for every framework).
NEUTRAL = {"harness", "harness_cases"}
SHARED_SCRIPTS = REPO / "plugins" / "harness_cases" / "shared_scripts"


def plugin_packages() -> dict[str, Path]:
    return {init.parent.name: init.parent for root in ROOTS for init in root.glob("*/__init__.py")}


def imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module name) of every absolute import in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def script_modules(folder: Path) -> set[str]:
    return {path.stem for path in folder.glob("*.py")} if folder.is_dir() else set()


def violations(packages: dict[str, Path], repo: Path = REPO,
               shared_dir: Path = SHARED_SCRIPTS) -> list[str]:
    others_scripts = {name: script_modules(folder / "scripts") for name, folder in packages.items()}
    shared = script_modules(shared_dir)
    found = []
    for name, folder in packages.items():
        foreign = set(packages) - NEUTRAL - {name}
        own_scripts = script_modules(folder / "scripts")
        elsewhere = set().union(*(mods for other, mods in others_scripts.items() if other != name))
        for path in sorted(folder.rglob("*.py")):
            in_scripts = "scripts" in path.relative_to(folder).parts
            for line, module in imported_names(path):
                where = f"{path.relative_to(repo)}:{line}"
                if module in foreign:
                    found.append(f"{where} imports plugin package {module}")
                elif in_scripts and module in elsewhere - own_scripts - shared:
                    found.append(f"{where} imports {module}, a script of another plugin")
    return found


def test_the_packages_are_found():
    packages = plugin_packages()
    assert {"harness_pytorch", "harness_megatron", "harness_cpu", "harness_demo_plugin"} <= set(packages)


def test_no_plugin_imports_another_plugin():
    assert violations(plugin_packages()) == []


def test_a_cross_plugin_import_is_caught(tmp_path):
    """The check itself: a package import and a script's by-name import of another plugin."""
    for name in ("harness_a", "harness_b"):
        (tmp_path / name / "scripts").mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "harness_b" / "scripts" / "b_reader.py").write_text("")
    (tmp_path / "harness_a" / "plugin.py").write_text(
        "import harness\nfrom harness_a import x\n\ndef f():\n    from harness_b.plugin import g\n")
    (tmp_path / "harness_a" / "scripts" / "train.py").write_text("import numpy\nfrom b_reader import R\n")
    packages = {name: tmp_path / name for name in ("harness_a", "harness_b")}
    found = violations(packages, repo=tmp_path, shared_dir=tmp_path / "shared")
    assert found == ["harness_a/plugin.py:5 imports plugin package harness_b",
                     "harness_a/scripts/train.py:2 imports b_reader, a script of another plugin"]


@pytest.mark.parametrize("module", ["gpt_dataset", "lr_schedule", "gpt_windows"])
def test_shared_script_modules_exist(module):
    assert (SHARED_SCRIPTS / f"{module}.py").is_file()
