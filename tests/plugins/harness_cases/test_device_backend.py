"""The device backend the training scripts of every framework read from the resolved config."""

from __future__ import annotations

import json
import sys

import pytest

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR


@pytest.fixture
def read_device_backend(monkeypatch):
    monkeypatch.syspath_prepend(str(SHARED_SCRIPTS_DIR))  # as each framework's launch sets it
    from device_backend import read_device_backend

    yield read_device_backend
    sys.modules.pop("device_backend", None)


def _config(tmp_path, **extra) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"settings": {}, "params": {}, **extra}), encoding="utf-8")
    return str(path)


def test_returns_the_backend_harness_wrote(read_device_backend, tmp_path):
    backend = {"device_type": "gpu", "addressed_by_local_rank": True,
               "frameworks": {"torch": {"device_type": "cuda"}, "paddle": {"device_type": "gpu"}}}
    assert read_device_backend(_config(tmp_path, device=backend)) == backend


@pytest.mark.parametrize("extra", [{}, {"device": None}, {"device": {}}])
def test_a_config_without_a_backend_exits_2_with_one_line(read_device_backend, tmp_path, capsys, extra):
    with pytest.raises(SystemExit) as exited:
        read_device_backend(_config(tmp_path, **extra))
    assert exited.value.code == 2
    assert capsys.readouterr().out == (
        "error: the resolved config names no device backend (the vendor declares none)\n")
