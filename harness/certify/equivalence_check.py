"""The certification's ``equivalence`` check: the vendor's framework build trains a stored
reference initial state to the reference loss curve within the tolerances of
``harness equivalence`` (``[suite.equivalence]``).

``certify run`` runs the check into the certification folder (``equivalence/``); the verdict
is judged again from the files there alone (the reference's trace and final state are copied
in), as every other check is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.certify.checks import Check, failed, passed
from harness.equivalence.check import compare_traces, load_state
from harness.equivalence.result import CHECKS_FOLDER, RESULT_FILE, read_result
from harness.equivalence.runner import (FINAL_STATE, INITIAL_STATE, REFERENCE, TRACE,
                                        EquivalenceRequest, run_equivalence)
from harness.equivalence.trace import read_trace
from harness.errors import HarnessError, UserInputError
from harness.results_io import atomic_write_text

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.certify.suite import EquivalenceRequirement, Suite
    from harness.registry import Registry

#: Why the check could not run (written by ``run_requirement``, read by ``check``).
NOT_RUN = "not_run.txt"


def request_for(suite: Suite, registry: Registry, vendor: str, framework: str | None,
                folder: Path, cache_dir: Path | None) -> EquivalenceRequest | None:
    """The equivalence run a suite requires (None when it requires none); a reference that
    is not there is refused before anything runs."""
    requirement: EquivalenceRequirement | None = suite.spec.suite.equivalence
    if requirement is None:
        return None
    reference = Path(requirement.reference)
    if not reference.is_absolute() and suite.folder is not None:
        reference = suite.folder / reference
    if not (reference / INITIAL_STATE).is_file():
        raise UserInputError(f"the suite's equivalence reference {reference} holds no "
                             f"{INITIAL_STATE} (record one with `harness equivalence`)")
    case = registry.cases.get(requirement.case)
    name = framework or suite.spec.suite.framework or registry.default_framework(case)
    return EquivalenceRequest(case=case.name, frameworks=[name], steps=requirement.steps,
                              vendor=vendor, scale=requirement.scale, output=folder,
                              cache_dir=cache_dir, reference_dir=reference,
                              reference_framework=requirement.reference_framework)


def run_requirement(harness: Harness, request: EquivalenceRequest, folder: Path) -> None:
    try:
        run_equivalence(harness, request)
    except HarnessError as exc:
        atomic_write_text(folder / CHECKS_FOLDER / NOT_RUN, f"{exc}\n")


def check(root: Path, requirement: EquivalenceRequirement) -> Check:
    """Judge the check stored under ``root/equivalence`` again from its files."""
    checks_dir = root / CHECKS_FOLDER
    if (checks_dir / NOT_RUN).is_file():
        return failed("equivalence", f"not run: {(checks_dir / NOT_RUN).read_text().strip()}")
    found = sorted((checks_dir / requirement.case).glob(f"*/{RESULT_FILE}"))
    if not found:
        return failed("equivalence", f"the suite requires an equivalence check of "
                                     f"{requirement.case}; the folder holds none")
    folder = found[-1].parent
    try:
        result = read_result(found[-1])
        reference = read_trace(folder / REFERENCE / TRACE)
        initial = load_state(folder / INITIAL_STATE)
        reference_final = load_state(folder / REFERENCE / FINAL_STATE)
    except (UserInputError, OSError, ValueError) as exc:
        return failed("equivalence", f"unreadable check in {folder.relative_to(root)}: {exc}")
    problems, differences = [], []
    for run in result.runs:
        trace_path = folder / run.framework / TRACE
        if not trace_path.is_file():
            problems.append(f"{run.framework} left no trace ({run.error or run.status})")
            continue
        verdict = compare_traces(reference, read_trace(trace_path),
                                 (initial, reference_final,
                                  load_state(folder / run.framework / FINAL_STATE)))
        problems += [f"{run.framework}: {p}" for p in verdict.problems]
        if verdict.max_loss_difference is not None:
            differences.append(verdict.max_loss_difference)
    described = (f"{', '.join(r.framework for r in result.runs)} trained the {requirement.case} "
                 f"reference state ({reference.framework} {reference.framework_version}) "
                 f"{len(reference.losses)} steps")
    if problems:
        return failed("equivalence", f"{described}: {'; '.join(problems)}")
    return passed("equivalence", f"{described} within the fp32-rounding tolerances: max loss "
                                 f"difference {max(differences, default=0.0):.2e}")
