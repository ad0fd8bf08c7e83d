"""Registry: which framework a run uses when none is named (one rule for run, sweep and certify),
with fixture frameworks of the built-in cases' model families."""

from __future__ import annotations

import pytest

from harness import hookimpl
from harness.errors import UnavailableError, UserInputError
from harness.models import CaseSpec, FrameworkSpec
from tests.harness.core_harness import FIXTURE_FRAMEWORK, core_harness, fixture_harness


def _gpt_case(name: str, **params: int) -> CaseSpec:
    return CaseSpec(name=name, model="gpt", dataset="gpt-npy", unit="tokens/s", mission_name="m",
                    direction_id=1, legacy_prefix=name, params=params)


class GptFrameworks:
    """GPT frameworks of each model-parallel layout, and GPT cases asking for each layout. One
    framework takes the name ``pytorch`` (the built-in's, blocked here) because the
    default-framework rule prefers that name."""

    @hookimpl
    def register_cases(self, register):
        register(_gpt_case("tensor16", tensor_parallel_degree=16))
        register(_gpt_case("pipeline4", pipeline_parallel_degree=4, tensor_parallel_degree=1))
        register(_gpt_case("data2"))

    @hookimpl
    def register_frameworks(self, register):
        gpt = frozenset({"gpt"})
        register(FrameworkSpec(name="zdataparallel", models=gpt, log_format="megatron"))
        register(FrameworkSpec(name="pytorch", models=gpt, log_format="megatron"))
        register(FrameworkSpec(name="tensoronly", models=gpt, log_format="megatron",
                               model_parallel=frozenset({"tensor"})))
        register(FrameworkSpec(name="everylayout", models=gpt, log_format="megatron",
                               model_parallel=frozenset({"tensor", "pipeline"})))


@pytest.fixture(scope="module")
def registry():
    return core_harness(GptFrameworks()).registry


def test_pytorch_is_the_default_where_it_implements_the_case(registry):
    case = registry.cases.get("gpt3_125M")
    assert registry.frameworks_for(case) == ["everylayout", "pytorch", "tensoronly", "zdataparallel"]
    assert registry.default_framework(case) == "pytorch"


def test_else_the_first_framework_by_name_is_the_default(gpt_harness):
    registry = fixture_harness(GptFrameworks()).registry
    tensor16 = registry.cases.get("tensor16")
    assert registry.default_framework(tensor16) == "everylayout"  # pytorch does not run it
    assert gpt_harness.registry.default_framework(gpt_harness.registry.cases.get("gpt3_125M")) == FIXTURE_FRAMEWORK


def test_a_case_no_framework_implements_is_unavailable_in_one_line(registry):
    orphan = registry.cases.get("gpt3_125M").model_copy(update={"name": "orphan", "model": "no-such-model"})
    assert isinstance(orphan, CaseSpec)
    with pytest.raises(UnavailableError, match="no installed framework plugin implements case 'orphan'"):
        registry.default_framework(orphan)


def test_a_case_lists_only_the_frameworks_that_run_its_layout(registry):
    tensor16 = registry.cases.get("tensor16")
    assert tensor16.model_parallel == {"tensor": 16}
    assert registry.frameworks_for(tensor16) == ["everylayout", "tensoronly"]
    assert registry.frameworks_left_out(tensor16) == {"pytorch": ["tensor"], "zdataparallel": ["tensor"]}
    pipeline = registry.cases.get("pipeline4")
    assert registry.frameworks_for(pipeline) == ["everylayout"]
    assert registry.frameworks_left_out(pipeline) == {
        "pytorch": ["pipeline"], "tensoronly": ["pipeline"], "zdataparallel": ["pipeline"]}
    data = registry.cases.get("data2")
    assert data.model_parallel == {} and registry.frameworks_left_out(data) == {}
    assert registry.default_framework(tensor16) == "everylayout"
    with pytest.raises(UserInputError, match="asks for tensor parallel 16; framework 'pytorch' runs "
                                             "data parallel only. Frameworks that run it: everylayout, "
                                             "tensoronly"):
        registry.check_case_framework(tensor16, "pytorch")
    with pytest.raises(UserInputError, match="asks for pipeline parallel 4; framework 'tensoronly' "
                                             "runs tensor parallel besides data parallel"):
        registry.check_case_framework(pipeline, "tensoronly")
