"""Registers the log formats the core owns (see ``harness/logformats``)."""

from __future__ import annotations

from harness import hookimpl


@hookimpl
def register_log_formats(register) -> None:
    from harness.logformats.flagperf import FlagPerfFormat
    from harness.logformats.keras import KerasTimeHistoryFormat
    from harness.logformats.keyword import KeywordFormat
    from harness.logformats.megatron import MegatronFormat
    from harness.logformats.mllog import MLLogFormat
    from harness.logformats.ngc_tensorflow import TFBertFormat, TFResNetFormat

    register(FlagPerfFormat())
    register(MLLogFormat())
    register(TFBertFormat())
    register(TFResNetFormat())
    register(KerasTimeHistoryFormat())
    register(KeywordFormat())
    register(MegatronFormat())
