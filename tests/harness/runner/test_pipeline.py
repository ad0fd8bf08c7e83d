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
