"""One synthetic log per way ingestion went wrong on real logs (issue 12), through `harness parse`."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from harness.cli.main import main


def parse(args: list[str]) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["parse", *args, "--json"])
    return code, json.loads(out.getvalue())


def mllog(key, time_ms, value=None, event="POINT_IN_TIME", **metadata):
    entry = {"namespace": "", "time_ms": time_ms, "event_type": event, "key": key, "value": value,
             "metadata": {"file": "train.py", "lineno": 1, **metadata}}
    return ":::MLLOG " + json.dumps(entry) + "\n"


def bert_mllog(status="success", framework_line=True) -> str:
    text = (mllog("submission_benchmark", 1000, "bert") + mllog("global_batch_size", 1000, 448)
            + mllog("run_start", 60_000, event="INTERVAL_START")
            + mllog("block_start", 60_100, event="INTERVAL_START", first_epoch_num=1, epoch_count=1)
            + mllog("eval_accuracy", 660_000, 0.72, epoch_num=1_200_000)
            + mllog("block_stop", 660_100, event="INTERVAL_END", first_epoch_num=1)
            + mllog("train_samples", 660_101, 1_200_000)
            + mllog("run_stop", 660_200, event="INTERVAL_END", status=status))
    if framework_line:
        text += "{'e2e_time': 700.5, 'training_sequences_per_second': 2001.5, 'final_loss': 0.0}\n"
    return text


def test_mlperf_bert_success_time_to_train_and_samples_trained(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text(bert_mllog())
    code, doc = parse([str(log)])
    result = doc["result"]
    assert code == 0 and result["status"] == "success"
    assert result["time_to_train_min"] == pytest.approx((660_200 - 60_000) / 60_000)
    # The training-phase figure NVIDIA's run_pretraining.py prints is the default; beside it,
    # 1.2M samples trained over the block (600 s): the BERT record, no per-epoch records.
    assert result["throughput"]["value"] == 2001.5
    assert result["throughput"]["field"] == "training_sequences_per_second"
    assert result["throughput"]["unit"] == "sequences/s"
    assert result["throughput"]["other"]["value"] == pytest.approx(1_200_000 / 600.0)
    assert result["throughput"]["other"]["method"].startswith("harness")
    code, doc = parse([str(log), "--method", "harness"])
    assert doc["result"]["throughput"]["value"] == pytest.approx(1_200_000 / 600.0)
    assert doc["result"]["throughput"]["samples_from"] == "train_samples at the end"
    assert doc["result"]["throughput"]["other"]["value"] == 2001.5


def test_mlperf_aborted_run_fails_and_missing_run_stop_is_truncated(tmp_path):
    log = tmp_path / "aborted.txt"
    log.write_text(bert_mllog(status="aborted"))
    code, doc = parse([str(log)])
    assert code == 1 and doc["result"]["status"] == "failed"
    cut = tmp_path / "cut.txt"
    cut.write_text("".join(bert_mllog(framework_line=False).splitlines(keepends=True)[:-1]))
    code, doc = parse([str(cut)])
    assert doc["result"]["log_summary"]["truncated"] is True
    assert any("truncated" in w for w in doc["result"]["warnings"])


@pytest.mark.parametrize("count_on", ["block_start", "block_stop"])
def test_mlperf_blocks_are_not_mixed_with_epochs(tmp_path, count_on):
    """epoch_count on either block record; epochs, when logged, are the records."""
    lines = [mllog("train_samples", 0, 1000), mllog("global_batch_size", 0, 100),
             mllog("run_start", 1000, event="INTERVAL_START")]
    block = {"first_epoch_num": 0, "epoch_count": 4}
    lines.append(mllog("block_start", 1000, event="INTERVAL_START",
                       **(block if count_on == "block_start" else {"first_epoch_num": 0})))
    for epoch in range(4):
        lines.append(mllog("epoch_start", 1000 + epoch * 2000, event="INTERVAL_START", epoch_num=epoch))
        lines.append(mllog("epoch_stop", 3000 + epoch * 2000, event="INTERVAL_END", epoch_num=epoch))
    lines.append(mllog("block_stop", 9000, event="INTERVAL_END",
                       **(block if count_on == "block_stop" else {"first_epoch_num": 0})))
    lines.append(mllog("run_stop", 9000, event="INTERVAL_END", status="success"))
    log = tmp_path / "resnet.txt"
    log.write_text("".join(lines))
    code, doc = parse([str(log), "--skip", "0"])
    assert doc["result"]["throughput"]["value"] == pytest.approx(500.0)  # 1000 samples / 2 s
    assert doc["result"]["throughput"]["records_used"] == 4
    only_blocks = tmp_path / "blocks.txt"
    only_blocks.write_text("".join(l for l in lines if "epoch_st" not in l))
    code, doc = parse([str(only_blocks), "--skip", "0"])
    # One block of 4 epochs (4000 samples in 8 s), not one epoch.
    assert doc["result"]["throughput"]["value"] == pytest.approx(500.0)


def test_warmup_is_counted_in_iterations(tmp_path):
    log = tmp_path / "every10.log"
    log.write_text("".join(
        f"global step {step}, epoch: 0, batch: {step}, loss: 5.0, avg_batch_cost: 1.0 sec, "
        f"speed: 1.0 step/s, ips_total: {1000 + step} tokens/s, ips: {1000 + step} tokens/s, "
        "learning rate: 1e-05\n" for step in range(10, 130, 10)))
    code, doc = parse([str(log), "--gpus", "1", "--method", "harness", "--skip", "10"])
    throughput = doc["result"]["throughput"]
    # skip 10 iterations = the first record (iterations 1-10), not the first ten records.
    assert throughput["records_used"] == 11
    assert (throughput["first_step_used"], throughput["last_step_used"]) == (20, 120)
    assert throughput["value"] == pytest.approx(sum(1000 + s for s in range(20, 130, 10)) / 11)
    assert doc["result"]["warnings"] == []
    code, doc = parse([str(log), "--gpus", "1", "--method", "harness", "--skip", "105"])
    assert doc["result"]["throughput"]["records_used"] == 1
    assert any("1 record" in w for w in doc["result"]["warnings"])
    code, doc = parse([str(log), "--gpus", "1", "--method", "harness", "--skip-records", "10"])
    assert doc["result"]["throughput"]["records_used"] == 2


def test_metadata_stated_by_the_log_and_file_name(tmp_path):
    step = ("total step: {n}, epoch: 0, batch: {n}, loss: 9.0, avg_reader_cost: 0.01 sec, "
            "avg_batch_cost: 0.30 sec, avg_samples: 32.0, ips: 100.0 sequences/sec\n")
    log = tmp_path / "PaddleNLP_bert_N1C8_log"
    log.write_text("Namespace(batch_size=32, use_amp=True, max_seq_length=128)\n"
                   + "".join(step.format(n=n) for n in range(1, 21)))
    code, doc = parse([str(log)])
    result = doc["result"]
    assert result["nproc"] == 8 and doc["legacy_index"]["gpu_num"] == 8
    assert result["throughput"]["value"] == pytest.approx(800.0)  # rank 0's ips x 8 GPUs
    assert result["precision"] == "fp16" and result["config"]["settings"]["micro_batch_size"] == 32
    sources = result["log_summary"]["sources"]
    assert sources["gpus"] == "file name: N1C8"
    assert sources["precision"].startswith("log line 1: ") and "use_amp=True" in sources["precision"]
    assert "max_seq_length=128" in sources["seq_len"]
    code, doc = parse([str(log), "--gpus", "4", "--precision", "fp32"])  # flags override
    assert doc["result"]["nproc"] == 4 and doc["result"]["precision"] == "fp32"
    assert doc["result"]["log_summary"]["sources"]["gpus"] == "--gpus 4"
    megatron = tmp_path / "megatron.log"
    megatron.write_text(
        "  fp16 ............................................ True\n"
        "  seq_length ...................................... 1024\n"
        "  world_size ...................................... 16\n"
        + "".join(f" iteration {n:>8}/     100 | consumed samples: {n * 8} | elapsed time per iteration "
                  f"(ms): 1000.0 | learning rate: 1.0E-04 | global batch size:     8 | lm loss: 5.0E+00 |\n"
                  for n in range(1, 21)))
    code, doc = parse([str(megatron)])
    assert doc["result"]["nproc"] == 16 and doc["result"]["precision"] == "fp16"
    assert doc["result"]["throughput"]["unit"] == "tokens/s"
    assert doc["result"]["throughput"]["value"] == pytest.approx(8 * 1024)


def test_keras_timehistory_layout(tmp_path):
    log = tmp_path / "keras.log"
    log.write_text("".join(
        f"I0612 05:13:44.123 TimeHistory: 10.00 seconds, {1000 + s} examples/second between steps "
        f"{s - 100} and {s}\n" for s in range(100, 600, 100))
        + "Run stats:\n{'loss': 1.2, 'avg_exp_per_second': 1234.5, 'step_timestamp_log': []}\n")
    code, doc = parse([str(log), "--skip", "100"])
    assert doc["result"]["config"]["params"]["log_format"] == "keras_timehistory"
    assert doc["result"]["throughput"]["value"] == pytest.approx((1200 + 1300 + 1400 + 1500) / 4)
    code, doc = parse([str(log), "--method", "framework"])
    assert doc["result"]["throughput"]["value"] == 1234.5
    assert doc["result"]["throughput"]["field"] == "avg_exp_per_second"


def test_keyword_mode_scope_is_explicit(tmp_path):
    log = tmp_path / "global.log"
    log.write_text("".join(f"step {n} throughput: {8000 + n}\n" for n in range(1, 6)))
    code, doc = parse([str(log), "--keyword", "throughput:", "--gpus", "8"])
    assert doc["result"]["throughput"]["value"] == pytest.approx(8003 * 8)
    assert doc["result"]["throughput"]["scope"] == "per-gpu"
    assert any("per-GPU figures (the default" in n for n in doc["notes"])
    code, doc = parse([str(log), "--keyword", "throughput:", "--gpus", "8", "--keyword-scope", "global"])
    assert doc["result"]["throughput"]["value"] == pytest.approx(8003)
    assert doc["result"]["throughput"]["scope"] == "global"


def test_log_cut_mid_line_is_flagged(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text("".join(f"global step {s}, loss: 5.0, ips: 100.0 tokens/s\n" for s in range(1, 20))
                   + "global step 20, loss: 5.0, ips: 1")
    code, doc = parse([str(log), "--gpus", "1"])
    assert doc["result"]["log_summary"]["truncated"] is True
    assert any("middle of a line" in w for w in doc["result"]["warnings"])


def test_framework_method_names_the_field(tmp_path):
    log = tmp_path / "dle.log"
    log.write_text(
        "DLL 2023-08-04 05:46:28.892809 - Epoch: 0 Iteration: 1  train.loss : 7.8 None "
        "train.compute_ips : 366.98 images/s train.total_ips : 365.85 images/s train.lr : 0.1\n"
        "DLL 2023-08-04 05:47:42.970732 - Summary: train.loss : 6.43 None train.total_ips : 366.74 images/s\n")
    code, doc = parse([str(log), "--method", "framework"])
    assert doc["result"]["throughput"]["value"] == 366.74
    assert doc["result"]["throughput"]["field"] == "Summary train.total_ips"
    assert "Summary train.total_ips" in doc["result"]["throughput"]["method"]
