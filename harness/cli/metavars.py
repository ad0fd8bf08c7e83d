"""Readable placeholders in ``--help``: ``--case CASE``, ``--nproc N``, ``RUN_ID``.

Typer's defaults show a value's Python type (``<str>``, ``<list[str]>``, ``{run_id}``), which
says little. The root group gives every parameter that has no explicit metavar one derived
from its name and type before the command line is parsed, so plugin commands get them too.
"""

from __future__ import annotations

from typer.core import TyperGroup

#: Placeholders by option name where the name alone does not say what a value looks like.
BY_NAME = {
    "set": "KEY=VALUE",
    "frameworks": "A,B",
    "fail_if_slower": "PCT",
    "noise_threshold": "PCT",
    "since": "DATE",
    "keyword": "TEXT",
}


def _kind(param) -> tuple[str, bool]:
    """(type name, takes choices) of ``param``. Typer's bundled click describes a parameter's
    type with a ``type_descriptor``, click with ``param.type``: both are recognised by shape,
    like click's exceptions in ``main.py``."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        bare = getattr(param, "bare_type", None)
        return (str(bare()) if callable(bare) else "").lower(), bool(getattr(descriptor, "is_choice", False))
    kind = getattr(param, "type", None)
    if getattr(kind, "choices", None):
        return "choice", True
    return type(kind).__name__.lower() if kind is not None else "", False


def readable_metavar(param) -> str | None:
    """The placeholder for ``param``: "" for a flag (it takes no value), None where the one it
    has is best (the list of choices)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    text, choices = _kind(param)
    if choices:
        return None
    name = (param.name or "value").rstrip("_").lower()
    if name in BY_NAME:
        return BY_NAME[name]
    if "path" in text:
        return "DIR" if name in ("output", "data_dir", "wheelhouse") or name.endswith("_dir") else "PATH"
    if "int" in text:
        return "N"
    if "float" in text:
        return "NUMBER"
    return name.upper()


def _plain_argument(argument) -> None:
    """An argument shows its name alone: ``RUN_ID`` in the usage line (``[RUN_ID]`` when
    optional) and no ``<str>`` type beside it in the panel (typer 0.2x shows ``{RUN_ID}``)."""
    name = argument.metavar or (argument.name or "value").upper()
    argument.metavar = name
    shown = name if argument.required else f"[{name}]"
    if argument.nargs != 1:
        shown += "..."
    argument._usage_display_name = lambda: shown
    argument.display_type_rich = lambda ctx: None


def _plain_help_option(command) -> None:
    """``--help`` is a flag: no ``<bool>`` placeholder beside it."""
    make = getattr(command, "get_help_option", None)
    if make is None or getattr(make, "_readable", False):
        return

    def get_help_option(ctx):
        option = make(ctx)
        if option is not None and getattr(option, "metavar", "") is None and hasattr(option, "type_descriptor"):
            option.metavar = ""
        return option

    get_help_option._readable = True
    command.get_help_option = get_help_option


def apply_readable_metavars(command) -> None:
    """Give every parameter of ``command`` and its subcommands a readable metavar."""
    _plain_help_option(command)
    for param in getattr(command, "params", []):
        if getattr(param, "param_type_name", "") == "argument" and hasattr(param, "type_descriptor"):
            _plain_argument(param)
            continue
        if getattr(param, "metavar", "") is None:
            metavar = readable_metavar(param)
            if metavar is not None and not (metavar == "" and not hasattr(param, "type_descriptor")):
                param.metavar = metavar
    for sub in (getattr(command, "commands", None) or {}).values():
        apply_readable_metavars(sub)


class ReadableGroup(TyperGroup):
    """The root command group: readable placeholders everywhere before any parsing."""

    def main(self, *args, **kwargs):
        apply_readable_metavars(self)
        return super().main(*args, **kwargs)
