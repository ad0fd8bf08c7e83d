"""The core reads a launch's log with the LogFormat the launch declares; a framework's
``parse_log`` overrides it; ``harness run`` and ``harness parse`` build the same result."""

from __future__ import annotations

import sys

import pytest

from harness import hookimpl
from harness.ingest import ParseRequest, parse_log_file
from harness.models import (
    CaseSpec, DatasetInfo, DeviceInfo, DeviceSet, ExecutionEnv, FrameworkSpec, LaunchSpec,
    ParsedLog, StepRecord, VendorSpec,
)
from harness.runner.pipeline import RunRequest, run_benchmark
from harness.logformats.megatron import MegatronFormat
from tests.harness.core_harness import core_harness

CASE = CaseSpec(
    name="lines", model="lines-model", dataset="lines-data", unit="samples/s", mission_name="m",
    direction_id=1, legacy_prefix="t", settings={"max_steps": 4, "skip_steps": 1}, params={},
)
# Megatron iteration lines: 8 samples a step in 100, 200, 100, 50 ms.
STEP_MS = (100.0, 200.0, 100.0, 50.0)


class LinesFramework:
    """A framework whose launch prints Megatron lines and declares ``log_format``."""

    def __init__(self, log_format: str):
        self.log_format = log_format

    @hookimpl
    def register_cases(self, register):
        register(CASE)

    @hookimpl
    def register_frameworks(self, register):
        register(FrameworkSpec(name="linesfw", models=frozenset({"lines-model"}),
                               log_format=self.log_format))

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="linesvendor", device_kind="cpu"))

    @hookimpl
    def register_log_formats(self, register):
        class LinesFormat(MegatronFormat):
            name = "lines-format"
        register(LinesFormat())

    @hookimpl
    def discover_devices(self, vendor):
        if vendor == "linesvendor":
            return DeviceSet(vendor=vendor, kind="cpu", devices=[DeviceInfo(index=0, name="c")])
        return None

    @hookimpl
    def prepare_env(self, context):
        return ExecutionEnv(python=sys.executable, framework="linesfw", framework_version="1")

    @hookimpl
    def prepare_data(self, context):
        return DatasetInfo(kind="lines-data", path=str(context.data_dir), synthesized=True)

    @hookimpl
    def run(self, context, env, dataset):
        code = "".join(
            f"print(' iteration {i}/4 | elapsed time per iteration (ms): {ms} | "
            f"global batch size: 8 | lm loss: {4.0 / i} |');"
            for i, ms in enumerate(STEP_MS, start=1)
        )
        return LaunchSpec(argv=[env.python, "-c", code], log_format=self.log_format)


class ParsingFramework(LinesFramework):
    """The same framework, reading its log itself."""

    @hookimpl
    def parse_log(self, context, log_path):
        return ParsedLog(format="own", steps=[StepRecord(step=i, throughput=7.0) for i in (1, 2, 3)])


def _run(tmp_path, log_format, framework=LinesFramework):
    harness = core_harness(framework(log_format))
    request = RunRequest(case="lines", vendor="linesvendor", framework="linesfw",
                         output=tmp_path / "results", cache_dir=tmp_path / "cache")
    return harness, run_benchmark(harness, request)


def test_the_core_parses_with_the_format_the_launch_declares(tmp_path):
    _, report = _run(tmp_path, "lines-format")
    result = report.result
    assert result.status == "success", result.failure_reason
    # Steps 2-4 after one warm-up step: 8 samples in 0.2, 0.1, 0.05 s.
    assert result.throughput.value == pytest.approx((40.0 + 80.0 + 160.0) / 3)
    assert result.log_summary.format == "lines-format" and result.log_summary.lines == 4
    assert result.repeats[0].log_format == "lines-format"


def test_a_framework_parse_log_overrides_the_declared_format(tmp_path):
    _, report = _run(tmp_path, "lines-format", ParsingFramework)
    assert report.result.throughput.value == pytest.approx(7.0)
    assert report.result.steps_completed == 3


def test_an_unregistered_format_fails_the_run_with_a_reason(tmp_path):
    _, report = _run(tmp_path, "no-such-format")
    assert report.result.status == "failed"
    assert "no log format could read the log" in report.result.failure_reason


def test_run_and_parse_build_the_same_result_from_the_same_log(tmp_path):
    harness, report = _run(tmp_path, "lines-format")
    run = report.result
    ingested = parse_log_file(harness.registry, ParseRequest(
        path=report.run_dir / "train.log", format="lines-format", method="harness", skip=1,
        gpus=1, batch_size=run.micro_batch_size, case="lines", framework="linesfw",
        vendor="linesvendor", precision=run.precision)).result
    same = ("case", "model", "framework", "vendor", "nnodes", "nproc", "run_mode", "precision",
            "micro_batch_size", "global_batch_size", "steps_completed", "skip_steps",
            "step_time", "loss_first", "loss_final", "peak_memory_bytes")
    assert {k: getattr(ingested, k) for k in same} == {k: getattr(run, k) for k in same}
    assert ingested.throughput.value == pytest.approx(run.throughput.value)
    assert ingested.throughput.per_device == pytest.approx(run.throughput.per_device)
    assert ingested.throughput.median == pytest.approx(run.throughput.median)
    for field in ("steps_parsed", "first_step", "last_step", "loss_curve", "lines"):
        assert getattr(ingested.log_summary, field) == getattr(run.log_summary, field)
