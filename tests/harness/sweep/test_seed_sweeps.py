"""The seed documents' matrices, shipped as sweeps/*.toml, expand to exactly their tables.

The expected values are copied from the seeds' tables (see ../shared/seeds beside the project
notes): each test lists the table's rows and columns and checks the expansion against them.
"""

from __future__ import annotations

from pathlib import Path

from harness.sweep.spec import load_sweep_file

SWEEPS = Path(__file__).resolve().parents[3] / "sweeps"


def _points(name: str):
    return load_sweep_file(SWEEPS / name).expand()


def test_every_sweep_file_parses():
    files = sorted(SWEEPS.glob("*.toml"))
    assert len(files) >= 4
    for path in files:
        assert load_sweep_file(path).expand(), path


def test_ngc_bert_speed_table():
    # seed 002 速度结果: rows 卡数 1 and 8; columns FP32(BS=32) FP32(BS=48) AMP(BS=64) AMP(BS=96)
    rows = [1, 8]
    columns = [("fp32", 32), ("fp32", 48), ("fp16", 64), ("fp16", 96)]
    points = _points("ngc_bert_base.toml")
    assert len(points) == len(rows) * len(columns) == 8
    assert {(p.nproc, p.precision, p.micro_batch_size) for p in points} == {
        (n, prec, bs) for n in rows for prec, bs in columns}
    assert {(p.case, p.framework, p.vendor) for p in points} == {("bert_base_seq128", "pytorch", "nvidia")}


def test_flagperf_gpt3_configs():
    # seed 003 性能指标: GPT3-6.7B and GPT3-13B, 4 configs each, A100 1x8, fp16 O2
    configs = ["config_TP1PP1SH2SP8A10080Gx1x8", "config_TP2PP1SH1SP4A10080Gx1x8",
               "config_TP2PP1SH2SP4A10080Gx1x8", "config_TP2PP4SH1SP1A10080Gx1x8"]
    points = _points("flagperf_gpt3_paddle.toml")
    assert len(points) == 8
    assert [(p.case, p.label) for p in points] == (
        [("gpt3_6.7B", c) for c in configs] + [("gpt3_13B", c) for c in configs])
    assert {(p.framework, p.vendor, p.nnodes, p.nproc, p.precision) for p in points} == {
        ("paddle", "nvidia", 1, 8, "fp16")}
    for p in points:
        values = dict(p.set)
        tp, pp = int(p.label[9]), int(p.label[12])
        stage, degree = int(p.label[15]), int(p.label[18])
        assert (values["tensor_parallel_degree"], values["pipeline_parallel_degree"]) == (tp, pp)
        assert (values["sharding_stage"], values["sharding_degree"]) == (stage, degree)
        data_parallel = 8 // (tp * pp)
        # global batch of the seed: 2M tokens = 1024 sequences of 2048
        assert p.micro_batch_size * values["grad_accum_steps"] * data_parallel == 1024
        assert values["recompute"] == ("full" if p.case == "gpt3_13B" else "none")
    per_device = {(p.case, p.label): p.micro_batch_size for p in points}
    assert per_device[("gpt3_13B", configs[0])] == 2 and per_device[("gpt3_13B", configs[3])] == 4


def test_megatron_matrix_groups():
    # seed 004 测试用例: group -> (case, num-nodes, num-gpus-per-node)
    table = {
        "DP": [("DP_1x1x1_2_1536x16", 1, 1), ("DP_8x1x1_16_1536x16", 1, 8),
               ("DP_16x1x1_32_1536x16", 2, 8), ("DP_32x1x1_64_1536x16", 4, 8)],
        "MP": [("MP_1x1x1_8_768x12", 1, 1), ("MP_1x8x1_16_1536x16", 1, 8),
               ("MP_1x16x1_16_3072x16", 2, 8), ("MP_1x32x1_16_3072x32", 4, 8)],
        "2D": [("2D_8x1x1_16_1536x16", 1, 8), ("2D_1x8x1_16_1536x16", 1, 8),
               ("2D_2x4x1_16_1536x16", 1, 8), ("2D_4x2x1_16_1536x16", 1, 8),
               ("2D_2x8x1_16_2304x24", 2, 8), ("2D_4x8x1_32_2304x24", 4, 8)],
        "PP": [("DP_PP_8x1x4_512_1536x16", 4, 8), ("MP_PP_1x8x4_512_2304x24", 4, 8),
               ("2D_PP_2x4x4_512_2304x24", 4, 8), ("2D_PP_2x8x2_512_2304x24", 4, 8)],
    }
    points = _points("megatron_lm_matrix.toml")
    assert len(points) == sum(len(v) for v in table.values()) == 18
    assert [(p.group, p.case, p.nnodes, p.nproc) for p in points] == [
        (group, *row) for group, rows in table.items() for row in rows]
    for p in points:
        # dp x tp x pp of the name equals the number of GPUs of the layout
        dp, tp, pp = (int(x) for x in p.case.split("_")[-3].split("x"))
        assert dp * tp * pp == p.nnodes * p.nproc
    assert {p.framework for p in points} == {"megatron"}


def test_mobilenet_gluoncv_logs():
    # seed 001 logs: clas_MobileNetV1_sp_bs64_fp32_1_speed and clas_MobileNetV1_mp_bs64_fp32_8_speed
    points = _points("mobilenet_v1_gluoncv.toml")
    assert [(p.case, p.framework, p.nproc, p.precision, p.micro_batch_size) for p in points] == [
        ("mobilenet_v1", "mxnet", 1, "fp32", 64), ("mobilenet_v1", "mxnet", 8, "fp32", 64)]


def test_weak_scaling_keeps_the_micro_batch_per_gpu_over_1_2_and_4_gpus():
    points = _points("weak_scaling_gpu.toml")
    by_case: dict[str, list] = {}
    for p in points:
        by_case.setdefault(p.case, []).append(p)
    assert set(by_case) == {"gpt3_1.3B", "bert_base_seq128", "resnet50"}
    for case, series in by_case.items():
        assert [p.nproc for p in series] == [1, 2, 4], case  # one after another, 1 GPU first
        assert len({(p.micro_batch_size, p.precision, p.max_steps, p.set) for p in series}) == 1, case
    gpt = by_case["gpt3_1.3B"]
    # the vendor's 4-GPU GPT layout (FSDP2 stage 1) is a hardware config; 1 and 2 GPUs use DDP
    assert [p.hardware_config for p in gpt] == [None, None, "config_TP1PP1SH1SP4H200x1x4"]
    assert dict(gpt[0].set)["grad_accum_steps"] == 1  # weak scaling: no accumulation to hide it
