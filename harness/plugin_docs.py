"""Generate the reference parts of ``docs/plugins.md``: ``python -m harness.plugin_docs``.

The hook reference comes from the docstrings and signatures of ``harness.hookspecs`` and the
field tables from the pydantic models, so the guide cannot drift from the code: a test fails
when the committed file differs from what this module renders (``--check`` does the same).

Generated regions are delimited in the Markdown by ``<!-- generated:NAME -->`` and
``<!-- end generated:NAME -->``; everything outside them is written by hand. ``NAME`` is
``hooks`` or a model's class name (``fields:VendorSpec``).
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from harness import hookspecs
from harness.models import (
    CaseSpec,
    DatasetInfo,
    DeviceInfo,
    DeviceSet,
    ExecutionEnv,
    FlopsEstimate,
    FrameworkSpec,
    LaunchSpec,
    ParsedLog,
    ProcessOutcome,
    ResolvedConfig,
    RunSettings,
    StepRecord,
    VendorSpec,
)
from harness.models.context import RunContext
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.models.vendor_config import VendorCaseConfig
from harness.results_io import atomic_write_text

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"

#: The models a plugin author meets, in the order the guide presents them.
DOCUMENTED_MODELS: tuple[type[BaseModel], ...] = (
    CaseSpec, FrameworkSpec, VendorSpec, DeviceBackend, FrameworkDevice, DeviceSet, DeviceInfo, VendorCaseConfig, RunContext,
    ResolvedConfig, RunSettings, ExecutionEnv, DatasetInfo, LaunchSpec, ProcessOutcome,
    ParsedLog, StepRecord, FlopsEstimate,
)

REGION = re.compile(
    r"(<!-- generated:(?P<name>[\w:]+) -->\n)(?P<body>.*?)(<!-- end generated:(?P=name) -->)",
    re.DOTALL,
)


class StaleRegionError(ValueError):
    """The document lacks a generated region or has one this module does not know."""


# --------------------------------------------------------------------------- hooks


def hook_names() -> list[str]:
    """Every hookspec, in the order of ``harness/hookspecs.py``."""
    specs = [fn for _, fn in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(fn, "harness_spec")]
    return [fn.__name__ for fn in sorted(specs, key=lambda fn: fn.__code__.co_firstlineno)]


def _hook_kind(fn) -> str:
    opts = fn.harness_spec
    if opts.get("firstresult"):
        return "first result: the first implementation that returns something other than `None` wins"
    return "every implementation is called and every answer counts"


def _signature(fn) -> str:
    params = ", ".join(
        f"{p.name}: {p.annotation}" if p.annotation is not inspect.Parameter.empty else p.name
        for p in inspect.signature(fn).parameters.values()
    )
    returns = inspect.signature(fn).return_annotation
    return f"def {fn.__name__}({params}) -> {returns}"


def rst_to_markdown(text: str) -> str:
    """The docstrings' reStructuredText subset as Markdown: ``code``, ``::`` literal blocks."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            lead = line.rstrip()[:-2].rstrip()
            out.append(_inline(lead) + ":" if lead else "")
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            code = textwrap.dedent("\n".join(block)).strip("\n")
            language = "toml" if code.lstrip().startswith("[") else "python"
            out += ["", f"```{language}", code, "```", ""]
            continue
        out.append(_inline(line))
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def _inline(line: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", line)


def render_hooks() -> str:
    parts = []
    for name in hook_names():
        fn = getattr(hookspecs, name)
        parts.append(
            f"### `{name}`\n\n```python\n{_signature(fn)}\n```\n\n"
            f"*Results:* {_hook_kind(fn)}.\n\n{rst_to_markdown(inspect.getdoc(fn) or '')}"
        )
    return "\n".join(parts)


# --------------------------------------------------------------------------- models


def type_name(annotation) -> str:
    """A type as a reader writes it: ``dict[str, bool | int | float | str]``, ``"sp" | "mp"``."""
    if annotation is type(None):
        return "None"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is not None:
        base = getattr(origin, "__name__", str(origin))
        return f"{base}[{', '.join(type_name(a) for a in args)}]" if args else base
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default(field) -> str:
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    if field.default is PydanticUndefined:
        return "required"
    return f"`{field.default!r}`"


def _cell(text: str | None) -> str:
    """One table cell: one line, ``code`` as Markdown, ``|`` and ``<`` outside code escaped."""
    parts = re.split(r"(`[^`]*`)", _inline(" ".join((text or "").split())))
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;")
                   for part in parts).replace("|", "\\|")


def field_rows(model: type[BaseModel]) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) of every field, computed field and public property."""
    rows = [(name, type_name(f.annotation), _default(f), f.description or "")
            for name, f in model.model_fields.items()]
    for name, computed in model.model_computed_fields.items():
        rows.append((name, type_name(computed.return_type), "computed",
                     computed.description or inspect.getdoc(computed.wrapped_property) or ""))
    for name, member in vars(model).items():
        if isinstance(member, property) and not name.startswith("_") and name not in model.model_computed_fields:
            returns = typing.get_type_hints(member.fget, vars(sys.modules[model.__module__])).get("return")
            rows.append((name, type_name(returns), "property", inspect.getdoc(member) or ""))
    return rows


def render_fields(model: type[BaseModel]) -> str:
    summary = _cell(inspect.getdoc(model))
    lines = [f"`{model.__module__}.{model.__name__}`" + (f": {summary}" if summary else ""), "",
             "| field | type | default | description |", "| --- | --- | --- | --- |"]
    lines += [f"| `{name}` | `{_cell(kind)}` | {default} | {_cell(description)} |"
              for name, kind, default, description in field_rows(model)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the document


def regions() -> dict[str, str]:
    """Region name -> its generated Markdown."""
    rendered = {"hooks": render_hooks()}
    rendered.update({f"fields:{m.__name__}": render_fields(m) for m in DOCUMENTED_MODELS})
    return rendered


def update(text: str) -> str:
    """``text`` with every generated region replaced by what the code says now."""
    rendered = regions()
    found = [m["name"] for m in REGION.finditer(text)]
    unknown = sorted(set(found) - set(rendered))
    missing = [name for name in rendered if name not in found]
    if unknown or missing:
        raise StaleRegionError(f"docs regions unknown: {unknown or 'none'}; missing: {missing or 'none'}")
    return REGION.sub(lambda m: m[1] + rendered[m["name"]] + m[4], text)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    path = Path(paths[0]) if paths else DOC_PATH
    if not path.is_file():
        print(f"error: {path} does not exist; give the path of docs/plugins.md", file=sys.stderr)
        return 2
    current = path.read_text(encoding="utf-8")
    try:
        new = update(current)
    except StaleRegionError as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    if check:
        if new != current:
            print(f"{path} is stale: run `python -m harness.plugin_docs`", file=sys.stderr)
            return 1
        return 0
    if new != current:
        atomic_write_text(path, new)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
