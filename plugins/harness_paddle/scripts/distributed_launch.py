"""``python -m paddle.distributed.launch``, with the first local worker's output on the
launcher's own stdout.

Paddle's launcher writes every worker's output to ``<log_dir>/workerlog.<i>`` and copies the
first one's new lines to its stdout only when it polls, every 2 seconds. The core times each
step line as it arrives on that stdout (``harness.witness``): lines that arrive in 2-second
bursts make steps of 1.5 s look like 2 s, and a short run is ``invalid`` for a clock that
disagrees with its own log. So the first local worker inherits the launcher's stdout and
stderr, as torchrun's workers do (the launcher then has nothing of it to copy); the other
workers keep their files.

An empty ``CUDA_VISIBLE_DEVICES`` (the cpu vendor's: no GPU) is dropped before the launcher
starts: Paddle's launcher takes any value, even the empty one, for a list of GPUs and then fails
to place CPU workers on them. Everything else is the launcher's own.
"""

import os
import runpy
import sys

from paddle.distributed.launch.controllers import controller

FIRST_WORKER_LOG = "workerlog.0"
_log_files = controller.Controller._get_out_err_file


def _first_worker_on_stdout(self, out=None, err=None):
    if out == FIRST_WORKER_LOG:
        return None, None  # a container without files writes to the launcher's stdout
    return _log_files(self, out, err)


controller.Controller._get_out_err_file = _first_worker_on_stdout
if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
    del os.environ["CUDA_VISIBLE_DEVICES"]
sys.argv = ["paddle.distributed.launch", *sys.argv[1:]]
runpy.run_module("paddle.distributed.launch", run_name="__main__", alter_sys=True)
