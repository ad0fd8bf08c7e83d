"""FlagPerf-style case strings: ``model:framework_version:hardware_config:nnodes:nproc:repeat``."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UserInputError

FORMAT = "model:framework_version:hardware_config:nnodes:nproc:repeat"


@dataclass(frozen=True)
class CaseString:
    case: str
    framework: str | None
    framework_version: str | None
    hardware: str | None
    nnodes: int | None
    nproc: int | None
    repeat: int | None


def parse_case_string(text: str) -> CaseString:
    """Parse ``gpt3_6.7B:paddle_2.5.1:A100:1:8:1``; a plain case name passes through."""
    if ":" not in text:
        return CaseString(text, None, None, None, None, None, None)
    parts = text.split(":")
    if len(parts) != 6:
        raise UserInputError(
            f"case string {text!r} has {len(parts)} fields; expected 6: {FORMAT}"
        )
    case, fw_version, hardware, nnodes, nproc, repeat = parts
    framework, _, version = fw_version.partition("_")
    numbers = {}
    for label, value in (("nnodes", nnodes), ("nproc", nproc), ("repeat", repeat)):
        if not value.isdigit() or int(value) < 1:
            raise UserInputError(
                f"case string {text!r}: {label} must be a positive integer, got {value!r} ({FORMAT})"
            )
        numbers[label] = int(value)
    return CaseString(
        case=case,
        framework=framework or None,
        framework_version=version or None,
        hardware=hardware or None,
        **numbers,
    )
