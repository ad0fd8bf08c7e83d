"""Pydantic models that cross every boundary of the harness (plugins, files, database)."""

from harness.models.case import CaseSpec, FrameworkSpec, VendorSpec
from harness.models.config import Precision, ResolvedConfig, RunSettings
from harness.models.device import DeviceInfo, DeviceSet
from harness.models.efficiency import Efficiency, FlopsEstimate, MatmulRate
from harness.models.launch import DatasetInfo, ExecutionEnv, LaunchSpec, ProcessOutcome
from harness.models.logs import ParsedLog, StepRecord
from harness.models.result import BenchmarkResult, LegacyIndex, StepTimeStats, Throughput

__all__ = [
    "BenchmarkResult",
    "CaseSpec",
    "DatasetInfo",
    "DeviceInfo",
    "DeviceSet",
    "Efficiency",
    "ExecutionEnv",
    "FlopsEstimate",
    "MatmulRate",
    "FrameworkSpec",
    "LaunchSpec",
    "LegacyIndex",
    "ParsedLog",
    "Precision",
    "ProcessOutcome",
    "ResolvedConfig",
    "RunSettings",
    "StepRecord",
    "StepTimeStats",
    "Throughput",
    "VendorSpec",
]
