"""Dataset folders appear whole: the staging folder and rename that every dataset kind uses."""

from __future__ import annotations

import pytest

from harness_cases.atomic_folder import ensure_folder


def test_written_once_then_reused(tmp_path):
    calls = []

    def write(folder):
        calls.append(folder)
        (folder / "a.bin").write_bytes(b"1")

    target = tmp_path / "kind" / "name"
    assert ensure_folder(target, ["a.bin"], write) == (target, ["a.bin"], True)
    assert ensure_folder(target, ["a.bin"], write) == (target, ["a.bin"], False)
    assert len(calls) == 1 and calls[0].parent == target.parent and calls[0].name.startswith(".name.")
    assert sorted(p.name for p in target.parent.iterdir()) == ["name"]  # no staging folder left


def test_a_failed_write_leaves_nothing(tmp_path):
    def write(folder):
        (folder / "a.bin").write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ensure_folder(tmp_path / "kind" / "name", ["a.bin"], write)
    assert list((tmp_path / "kind").iterdir()) == []


def test_a_folder_another_process_finished_first_is_kept(tmp_path):
    target = tmp_path / "kind" / "name"

    def write(folder):
        (folder / "a.bin").write_bytes(b"mine")
        target.mkdir()  # the other process renames its complete folder into place meanwhile
        (target / "a.bin").write_bytes(b"theirs")

    assert ensure_folder(target, ["a.bin"], write)[2] is True
    assert (target / "a.bin").read_bytes() == b"theirs"
    assert sorted(p.name for p in target.parent.iterdir()) == ["name"]
