"""``python -m paddle.distributed.launch`` for CPU processes (gloo).

Paddle's launcher takes any ``CUDA_VISIBLE_DEVICES``, even the empty one the cpu vendor sets
to hide GPUs, as a list of GPUs and then fails to place CPU workers on them; so the
variable is dropped before the launcher starts. Everything else is the launcher's own.
"""

import os
import runpy
import sys

os.environ.pop("CUDA_VISIBLE_DEVICES", None)
sys.argv = ["paddle.distributed.launch", *sys.argv[1:]]
runpy.run_module("paddle.distributed.launch", run_name="__main__", alter_sys=True)
