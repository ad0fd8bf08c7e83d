"""docs/plugins.md is generated in part from the code and must not go stale."""

from __future__ import annotations

import ast
import inspect
import re
import tomllib
from typing import Literal, Optional

import pytest

from harness import hookspecs
from harness.models import DeviceSet, ExecutionEnv, FrameworkSpec, LaunchSpec, VendorSpec
from harness.plugin_docs import (
    DOC_PATH, DOCUMENTED_MODELS, StaleRegionError, field_rows, hook_names, main, rst_to_markdown,
    type_name, update,
)

GUIDE = DOC_PATH.read_text(encoding="utf-8")


def test_committed_guide_matches_the_code():
    assert update(GUIDE) == GUIDE, "docs/plugins.md is stale: run `python -m harness.plugin_docs`"


@pytest.mark.parametrize("model", DOCUMENTED_MODELS, ids=lambda m: m.__name__)
def test_every_documented_field_has_a_description(model):
    undescribed = [name for name, _, _, description in field_rows(model) if not description.strip()]
    assert not undescribed, (f"{model.__name__} fields without a description: {undescribed}; "
                             "add Field(description=...) (or a docstring for a property)")


def test_the_guide_documents_what_a_vendor_engineer_meets():
    names = {m.__name__ for m in DOCUMENTED_MODELS}
    assert {"VendorSpec", "DeviceSet", "DeviceInfo", "VendorCaseConfig", "RunContext", "CaseSpec",
            "FrameworkSpec", "LaunchSpec", "ExecutionEnv"} <= names
    for heading in ("## Your accelerator", "## Vendor per-case configs (TOML)",
                    "## How a vendor's devices reach the training processes",
                    "## Packaging a third-party plugin", "## Walk-through: the demo plugin"):
        assert heading in GUIDE


def _code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE, re.DOTALL)


def test_python_blocks_of_the_guide_are_valid_hook_implementations():
    hooks = set(hook_names())
    implementations = 0
    for code in _code_blocks("python"):
        if code.startswith("def ") and "\n" not in code.strip():
            continue  # the signature line of a hook in the generated reference
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    "hookimpl" in ast.unparse(d) for d in node.decorator_list):
                assert node.name in hooks, f"docs implement unknown hook {node.name!r}"
                spec_params = set(inspect.signature(getattr(hookspecs, node.name)).parameters)
                params = {a.arg for a in node.args.args} - {"self"}
                assert params <= spec_params, f"{node.name} in the guide takes {params - spec_params}"
                implementations += 1
    assert implementations >= len(hooks)


def test_toml_blocks_of_the_guide_parse():
    blocks = _code_blocks("toml")
    assert len(blocks) >= 2
    for block in blocks:
        tomllib.loads(block)


def test_regions_missing_or_unknown_are_errors():
    with pytest.raises(StaleRegionError, match="missing"):
        update("no regions at all\n")
    with pytest.raises(StaleRegionError, match="unknown: \\['fields:Nope'\\]"):
        update(GUIDE + "<!-- generated:fields:Nope -->\n<!-- end generated:fields:Nope -->\n")


def test_check_reports_a_stale_file_and_writing_fixes_it(tmp_path, capsys):
    stale = tmp_path / "plugins.md"
    stale.write_text(GUIDE.replace("| `device_kind` |", "| `device_type` |"), encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert "stale" in capsys.readouterr().err
    assert main([str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == GUIDE
    assert main(["--check", str(stale)]) == 0


def test_field_tables_show_type_default_and_description():
    rows = {name: row for name, *row in field_rows(DeviceSet)}
    assert rows["visible_devices_env"] == ["str | None", "`None`", DeviceSet.model_fields[
        "visible_devices_env"].description]
    assert rows["devices"][:2] == ["list[DeviceInfo]", "required"]
    assert rows["count"][:2] == ["int", "property"]
    assert {name for name, *_ in field_rows(LaunchSpec)} >= {"argv", "env", "nproc", "log_format"}
    assert dict((n, d) for n, _, d, _ in field_rows(ExecutionEnv))["env"] == "`{}`"
    assert [n for n, *_ in field_rows(VendorSpec)] == list(VendorSpec.model_fields)
    assert field_rows(FrameworkSpec)[2][1] == "frozenset[str]"


def test_type_names_read_like_python():
    assert type_name(Optional[int]) == "int | None"
    assert type_name(Literal["sp", "mp"]) == '"sp" | "mp"'
    assert type_name(dict[str, list[int]]) == "dict[str, list[int]]"


def test_docstring_literal_blocks_become_fenced_code():
    text = "Do it with ``x``.\n\nExample::\n\n    @hookimpl\n    def run(context):\n        return None\n\nAfter.\n"
    assert rst_to_markdown(text) == (
        "Do it with `x`.\n\nExample:\n\n```python\n@hookimpl\ndef run(context):\n"
        "    return None\n```\n\nAfter.\n")


def test_a_missing_guide_is_a_one_line_error(tmp_path, capsys):
    assert main(["--check", str(tmp_path / "nowhere.md")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
