"""Streaming: one pass, bounded curves, sha256, universal newlines."""

from __future__ import annotations

import hashlib

from harness.logparse.summary import CURVE_POINTS, Curve, stream_log
from harness_paddle.paddle_log import PaddleNLPFormat

LINE = ("total step: {step}, epoch: 0, batch: {step}, loss: {loss}, avg_reader_cost: 0.1 sec, "
        "avg_batch_cost: 0.5 sec, avg_samples: 96.00000, ips: {ips} sequences/sec")


def test_curve_stays_bounded_and_keeps_first_and_last():
    curve = Curve()
    for step in range(100_000):
        curve.add(step, float(step))
    assert len(curve.points) < CURVE_POINTS
    assert curve.first == 0.0 and curve.last == 99_999.0
    steps = [s for s, _ in curve.points]
    assert steps == sorted(steps) and steps[0] == 0


def test_stream_log_keeps_no_step_objects_and_hashes_the_file(tmp_path):
    path = tmp_path / "train.log"
    # \r-separated tqdm redraws and a \r\n ending must not hide the step lines.
    body = "".join(LINE.format(step=i, loss=10 - i / 1000, ips=100 + i % 7) + ("\r\n" if i % 2 else "\n")
                   for i in range(1, 2001))
    path.write_bytes(("10%|#    | 1/10\r20%|##   | 2/10\r" + body).encode())
    streamed = stream_log(path, PaddleNLPFormat())
    assert streamed.summary.count == 2000
    assert streamed.parsed.steps == []
    assert len(streamed.summary.throughput) == 2000
    assert streamed.summary.loss.first == 10 - 1 / 1000 and streamed.summary.loss.last == 8.0
    assert len(streamed.summary.loss.points) < CURVE_POINTS
    assert streamed.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert streamed.bytes == path.stat().st_size
    assert streamed.lines == 2002
