"""Registers the PyTorch ecosystem's log formats: DLLogger (NGC BERT and ResNet-50) and the
DeepSpeed engine's ThroughputTimer lines.

The Megatron-LM format, which the PyTorch and Megatron-core scripts both print, is a core
format (``harness.logformats.megatron``); these formats only read logs, so they live in a
plugin module of their own.
"""

from __future__ import annotations

from harness import hookimpl


@hookimpl
def register_log_formats(register) -> None:
    from harness_pytorch.deepspeed_log import DeepSpeedTimerFormat
    from harness_pytorch.dllogger_log import DLLoggerFormat, PyTorchDLEFormat

    register(DLLoggerFormat())
    register(PyTorchDLEFormat())
    register(DeepSpeedTimerFormat())
