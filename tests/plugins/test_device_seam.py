"""The training scripts reach devices only through the vendor's device backend."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_no_script_is_special_to_cuda():
    """Device selection goes through the vendor's backend: no torch.cuda API in any script."""
    pattern = re.compile(r"torch\.cuda\.|\.cuda\(")
    hits = [f"{path.relative_to(REPO)}:{number}"
            for path in sorted((REPO / "plugins").glob("*/scripts/*.py"))
            for number, line in enumerate(path.read_text().splitlines(), start=1) if pattern.search(line)]
    assert hits == []
