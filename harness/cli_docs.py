"""Generate the CLI reference, ``docs/cli.md``, from the command-line app: ``python -m harness.cli_docs``.

Every command, its help text, its usage line and a table of its options and arguments come
from the click command tree that ``harness`` itself parses with, built over the built-in
plugins only (an installed third-party plugin's commands belong to its own docs). A test fails
when the committed page differs from what this module renders; ``--check`` does the same.
"""

from __future__ import annotations

import enum
import re
import sys
from pathlib import Path

from harness.results_io import atomic_write_text

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

HEADER = """# CLI reference

Generated from the command-line app by `python -m harness.cli_docs` (a test fails when this
page differs from what the app says). On a terminal, `harness COMMAND -h` prints the same
help with rich panels; `harness --install-completion` installs shell completion.
"""

#: Rich console markup in help texts: styles only, never literal brackets such as ``[1,0]``.
_MARKUP = re.compile(r"\[/?(?:bold|dim|italic|red|green|yellow|cyan|magenta|blue)\]")


def _plain(text: str) -> str:
    """Help text without rich styles; ``\\[`` (rich's escaped bracket) becomes ``[``."""
    return _MARKUP.sub("", text).replace("\\[", "[")


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(_plain(text).split()).replace("|", "\\|")


def help_blocks(text: str | None) -> list[str]:
    """A command's help as Markdown blocks: prose paragraphs joined into one line each (their
    line breaks are only the source's wrapping), click's ``\\b`` paragraphs, paragraphs with
    indented lines (tables of values) and command lines (``harness ...``) kept verbatim as
    code blocks."""
    blocks: list[str] = []
    for paragraph in re.split(r"\n\s*\n", _plain(text or "").strip("\n")):
        lines = paragraph.splitlines()
        if not lines:
            continue
        verbatim = (lines[0].strip() == "\b" or any(line.startswith((" ", "\t")) for line in lines[1:])
                    or any(line.lstrip().startswith("harness ") for line in lines))
        if verbatim:
            body = [line for line in lines if line.strip() != "\b"]
            indent = min((len(line) - len(line.lstrip()) for line in body if line.strip()), default=0)
            blocks.append("```\n" + "\n".join(line[indent:].rstrip() for line in body) + "\n```")
        else:
            blocks.append(" ".join(line.strip() for line in lines))
    return blocks


def _choices(param) -> list[str]:
    """The values a parameter accepts, where it is a choice (click's ``Choice`` or an enum)."""
    choices = getattr(getattr(param, "type", None), "choices", None)
    if choices:
        return [c.value if isinstance(c, enum.Enum) else str(c) for c in choices]
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return []


def _value(param) -> str:
    """What an option takes: nothing for a flag, its choices, else its placeholder."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    choices = _choices(param)
    if choices:
        return " \\| ".join(f"`{c}`" for c in choices)
    return f"`{param.metavar}`" if param.metavar else ""


def _default(param) -> str:
    if getattr(param, "show_default", None) is False or getattr(param, "is_flag", False):
        return ""
    value = param.default
    if callable(value) or value is None or value == () or value == []:
        return ""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return f"`{value}`"


def _params_table(command) -> list[str]:
    rows = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if getattr(param, "param_type_name", "") == "argument":
            name = f"`{param.metavar or param.name.upper()}`"
            what = getattr(param, "help", None) or ("required" if param.required else "optional")
        else:
            name = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
            what = param.help or ""
        rows.append(f"| {name} | {_value(param)} | {_default(param)} | {_cell(what)} |")
    rows.append("| `-h`, `--help` |  |  | Show the help and exit. |")
    return ["| option | value | default | what |", "| --- | --- | --- | --- |", *rows]


def _usage(command, path: list[str]) -> str:
    import typer

    with typer.Context(command, info_name=" ".join(path)) as ctx:
        return " ".join(path + command.collect_usage_pieces(ctx))


def _render(command, path: list[str], out: list[str]) -> None:
    depth = min(len(path), 4)
    out.append(f"{'#' * depth} `{' '.join(path)}`\n")
    out.extend(block + "\n" for block in help_blocks(command.help))
    out.append(f"```\n{_usage(command, path)}\n```\n")
    out.append("\n".join(_params_table(command)) + "\n")
    subcommands = getattr(command, "commands", None) or {}
    if subcommands:
        out.append("Commands: " + ", ".join(f"`{name}`" for name in subcommands) + ".\n")
    for name, sub in subcommands.items():
        if not getattr(sub, "hidden", False):
            _render(sub, [*path, name], out)


def render() -> str:
    """The CLI reference of the built-in commands, as Markdown."""
    import typer

    from harness.cli.main import build_app
    from harness.cli.metavars import apply_readable_metavars
    from harness.app import Harness

    root = typer.main.get_command(build_app(Harness.load(load_entrypoints=False)))
    apply_readable_metavars(root)
    out = [HEADER]
    root_help = help_blocks(root.help)
    out.extend(block + "\n" for block in root_help)
    out.append("Every command: " + ", ".join(f"[`harness {name}`](#harness-{name})"
                                             for name in root.commands) + ".\n")
    for name, command in root.commands.items():
        _render(command, ["harness", name], out)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write ``docs/cli.md``; with ``--check``, exit 1 when the committed page is stale."""
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        stale = DOC_PATH.read_text(encoding="utf-8") != text
        if stale:
            print(f"{DOC_PATH} is stale: run `python -m harness.cli_docs`", file=sys.stderr)
        return 1 if stale else 0
    atomic_write_text(DOC_PATH, text)
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
