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


def test_a_case_lists_only_the_frameworks_that_run_its_layout():
    from harness.app import Harness
    from harness.errors import UserInputError

    registry = Harness.load(load_entrypoints=False).registry
    tensor16 = registry.cases.get("MP_1x16x1_16_3072x16")
    assert tensor16.model_parallel == {"tensor": 16}
    # PyTorch trains data parallel only; Paddle's fleet runs tensor parallel, not pipeline
    assert registry.frameworks_for(tensor16) == ["megatron", "paddle"]
    assert registry.frameworks_left_out(tensor16) == {"pytorch": ["tensor"]}
    pipeline = registry.cases.get("DP_PP_1x1x4_512_1536x16")
    assert registry.frameworks_for(pipeline) == ["megatron"]
    assert registry.frameworks_left_out(pipeline) == {"paddle": ["pipeline"], "pytorch": ["pipeline"]}
    data = registry.cases.get("DP_2x1x1_4_1536x16")
    assert data.model_parallel == {} and registry.frameworks_left_out(data) == {}
    assert registry.default_framework(tensor16) == "megatron"
    with pytest.raises(UserInputError, match="asks for tensor parallel 16; framework 'pytorch' runs "
                                             "data parallel only. Frameworks that run it: megatron, paddle"):
        registry.check_case_framework(tensor16, "pytorch")
