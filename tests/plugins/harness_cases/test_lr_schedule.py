"""The cases' learning-rate schedule that every framework's training script imports."""

from __future__ import annotations

import sys

import pytest

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

sys.path.insert(0, str(SHARED_SCRIPTS_DIR))
from lr_schedule import lr_at  # noqa: E402


def test_linear_warmup_reaches_the_peak():
    assert [lr_at(step, 1.0, 4, 20) for step in range(1, 5)] == [0.25, 0.5, 0.75, 1.0]


def test_cosine_decay_reaches_the_floor_and_stays_there():
    assert lr_at(12, 1.0, 4, 20, floor=0.1) == pytest.approx(0.55)  # half-way: the mean
    assert lr_at(20, 1.0, 4, 20, floor=0.1) == pytest.approx(0.1)
    assert lr_at(35, 1.0, 4, 20, floor=0.1) == pytest.approx(0.1)


def test_without_floor_it_decays_to_zero_and_without_warmup_it_starts_at_the_peak():
    assert lr_at(0, 2.0, 0, 10) == pytest.approx(2.0)
    assert lr_at(10, 2.0, 0, 10) == pytest.approx(0.0)
