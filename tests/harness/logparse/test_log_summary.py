"""An ingested log's curves and facts land in the typed result field ``log_summary``."""

from __future__ import annotations

import json

from tests.conftest import run_cli

LINE = (" iteration {i:8d}/     500 | consumed samples: {s:12d} | elapsed time per iteration (ms): 100.0 |"
        " learning rate: {lr:.3E} | global batch size:    16 | lm loss: {loss:.6E} |\n")


def test_ingested_log_summary(cli_env, tmp_path):
    log = tmp_path / "megatron.log"
    log.write_text("".join(LINE.format(i=i, s=16 * i, lr=1e-4 * i, loss=10.0 / i) for i in range(1, 1201)))
    proc = run_cli(["parse", str(log), "--seq-len", "1024", "--json"], cli_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["result"]["log_summary"]
    assert summary["format"] == "megatron" and summary["lines"] == 1200
    assert (summary["steps_parsed"], summary["first_step"], summary["last_step"]) == (1200, 1, 1200)
    curve = summary["loss_curve"]
    assert 256 <= len(curve) <= 512  # thinned, bounded
    assert curve[0] == [1, 10.0] and all(b[0] > a[0] for a, b in zip(curve, curve[1:]))
    assert summary["learning_rate_curve"][1][1] > summary["learning_rate_curve"][0][1]
