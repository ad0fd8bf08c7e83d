"""``certify compare`` judges noise by the rule of ``harness compare``, not a copy of it."""

from __future__ import annotations

from harness.certify.compare import PointComparison
from harness.certify.record import PointSummary
from harness.report.pairing import beyond_noise


def _side(score: float | None, cv: float | None) -> PointSummary:
    return PointSummary(label="p", case="gpt3_125M", score=score, cv=cv)


def test_beyond_noise_is_the_harness_compare_rule():
    # |B/A - 1| against 2 x sqrt(CV_A^2 + CV_B^2): 5% > 2.8%, 1% < 2.8%, 10% > 4%, 1% < 4%.
    for (score_b, cv_a, cv_b, expected) in ((105.0, 0.01, 0.01, True), (101.0, 0.01, 0.01, False),
                                            (110.0, None, 0.02, True), (101.0, 0.02, None, False)):
        row = PointComparison("p", _side(100.0, cv_a), _side(score_b, cv_b))
        assert row.beyond_noise is beyond_noise(score_b / 100.0, cv_a, cv_b) is expected
    # A side without a noise estimate adds none; the other side's noise still decides.
    assert PointComparison("p", _side(100.0, None), _side(110.0, 0.02)).beyond_noise is True
    assert PointComparison("p", _side(100.0, None), _side(110.0, None)).beyond_noise is None
    assert PointComparison("p", _side(None, 0.01), _side(110.0, 0.01)).beyond_noise is None
