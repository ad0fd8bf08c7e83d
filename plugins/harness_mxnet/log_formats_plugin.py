"""Registers the MXNet ecosystem log formats (gluon-cv Speedometer, NGC MXNet ResNet).

Kept apart from the MXNet framework plugin so that ``harness parse`` reads MXNet logs
whether or not MXNet itself is installed.
"""

from __future__ import annotations

from harness import hookimpl


@hookimpl
def register_log_formats(register) -> None:
    from harness_mxnet.mxnet_log import GluonCVFormat, MXNetDLEFormat

    register(GluonCVFormat())
    register(MXNetDLEFormat())
