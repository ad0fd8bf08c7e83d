"""What MLPerf's training rules say each benchmark's log counts, and in which unit.

From ``training_rules.adoc`` of mlcommons/training_policies, tables "Epoch reporting" (how a
log numbers its progress: ``epoch_num``, ``first_epoch_num``, ``samples_count`` and the
``step`` of ``tracked_stats``) and the hyperparameter tables ("batch size in sequences" for
the language models):

- BERT, Stable Diffusion, FLUX.1 and the Llama / GPT-OSS / DeepSeek benchmarks count
  training samples; for the language models a sample is a sequence, so their throughput
  is sequences/s;
- GPT-3 counts training tokens (``epoch_num`` 50331648 = 24576 sequences of 2048 tokens),
  so its samples and throughput are tokens/s;
- ResNet, UNet3D, Mask R-CNN, RNN-T and SSD/RetinaNet number their records by epoch;
- R-GAT (``gnn`` before v5.0) and DLRM report fractions of an epoch.
"""

from __future__ import annotations

SAMPLES = "samples"
TOKENS = "tokens"
EPOCHS = "epochs"
EPOCH_FRACTION = "epoch fraction"

#: benchmark (``submission_benchmark``) -> what its epoch numbers and sample counts count
PROGRESS_UNIT = {
    "bert": SAMPLES, "stable_diffusion": SAMPLES, "flux1": SAMPLES,
    "llama2_70b_lora": SAMPLES, "llama31_8b": SAMPLES, "llama31_405b": SAMPLES,
    "gpt_oss_20b": SAMPLES, "deepseekv3_671b": SAMPLES,
    "gpt3": TOKENS,
    "resnet": EPOCHS, "unet3d": EPOCHS, "maskrcnn": EPOCHS, "rnnt": EPOCHS, "ssd": EPOCHS,
    "retinanet": EPOCHS,
    "rgat": EPOCH_FRACTION, "gnn": EPOCH_FRACTION, "dlrm": EPOCH_FRACTION, "dlrm_dcnv2": EPOCH_FRACTION,
}

_SEQUENCE_BENCHMARKS = {"bert", "llama2_70b_lora", "llama31_8b", "llama31_405b", "gpt_oss_20b",
                        "deepseekv3_671b"}


def progress_unit(benchmark: str | None) -> str | None:
    return PROGRESS_UNIT.get(benchmark or "")


def throughput_unit(benchmark: str | None) -> str:
    """The unit of a benchmark's samples per second, as its rules count samples."""
    if benchmark == "gpt3":
        return "tokens/s"
    if benchmark in _SEQUENCE_BENCHMARKS:
        return "sequences/s"
    return "samples/s"
