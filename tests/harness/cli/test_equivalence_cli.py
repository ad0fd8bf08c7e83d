"""`harness equivalence`'s bad input: one line, exit 2, nothing run."""

from __future__ import annotations

import pytest

from harness.cli.main import main


@pytest.mark.parametrize("args, message", [
    (["--case", "nope", "--frameworks", "pytorch,paddle"], "unknown case"),
    (["--case", "gpt3_125M", "--frameworks", ","], "--frameworks"),
    (["--case", "gpt3_125M", "--frameworks", "pytorch,pytorch"], "names a framework twice"),
    (["--case", "gpt3_125M", "--frameworks", "pytorch,tensorflow"], "tensorflow"),
    (["--case", "gpt3_125M", "--frameworks", "pytorch,paddle", "--reference-framework", "paddle"],
     "--reference-framework qualifies --reference"),
    (["--case", "gpt3_125M", "--frameworks", "paddle", "--reference", "nowhere"], "no initial_state.npz"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    code = main(["equivalence", "--output", str(tmp_path / "results"), *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "results" / "equivalence").exists()
