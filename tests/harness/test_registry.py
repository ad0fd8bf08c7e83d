"""Registry: which framework a run uses when none is named (one rule for run, sweep and certify)."""

from __future__ import annotations

import pytest

from harness.errors import UnavailableError
from harness.models import CaseSpec
from harness.app import Harness


@pytest.fixture(scope="module")
def registry():
    return Harness.load().registry


def test_pytorch_is_the_default_where_it_implements_the_case(registry):
    case = registry.cases.get("gpt3_125M")
    assert len(registry.frameworks_for(case)) > 1
    assert registry.default_framework(case) == "pytorch"


def test_a_case_no_framework_implements_is_unavailable_in_one_line(registry):
    orphan = registry.cases.get("gpt3_125M").model_copy(update={"name": "orphan", "model": "no-such-model"})
    assert isinstance(orphan, CaseSpec)
    with pytest.raises(UnavailableError, match="no installed framework plugin implements case 'orphan'"):
        registry.default_framework(orphan)
