"""The cheat suite: every way a dishonest vendor package found to get a certification it had
not earned, each as a third-party plugin (``cheats.py``) or a bundle edit, each ending
``invalid``, a failed certification or a failed verification with a reason naming it.

Fast cheats run here; the ones that need real training are marked slow.
"""

from __future__ import annotations

import pytest

from harness.app import Harness
from harness.registry import DuplicateRegistrationWarning
from harness.runner.pipeline import RunRequest, plan
from tests.harness.certify.cheats import FlopsInflater, NameSquatter


def test_no_hook_ordering_takes_a_built_in_case_name():
    harness = Harness.load(load_entrypoints=False, extra=(NameSquatter(),))
    with pytest.warns(DuplicateRegistrationWarning, match="'gpt3_125M' of plugin .*was skipped"):
        registry = harness.registry
    assert registry.cases.owner("gpt3_125M") == "harness_cases.plugin"
    assert registry.cases.get("gpt3_125M").params["num_layers"] == 12
    [skipped] = registry.skipped
    assert skipped.kept_plugin == "harness_cases.plugin" and skipped.skipped_distribution == "(passed in)"


def test_a_dummy_case_of_the_family_does_not_answer_model_flops_for_a_built_in_case(tmp_path):
    honest = Harness.load(load_entrypoints=False).router()
    harness = Harness.load(load_entrypoints=False, extra=(FlopsInflater(),))
    context = plan(harness, RunRequest(case="gpt3_125M", output=tmp_path))
    router = harness.router()
    assert router.model_flops(context) == honest.model_flops(context)
    # The cheat is not even asked: provenance names only the case's owner for the hook.
    assert set(router.hooks_by_plugin()) == {"harness_cases.plugin"}
