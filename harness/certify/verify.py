"""``certify verify``: recompute a bundle's verdict from its contents, trusting nothing.

Integrity first (every file's sha256 against the manifest, the Ed25519 signature over the
manifest and whether a trusted key made it), then the same evaluation ``certify run`` made,
from the bundle's logs and the verifier's own harness (parsers, case catalog, built-in suites,
reference bands), then the claims in certification.json against the recomputed ones.
The outcome is one of the ``EXIT_*`` codes below (``docs/certify.md`` lists them): the worst
of tampering, a failed check, no signature or an unknown signer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from harness.certify import bundle, signing
from harness.certify.checks import Check
from harness.certify.evaluate import evaluate, same_figure
from harness.certify.record import Certification, PointSummary, verdict_lines
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.registry import Registry

#: Intact, signed by a trusted key, every check holds.
EXIT_VERIFIED = 0
#: Intact, but a recomputed check fails (e.g. noise, convergence, read-back, rules).
EXIT_CHECK_FAILED = 1
#: Not a bundle, an unreadable key or trust file (bad input).
EXIT_BAD_INPUT = 2
#: Tampered: a file differs from the manifest, the signature does not verify, or a figure or
#: claim differs from what its logs recompute to.
EXIT_TAMPERED = 3
#: Every check holds, but the bundle is unsigned: nothing vouches for it.
EXIT_UNSIGNED = 4
#: Every check holds, but the signing key is neither ``--pubkey`` nor in the trust file.
EXIT_UNKNOWN_KEY = 5

#: Checks judged against the verifier's own data, with what may have changed since the bundle
#: was made: the committed reference bands (BERT's GPU bands, re-recorded from 10 seeds instead
#: of 5, passed repeats a 5-seed band had failed) and the case catalog's locked values
#: (MobileNetV1's learning rate went from 0.1 to 0.025 after a bundle was certified at 0.1).
#: A claim that differs there is a note, not tampering; the recomputed check still decides the
#: verdict, so such a bundle fails verification (exit 1) under the changed harness.
JUDGED_BY_VERIFIER_DATA = {
    "convergence": "this harness's reference band (recorded again since the bundle was made?)",
    "rules": "this harness's case catalog (a locked value changed since the bundle was made?)",
}


@dataclass
class VerifyOutcome:
    integrity: bundle.IntegrityReport
    checks: list[Check] = field(default_factory=list)
    summaries: list[PointSummary] = field(default_factory=list)
    claim_mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    certification: Certification | None = None

    @property
    def tampered(self) -> bool:
        return (not self.integrity.ok or bool(self.claim_mismatches) or bool(self.problems)
                or any(c.name == "integrity" and not c.passed for c in self.checks))

    @property
    def ok(self) -> bool:
        """Intact and every check holds (whoever signed it)."""
        return not self.tampered and bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        if self.tampered:
            return EXIT_TAMPERED
        if not self.ok:
            return EXIT_CHECK_FAILED
        if not self.integrity.signed:
            return EXIT_UNSIGNED
        return EXIT_VERIFIED if self.integrity.trusted else EXIT_UNKNOWN_KEY

    def verdict(self) -> str:
        """The last line ``certify verify`` prints: what the exit code means."""
        return {
            EXIT_TAMPERED: "verification FAILED: the bundle was tampered with",
            EXIT_CHECK_FAILED: "verification FAILED: a check fails",
            EXIT_UNSIGNED: "NOT VERIFIED: every check holds, but the bundle is unsigned",
            EXIT_UNKNOWN_KEY: "NOT VERIFIED: every check holds, but it is signed by an unknown key",
            EXIT_VERIFIED: f"verified: every check holds, signed by the trusted key {self.integrity.trusted_as}",
        }[self.exit_code]

    def lines(self) -> list[str]:
        out = [f"integrity: {self.integrity.describe()}"]
        out += verdict_lines(self.checks, self.summaries, recomputed=True)
        out += [f"claim: {m}" for m in self.claim_mismatches]
        out += [f"note: {n}" for n in self.notes]
        out += [f"problem: {p}" for p in self.problems]
        if self.certification and self.certification.deviations:
            out.append("deviations: " + "; ".join(self.certification.deviations))
        return out


def verify_bundle(path: Path, registry: Registry, pubkey: Path | None = None,
                  trust_file: Path | None = None) -> VerifyOutcome:
    """``trust_file``: the trusted keys; None reads the default trust file where it exists."""
    trusted = signing.trusted_keys(pubkey, trust_file)
    with bundle.temporary_folder() as tmp:
        folder = bundle.extract_bundle(path, Path(tmp))
        outcome = VerifyOutcome(integrity=bundle.check_integrity(folder, trusted))
        try:
            claimed = Certification.model_validate_json((folder / "certification.json").read_text(encoding="utf-8"))
        except (ValidationError, ValueError, OSError) as exc:
            outcome.problems.append(f"certification.json: unreadable ({type(exc).__name__})")
            return outcome
        outcome.certification = claimed
        try:
            evaluation = evaluate(folder, registry)
        except (HarnessError, ValidationError, ValueError, OSError) as exc:
            outcome.problems.append(f"cannot re-evaluate the bundle: {str(exc).splitlines()[0]}")
            return outcome
        outcome.checks = evaluation.checks
        outcome.summaries = evaluation.summaries
        outcome.claim_mismatches, outcome.notes = _compare_claims(claimed, evaluation)
        return outcome


def _compare_claims(claimed: Certification, evaluation) -> tuple[list[str], list[str]]:
    """(claims that differ from the recomputation: tampering; notes on checks judged against
    the verifier's own reference bands, whose claims may differ honestly)."""
    out, notes = [], []
    # The claimed verdict must follow from the claimed checks; the verdict that counts is the
    # recomputed one (exit code), so a check the verifier judges differently is not hidden.
    if claimed.passed != all(c.passed for c in claimed.checks):
        out.append(f"certification.json: claims {'pass' if claimed.passed else 'fail'}, "
                   f"its own checks say {'fail' if claimed.passed else 'pass'}")
    theirs = {(c.name, c.point): c.passed for c in claimed.checks}
    # A check harness added after the bundle was made (e.g. health) is not in its claim: it
    # still decides the recomputed verdict, but its absence is no altered claim.
    claimed_names = {name for name, _ in theirs}
    mine = {(c.name, c.point): c.passed for c in evaluation.checks if c.name in claimed_names}
    for key in sorted(set(mine) | set(theirs), key=str):
        if mine.get(key) != theirs.get(key):
            line = (f"certification.json: check {key[0]} [{key[1] or 'all'}] claimed "
                    f"{theirs.get(key)}, recomputed {mine.get(key)}")
            if key[0] in JUDGED_BY_VERIFIER_DATA and key in mine and key in theirs:
                notes.append(f"{line} against {JUDGED_BY_VERIFIER_DATA[key[0]]}")
            else:
                out.append(line)
    recomputed = {s.label: s for s in evaluation.summaries}
    for summary in claimed.summaries:
        mine_s = recomputed.get(summary.label)
        if mine_s is None:
            out.append(f"certification.json: point {summary.label} is not in the plan")
            continue
        for name in ("score", "cv", "mfu", "peak_memory_bytes", "energy_per_unit_j"):
            a, b = getattr(summary, name), getattr(mine_s, name)
            if not same_figure(a, b):
                out.append(f"certification.json: {summary.label} {name} claimed {a}, recomputed {b}")
    return out, notes
