"""The second line behind the multi-node link: the PyTorch scripts' process group gives up on a
collective after the run's rendezvous_timeout_s (not gloo's 30 or NCCL's 10 minutes), so a rank
whose peer stopped answering ends by itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest


@pytest.mark.slow
def test_a_rank_whose_peer_stopped_ends_after_the_collective_timeout(tmp_path):
    env = dict(os.environ, HARNESS_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    run = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--case", "gpt3_125M", "--scale", "smoke",
         "--nproc", "2", "--max-steps", "2000", "--set", "rendezvous_timeout_s=20",
         "--output", str(tmp_path / "results"), "--json"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 300
    log = None
    while log is None or " iteration " not in log.read_text():
        assert time.monotonic() < deadline and run.poll() is None, "training did not start"
        logs = list((tmp_path / "results").glob("*/train.log"))
        log = logs[0] if logs else None
        time.sleep(0.5)
    ranks = {}
    for process in psutil.Process(run.pid).children(recursive=True):
        try:
            rank = process.environ().get("RANK")
        except psutil.Error:
            continue
        if rank is not None and "train_gpt.py" in " ".join(process.cmdline()):
            ranks[rank] = process
    ranks["1"].send_signal(signal.SIGSTOP)  # alive, holding its sockets, answering nothing
    stopped_at = time.monotonic()
    out, _ = run.communicate(timeout=600)
    waited = time.monotonic() - stopped_at
    result = json.loads(out)
    assert result["status"] in ("failed", "terminated") and result["steps_completed"] < 2000
    # 20 s collective timeout, torchrun's teardown and a loaded machine: far below the
    # 900 s hang timeout and gloo's own 30 minutes
    assert waited < 240, waited
