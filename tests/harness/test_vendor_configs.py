"""Vendor per-case config files: picking the file, and refusing one that would be ignored."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.vendor_configs import find_vendor_config


def write(root, name, text, case="gpt3_125M", framework="pytorch"):
    folder = root / case / framework
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def test_layout_suffix_wins_over_default(tmp_path):
    write(tmp_path, "default", "[values]\nmicro_batch_size = 2\n")
    write(tmp_path, "config_A100x1x8", "[values]\nmicro_batch_size = 8\n")
    picked = find_vendor_config(tmp_path, "gpt3_125M", "pytorch", nnodes=1, nproc=8)
    assert picked.name == "config_A100x1x8" and picked.values == {"micro_batch_size": 8}
    assert find_vendor_config(tmp_path, "gpt3_125M", "pytorch", 1, 1).name == "default"


def test_an_empty_values_table_is_a_valid_config(tmp_path):
    write(tmp_path, "default", "[values]\n")
    assert find_vendor_config(tmp_path, "gpt3_125M", "pytorch", 1, 1).values == {}


@pytest.mark.parametrize("text, message", [
    ("", "has no \\[values\\] table"),
    ("[value]\nmicro_batch_size = 2\n", "unexpected top-level key\\(s\\) value;"),
    ("micro_batch_size = 2\n", "unexpected top-level key\\(s\\) micro_batch_size;"),
    ("values = 3\n", "has no \\[values\\] table"),
])
def test_a_file_without_a_values_table_is_an_error_naming_the_file_and_format(tmp_path, text, message):
    path = write(tmp_path, "default", text)
    with pytest.raises(HarnessError, match=message) as info:
        find_vendor_config(tmp_path, "gpt3_125M", "pytorch", 1, 1)
    text = str(info.value)
    assert str(path) in text and "expected a [values] table" in text and "\n" not in text


def test_a_binary_config_is_one_line_naming_the_file(tmp_path):
    path = write(tmp_path, "default", "")
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe[values]\n")
    with pytest.raises(HarnessError, match="is not UTF-8 text") as info:
        find_vendor_config(tmp_path, "gpt3_125M", "pytorch", 1, 1)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
