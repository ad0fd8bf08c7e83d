"""The Paddle scripts' endless loader (``paddle_common.shuffled_batches``): worker processes
started once for the whole run, a new order each epoch, epoch keys for the CNN's
augmentation. Runs in the Paddle environment a cpu smoke run built in the harness cache
(skipped when there is none: this interpreter has no paddle)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.envs import EnvStore
from harness.envs.store import default_envs_root
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR
from harness_paddle.plugin import PADDLE_VERSION

SCRIPTS_DIR = Path(__file__).resolve().parents[3] / "plugins" / "harness_paddle" / "scripts"

# 12 samples, batches of 2 on 2 data-parallel ranks: 3 batches a rank per epoch, 4 epochs.
PROBE = """
import json, os, sys
from types import SimpleNamespace
import numpy as np
import paddle
from paddle_common import shuffled_batches

class Probe(paddle.io.Dataset):
    def __len__(self):
        return 12
    def __getitem__(self, key):
        epoch, index = key if isinstance(key, tuple) else (-1, key)
        return np.array([epoch, index, os.getpid()], np.int64)

rt = SimpleNamespace(dedicated=True, data_parallel_world=lambda: 2, data_parallel_rank=lambda: 1)
options = {"epoch_keys": True} if sys.argv[1] == "keys" else {}
data = shuffled_batches(rt, Probe(), 7 if sys.argv[1] == "too-large" else 2, workers=2, **options)
rows = []
for _ in range(4 * 3):
    epoch, index, batch = next(data)
    rows += [[epoch, index, *map(int, sample)] for sample in batch.numpy()]
data.close()
alive = []
for pid in {row[-1] for row in rows}:
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except ProcessLookupError:
        pass
print(json.dumps({"rows": rows, "alive_after_close": alive}))
"""


def _paddle_python() -> Path:
    for env in EnvStore(default_envs_root()).list():
        if env.complete and env.record.packages.get("paddlepaddle") == PADDLE_VERSION:
            return env.record.python_in(env.folder)
    pytest.skip(f"no harness environment with paddlepaddle {PADDLE_VERSION} in {default_envs_root()} "
                "(a `harness run --framework paddle --vendor cpu` builds one)")


def _run_probe(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(_paddle_python()), "-c", PROBE, mode], capture_output=True, text=True,
                          timeout=300, cwd=SCRIPTS_DIR,
                          env={"PYTHONPATH": f"{SCRIPTS_DIR}:{SHARED_SCRIPTS_DIR}", "GLOG_minloglevel": "2"})


def _probe(mode: str) -> list[list[int]]:
    """Rows (epoch, batch index, key epoch or -1, sample index, worker pid) of 4 epochs; the
    workers must be gone once the batches are closed."""
    proc = _run_probe(mode)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["alive_after_close"] == [], "loader workers outlived ShuffledBatches.close()"
    return out["rows"]


@pytest.fixture(scope="module")
def plain() -> list[list[int]]:
    return _probe("plain")


def test_workers_start_once_for_all_epochs(plain):
    pids = {row[4] for row in plain}
    assert len(pids) == 2, f"{len(pids)} worker processes over 4 epochs; 2 expected"


def test_each_epoch_is_a_new_order_of_this_rank_share(plain):
    assert [row[:2] for row in plain[::2]] == [[e, i] for e in range(4) for i in range(3)]
    epochs = [[row[3] for row in plain if row[0] == epoch] for epoch in range(4)]
    assert all(len(set(order)) == 6 for order in epochs)  # half of the 12, each once
    assert len({tuple(order) for order in epochs}) > 1  # reshuffled
    assert {row[2] for row in plain} == {-1}  # plain indices without epoch keys


def test_epoch_keys_carry_the_epoch_they_are_drawn_in(plain):
    keyed = _probe("keys")
    assert all(row[2] == row[0] for row in keyed)  # the key's epoch is the batch's epoch
    assert [row[3] for row in keyed] == [row[3] for row in plain]  # the same order either way
    assert len({row[4] for row in keyed}) == 2


def test_a_share_too_small_for_one_batch_fails_in_one_line():
    """6 samples a rank make no batch of 7: an endless pass over no batches would spin forever."""
    proc = _run_probe("too-large")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "error: 12 samples make no batch of 7 for each of 2 data-parallel processes" in proc.stdout + proc.stderr
