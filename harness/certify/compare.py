"""``certify compare``: two certification bundles side by side, per suite point.

Scores are recomputed from each bundle (as ``verify`` does); whether a difference is beyond
the repeats' noise (CV) is the rule of ``harness compare`` (``harness.report.pairing.beyond_noise``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.certify import bundle, signing
from harness.certify.evaluate import evaluate
from harness.certify.record import Certification, PointSummary
from harness.report.pairing import beyond_noise

if TYPE_CHECKING:
    from harness.registry import Registry


@dataclass
class BundleSide:
    path: Path
    certification: Certification
    summaries: dict[str, PointSummary]
    integrity: str


@dataclass
class PointComparison:
    label: str
    a: PointSummary | None
    b: PointSummary | None

    @property
    def ratio(self) -> float | None:
        if self.a and self.b and self.a.score and self.b.score:
            return self.b.score / self.a.score
        return None

    @property
    def beyond_noise(self) -> bool | None:
        ratio = self.ratio
        return None if ratio is None else beyond_noise(ratio, self.a.cv, self.b.cv)


def load_side(path: Path, registry: Registry) -> BundleSide:
    with bundle.temporary_folder() as tmp:
        folder = bundle.extract_bundle(path, Path(tmp))
        integrity = bundle.check_integrity(folder, signing.trusted_keys(None, None))
        cert = Certification.model_validate_json((folder / "certification.json").read_text(encoding="utf-8"))
        evaluation = evaluate(folder, registry)
    return BundleSide(path=path, certification=cert,
                      summaries={s.label: s for s in evaluation.summaries},
                      integrity=integrity.describe())


def compare_bundles(a: BundleSide, b: BundleSide) -> list[PointComparison]:
    labels = list(a.summaries) + [label for label in b.summaries if label not in a.summaries]
    return [PointComparison(label, a.summaries.get(label), b.summaries.get(label)) for label in labels]
