"""PaddleNLP prints 'global step N' and, in some releases, 'global step: N': both are steps."""

from harness_paddle.paddle_log import PaddleNLPFormat

LINE = ("global step{sep} {n}, epoch: 0, batch: {b}, loss: 10.5, avg_reader_cost: 0.01 sec, "
        "avg_batch_cost: 1.0 sec, speed: 1.0 step/s, ips_total: 8192 tokens/s, ips: 8192 tokens/s, "
        "learning rate: 1e-05\n")


def test_global_step_with_and_without_colon(tmp_path):
    log = tmp_path / "log"
    log.write_text(LINE.format(sep="", n=1, b=0) + LINE.format(sep=":", n=2, b=1))
    parsed = PaddleNLPFormat().parse_file(log)
    assert [s.step for s in parsed.steps] == [1, 2]
    assert all(s.throughput == 8192 for s in parsed.steps)
