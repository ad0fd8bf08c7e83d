"""Generate ``schemas/*.json`` from the pydantic models: ``python -m harness.schema_export``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.models import BenchmarkResult, LegacyIndex, ResolvedConfig

SCHEMAS = {
    "result.schema.json": BenchmarkResult,
    "legacy_index.schema.json": LegacyIndex,
    "config.schema.json": ResolvedConfig,
}


def render() -> dict[str, str]:
    """File name -> JSON Schema text, deterministic."""
    return {name: json.dumps(model.model_json_schema(mode="serialization"), indent=2, sort_keys=True) + "\n"
            for name, model in SCHEMAS.items()}


def main(argv: list[str] | None = None) -> int:
    target = Path(argv[0] if argv else "schemas")
    target.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (target / name).write_text(text, encoding="utf-8")
        print(f"wrote {target / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
