"""What framework plugins call from prepare_env: the run's framework_requirement and
wheelhouse reach the environment builder, and a run that cannot honour them says so."""

from __future__ import annotations

import sys

import pytest

from harness.envs import EnvSpec
from harness.envs.prepare import check_framework_requirement, isolated_env
from harness.errors import UnavailableError
from harness.models import ExecutionEnv
from tests.conftest import WHEELHOUSE_APP
from tests.plugins.conftest import plan_context

SPEC = EnvSpec(name="fw", requirements=("six==1.16.0",))


def _context(tmp_path, wheelhouse, requirement=None):
    context = plan_context(tmp_path, "gpt3_125M", "paddle")
    settings = context.config.settings.model_copy(update={"framework_requirement": requirement})
    return context.model_copy(update={
        "config": context.config.model_copy(update={"settings": settings}),
        "wheelhouse": wheelhouse})


def test_the_run_s_framework_requirement_replaces_the_framework_and_changes_the_key(
        tmp_path, wheelhouse, network_shut):
    default = isolated_env(_context(tmp_path, wheelhouse), SPEC)
    assert default.requirements == ["six==1.16.0"] and default.framework_version == "1.16.0"
    assert default.wheelhouse == str(wheelhouse) and default.isolated
    chosen = isolated_env(_context(tmp_path, wheelhouse, WHEELHOUSE_APP), SPEC)
    assert chosen.requirements == [WHEELHOUSE_APP]
    assert chosen.framework_version == "2.9.0.post0"  # looked up under the chosen distribution
    assert chosen.python != default.python  # another key, another environment
    assert SPEC.with_framework(WHEELHOUSE_APP).key() != SPEC.key()
    check_framework_requirement(_context(tmp_path, wheelhouse, WHEELHOUSE_APP), chosen)


def test_a_run_in_an_interpreter_harness_did_not_build_refuses_a_framework_requirement(tmp_path):
    context = _context(tmp_path, None, "paddlepaddle==3.0.0")
    current = ExecutionEnv(python=sys.executable, framework="paddle", description="current interpreter")
    with pytest.raises(UnavailableError) as info:
        check_framework_requirement(context, current)
    assert str(info.value) == (
        f"framework_requirement 'paddlepaddle==3.0.0' needs an isolated environment built from it, "
        f"but the paddle plugin runs in the current interpreter ({sys.executable}); install "
        "paddlepaddle==3.0.0 there and leave framework_requirement unset")
    check_framework_requirement(_context(tmp_path, None), current)  # nothing asked: nothing to refuse


def test_the_framework_is_the_spec_s_first_requirement():
    spec = EnvSpec(name="p", requirements=("PaddlePaddle_GPU==3.3.1", "h5py>=3"))
    assert spec.framework_distribution == "paddlepaddle-gpu"
    assert spec.with_framework("paddlepaddle-gpu==2.6.2").requirements == ("paddlepaddle-gpu==2.6.2", "h5py>=3")
