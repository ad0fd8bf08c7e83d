"""The certification's equivalence check, judged from the files of a check folder."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from harness.certify import equivalence_check
from harness.certify.suite import EquivalenceRequirement, Suite, parse_suite_text
from harness.equivalence.result import EquivalenceResult, FrameworkRun
from harness.errors import UserInputError
from tests.harness.equivalence.traces import states, trace


def _save(path: Path, arrays: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)


def _check_folder(root: Path, candidate_losses=(4.0, 3.5, 3.0)) -> Path:
    """A certification folder's equivalence/ as `certify run` leaves it."""
    folder = root / "equivalence" / "gpt3_125M" / "20261127-000000-abcd"
    initial, a, b = states()
    _save(folder / "initial_state.npz", initial)
    (folder / "reference").mkdir(parents=True)
    (folder / "reference" / "trace.json").write_text(trace("pytorch").model_dump_json())
    _save(folder / "reference" / "final_state.npz", a)
    (folder / "paddle").mkdir()
    (folder / "paddle" / "trace.json").write_text(trace("paddle", losses=candidate_losses).model_dump_json())
    _save(folder / "paddle" / "final_state.npz", b)
    EquivalenceResult(case="gpt3_125M", model="gpt", frameworks=["paddle"], reference="pytorch",
                      reference_dir="ref", steps=3, vendor="cpu", scale="smoke",
                      checked_at=datetime(2026, 11, 27, tzinfo=timezone.utc),
                      runs=[FrameworkRun(framework="paddle", status="success")], pairs=[],
                      config_differences=[], intentional=[]).write(folder)
    return folder


REQUIREMENT = EquivalenceRequirement(case="gpt3_125M", reference="ref")


def test_a_build_on_the_reference_curve_passes(tmp_path):
    _check_folder(tmp_path)
    verdict = equivalence_check.check(tmp_path, REQUIREMENT)
    assert verdict.passed and verdict.name == "equivalence"
    assert "paddle trained the gpt3_125M reference state (pytorch 1.0) 3 steps" in verdict.reason


def test_a_build_off_the_curve_fails_naming_the_steps(tmp_path):
    _check_folder(tmp_path, candidate_losses=(4.0, 3.5, 3.01))  # numerics swapped behind a label
    verdict = equivalence_check.check(tmp_path, REQUIREMENT)
    assert not verdict.passed and "paddle: loss beyond tolerance at steps 3" in verdict.reason


def test_a_missing_or_unrun_check_fails(tmp_path):
    assert "holds none" in equivalence_check.check(tmp_path, REQUIREMENT).reason
    (tmp_path / "equivalence").mkdir()
    (tmp_path / "equivalence" / "not_run.txt").write_text("framework 'x' is unknown\n")
    verdict = equivalence_check.check(tmp_path, REQUIREMENT)
    assert not verdict.passed and verdict.reason == "not run: framework 'x' is unknown"


def test_the_suite_option_resolves_its_reference_next_to_the_suite(tmp_path, registry):
    text = ('[suite]\nname = "eq"\nkind = "smoke"\nscale = "smoke"\nrepeats = 3\ncv_bound = 0.5\n'
            'checkpoints = [4]\n[suite.equivalence]\ncase = "gpt3_125M"\nreference = "ref"\n'
            '[[point]]\ncase = "gpt3_125M"\n')
    suite = Suite(spec=parse_suite_text(text, "eq.toml"), text=text, source="eq.toml", folder=tmp_path)
    with pytest.raises(UserInputError, match="holds no initial_state.npz"):
        equivalence_check.request_for(suite, registry, "cpu", None, tmp_path / "cert", None)
    _save(tmp_path / "ref" / "initial_state.npz", states()[0])
    request = equivalence_check.request_for(suite, registry, "cpu", None, tmp_path / "cert", None)
    assert request.reference_dir == tmp_path / "ref" and request.frameworks == ["pytorch"]
    assert request.output == tmp_path / "cert" and request.steps is None
