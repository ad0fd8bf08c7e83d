"""DLLogger-style stdout lines, as NVIDIA's NGC examples print them (no dllogger package needed)."""

from __future__ import annotations

from datetime import datetime


def dll(step: str, fields: list[tuple[str, object, str | None]]) -> None:
    """``DLL <date time> - <step> key : value [unit]  key : value ...``"""
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    body = " ".join(f"{key} : {value}" + (f" {unit}" if unit else "") for key, value, unit in fields)
    print(f"DLL {stamp} - {step} {body}", flush=True)
