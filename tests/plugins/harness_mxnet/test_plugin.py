"""The MXNet plugin says what it cannot run before a sweep runs it."""

from __future__ import annotations

import pytest


def test_unsupported_reasons(unsupported_reasons):
    def reasons(**fields):
        return unsupported_reasons("mobilenet_v1", "mxnet", **fields)

    assert reasons() == []
    assert any("bf16" in r for r in reasons(precision="bf16"))
    from harness.errors import UnavailableError

    # The cpu vendor's device backend declares no fp16: refused when the run is planned.
    with pytest.raises(UnavailableError, match="vendor 'cpu' has no fp16"):
        reasons(precision="fp16")
