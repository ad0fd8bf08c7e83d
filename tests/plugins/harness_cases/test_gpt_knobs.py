"""The GPT knobs: typed once, with their defaults in one place that plugins and scripts share."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.errors import UserInputError
from harness_cases.gpt_cases import gpt3_cases
from harness_cases.gpt_knobs import GPT_CHOICES, GptKnobs
from harness_cases.shared_scripts.gpt_knobs import GPT_KNOB_DEFAULTS, with_knob_defaults

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"


def test_the_model_and_the_cases_take_the_one_set_of_defaults():
    assert GptKnobs().model_dump() == GPT_KNOB_DEFAULTS
    for case in gpt3_cases():
        assert {k: case.params[k] for k in GPT_KNOB_DEFAULTS} == GPT_KNOB_DEFAULTS
        assert case.choices == GPT_CHOICES
    assert GPT_CHOICES["offload"] == ("none", "cpu")
    assert GPT_CHOICES["recompute"] == ("none", "selective", "full")


def test_knobs_of_params_coerce_and_ignore_other_keys():
    knobs = GptKnobs.of({"sharding_stage": "2", "offload": "cpu", "num_layers": 24,
                         "tensor_parallel_degree": None})
    assert (knobs.sharding_stage, knobs.offload, knobs.tensor_parallel_degree) == (2, "cpu", 1)
    assert with_knob_defaults({"offload": "cpu"})["sharding_stage"] == 0


@pytest.mark.parametrize("params, message", [
    ({"offload": "gpu"}, "offload='gpu': Input should be 'none' or 'cpu'"),
    ({"sharding_stage": 4}, "sharding_stage=4: Input should be less than or equal to 3"),
])
def test_a_bad_knob_is_one_line(params, message):
    with pytest.raises(UserInputError) as info:
        GptKnobs.of(params)
    assert str(info.value) == message


def test_no_plugin_repeats_a_knobs_default():
    """A knob read with an inline default (``params.get("sharding_stage", 0)``) would be a second
    place for its default; plugins read GptKnobs, scripts with_knob_defaults."""
    knobs = "|".join(GPT_KNOB_DEFAULTS)
    pattern = re.compile(r"""\b(?:p|params|layout)\.get\(["'](%s)["'],""" % knobs)
    found = [f"{path.relative_to(PLUGINS)}:{number}"
             for path in PLUGINS.rglob("*.py")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert found == []
