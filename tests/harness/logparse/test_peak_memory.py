"""The built-in training scripts' peak-memory line, read by one rule in every format."""

from __future__ import annotations

import pytest

from harness.logparse.peak_memory import peak_memory_bytes


@pytest.mark.parametrize("line, mib", [
    ("[Rank 0] (after 30 iterations) peak memory (MB): 5120.4 (cuda max allocated, max over ranks)", 5120.4),
    ("> peak memory (MB): 399.0 (process max RSS, rank 0)", 399.0),
    ("> peak memory (MB): 346 (process max RSS)", 346.0),
])
def test_the_scripts_layouts(line, mib):
    assert peak_memory_bytes(line) == int(mib * 2**20)


@pytest.mark.parametrize("line", [
    "global step 1, epoch: 0, loss: 9.9, max_memory_allocated: 1200 MB",
    "peak memory (MB): unknown",
    "> training finished",
])
def test_other_lines_state_no_peak(line):
    assert peak_memory_bytes(line) is None


def test_every_format_of_a_built_in_script_reads_it():
    """What the Megatron, DLLogger, PaddleNLP, PaddleClas and gluon-cv formats take from it."""
    from harness.logformats.megatron import MegatronFormat
    from harness_mxnet.mxnet_log import GluonCVFormat
    from harness_paddle.paddle_log import PaddleClasFormat, PaddleNLPFormat
    from harness_pytorch.dllogger_log import DLLoggerFormat

    for log_format in (MegatronFormat(), DLLoggerFormat(), PaddleNLPFormat(), PaddleClasFormat(),
                       GluonCVFormat()):
        parser = log_format.new_parser()
        parser.feed("> peak memory (MB): 512.0 (process max RSS, rank 0)")
        assert parser.finish().peak_memory_bytes == 512 * 2**20, log_format.name
