"""run_benchmark's recording step: what a run that cannot be recorded reports."""

from __future__ import annotations

import pytest

from harness.errors import StorageError
from harness.runner.pipeline import RunRequest, run_benchmark
from tests.harness.test_hooks import toy  # noqa: F401  (fixture)


def test_a_damaged_database_keeps_the_run_and_says_which_file(toy, tmp_path):  # noqa: F811
    harness, _ = toy
    output = tmp_path / "results"
    output.mkdir()
    (output / "harness.db").write_text("not sqlite " * 200)
    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=output,
                         cache_dir=tmp_path / "cache")
    with pytest.raises(StorageError, match="harness.db cannot be used .*file is not a database") as info:
        run_benchmark(harness, request)
    assert info.value.report is not None and (info.value.report.run_dir / "result.json").is_file()


def test_a_stop_signal_wrapped_by_pydantic_s_serializer_still_terminates_the_run(toy, tmp_path, monkeypatch):  # noqa: F811
    """SIGTERM's handler raised inside pydantic's serializer while the run's config was being
    written: pydantic wrapped Terminated in a PydanticSerializationError. The run still ends
    terminated, recorded, instead of a traceback (seen once in `certify run` under SIGTERM)."""
    import signal

    from pydantic import BaseModel, field_serializer

    from harness.runner import pipeline
    from harness.runner.signals import Terminated

    class Boom(BaseModel):
        x: int = 0

        @field_serializer("x")
        def _stop(self, value):
            raise Terminated(signal.SIGTERM)

    monkeypatch.setattr(pipeline, "config_text", lambda config: Boom().model_dump_json())
    harness, _ = toy
    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=tmp_path / "results",
                         cache_dir=tmp_path / "cache")
    report = run_benchmark(harness, request)
    assert report.result.status == "terminated"
    assert report.result.failure_reason.startswith("terminated by SIGTERM")


def test_only_a_stop_inside_a_serialization_error_is_unwrapped():
    from pydantic import BaseModel, field_serializer
    from pydantic_core import PydanticSerializationError

    from harness.runner.signals import Terminated, stop_wrapped_in

    class Broken(BaseModel):
        x: int = 0

        @field_serializer("x")
        def _fail(self, value):
            raise ValueError("not serialisable")

    with pytest.raises(PydanticSerializationError) as info:
        Broken().model_dump_json()
    assert stop_wrapped_in(info.value) is None
    assert isinstance(stop_wrapped_in(PydanticSerializationError(
        "Error serializing to JSON: Terminated: terminated by SIGTERM")), Terminated)

    class Interrupted(BaseModel):  # Ctrl-C's KeyboardInterrupt, wrapped by pydantic itself
        x: int = 0

        @field_serializer("x")
        def _interrupt(self, value):
            raise KeyboardInterrupt

    with pytest.raises(PydanticSerializationError) as info:
        Interrupted().model_dump_json()
    assert isinstance(stop_wrapped_in(info.value), KeyboardInterrupt)
