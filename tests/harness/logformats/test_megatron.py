"""Megatron-LM iteration lines, old layout and new (TFLOP/s/GPU before learning rate)."""

from __future__ import annotations

import pytest

from harness.logformats.megatron import MegatronFormat

OLD = (
    " iteration       10/     100 | consumed samples:          160 | elapsed time per iteration (ms): 1234.5 | "
    "learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 1.083516E+01 | loss scale: 1.0 | "
    "grad norm: 12.345 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)
NEW = (
    " [2024-01-01 10:00:00] iteration       20/     100 | consumed samples:          320 | elapsed time per "
    "iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 2.000000E-04 | "
    "global batch size:    16 | lm loss: 9.500000E+00 | loss scale: 1.0 | grad norm: 1.200 | "
    "number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)
MEMORY = "[Rank 0] (after 20 iterations) memory (MB) | allocated: 1000.0 | max allocated: 3072.0 | reserved: 4000.0\n"


def test_old_and_new_lines(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(OLD + NEW + MEMORY)
    parsed = MegatronFormat().parse_file(path, seq_len=1024)
    old, new = parsed.steps
    assert (old.step, new.step) == (10, 20)
    assert old.step_time_s == pytest.approx(1.2345) and new.step_time_s == pytest.approx(1.0)
    assert old.throughput == pytest.approx(16 / 1.2345 * 1024)
    assert new.throughput == pytest.approx(16 * 1024)  # the TFLOP/s field does not shift the reading
    assert (old.learning_rate, new.learning_rate) == (pytest.approx(1e-4), pytest.approx(2e-4))
    assert (old.loss, new.loss) == (pytest.approx(10.83516), pytest.approx(9.5))
    assert parsed.meta["tflops_per_gpu"] == pytest.approx(123.4)
    assert parsed.meta["max_steps"] == 100 and parsed.meta["global_batch_size"] == 16
    assert parsed.peak_memory_bytes == 3072 * 2**20
    assert parsed.unit == "tokens/s"


def test_nan_loss_and_keep_steps(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(NEW.replace("lm loss: 9.500000E+00", "lm loss: nan").replace(
        "nan iterations:   0", "nan iterations:   1"))
    parser = MegatronFormat().new_parser(keep_steps=False)
    for line in path.read_text().splitlines(keepends=True):
        step = parser.feed(line)
    parsed = parser.finish()
    assert step is not None and parsed.steps == []
    assert any("non-finite loss" in e for e in parsed.errors)
    assert any("nan iterations" in e for e in parsed.errors)


def test_detection():
    fmt = MegatronFormat()
    assert fmt.detect(OLD) and fmt.detect(NEW)
    assert not fmt.detect(MEMORY)
    assert not fmt.detect("iteration 10 done\n")


def test_streaming_sink_sees_the_same_steps_as_feed(tmp_path):
    from harness.logparse.summary import StepSummary, stream_log

    path = tmp_path / "train.log"
    path.write_text((OLD + "noise\n" + NEW) * 3)
    streamed = stream_log(path, MegatronFormat(), seq_len=1024)
    direct = StepSummary()
    for step in MegatronFormat().parse_file(path, seq_len=1024).steps:
        direct.add(step)
    assert streamed.summary.count == direct.count == 6
    assert list(streamed.summary.throughput) == list(direct.throughput)
    assert streamed.summary.loss.points == direct.loss.points


def test_megatron_deepspeed_pipeline_steps_with_host_prefixes(tmp_path):
    """pdsh puts the host before each line; DeepSpeed's pipeline engine prints 'steps:' lines."""
    import contextlib
    import io
    import json

    from harness.cli.main import main

    lines = ["worker-0: [2023-05-01 10:00:00,000] [INFO] [engine.py:123] using pipeline",
             "worker-0: steps: 10 loss: 10.9012 iter time (s): 2.000 samples/sec: 64.000"]
    for step, rate in ((20, 100.0), (30, 110.0), (40, 120.0)):
        lines.append(f"worker-0: steps: {step} loss: 7.5 iter time (s): 1.200 samples/sec: {rate:.3f}")
        lines.append(f"worker-1: steps: {step} loss: 7.5 iter time (s): 1.200 samples/sec: {rate:.3f}")
    log = tmp_path / "mds.log"
    log.write_text("\n".join(lines) + "\n")
    assert MegatronFormat().detect(lines[1])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["parse", str(log), "--json", "--seq-len", "2048"]) == 0
    result = json.loads(out.getvalue())["result"]
    assert result["config"]["params"]["log_format"] == "megatron"
    assert result["throughput"]["records_used"] == 3  # steps 20-40; worker-1's repeats dropped
    assert result["throughput"]["value"] == pytest.approx(110.0 * 2048)
    assert result["throughput"]["unit"] == "tokens/s"


def test_iteration_lines_win_over_pipeline_lines_printed_later(tmp_path):
    text = ("iteration       10/     100 | consumed samples:          160 | elapsed time per iteration (ms): 1000.0 "
            "| learning rate: 1.0E-04 | global batch size:    16 | lm loss: 1.0E+01 |\n"
            "steps: 10 loss: 10.0 iter time (s): 2.000 samples/sec: 8.000\n")
    path = tmp_path / "both.log"
    path.write_text(text)
    parsed = MegatronFormat().parse_file(path)
    assert [s.throughput for s in parsed.steps] == [16.0]
