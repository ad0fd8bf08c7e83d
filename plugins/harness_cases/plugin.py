"""Registers the built-in cases and prepares their datasets (dispatching on the dataset kind)."""

from __future__ import annotations

from harness import hookimpl
from harness.models import DatasetInfo
from harness.models.context import RunContext
from harness_cases.bert_cases import bert_cases
from harness_cases.cnn_cases import cnn_cases
from harness_cases.gpt_cases import gpt3_cases


@hookimpl
def register_cases(register) -> None:
    for case in [*gpt3_cases(), *bert_cases(), *cnn_cases()]:
        register(case)


def _gpt_npy(context: RunContext) -> DatasetInfo:
    from harness_cases.gpt_data import ensure_gpt_dataset, find_real_gpt_dataset

    real = find_real_gpt_dataset(context.data_dir)
    if real is not None:  # e.g. PaddleNLP's gpt_en_dataset_300m_ids.npy / _idx.npz
        folder, files = real
        return DatasetInfo(kind="gpt-npy", path=str(folder), files=files, synthesized=False,
                           description=f"user dataset {files[0].removesuffix('_ids.npy')}")
    vocab = int(context.config.params["vocab_size"])
    seed = context.config.settings.seed
    folder, files, created = ensure_gpt_dataset(context.data_dir, vocab, seed)
    return DatasetInfo(
        kind="gpt-npy", path=str(folder), files=files, synthesized=True, seed=seed,
        description=("synthesised now" if created else "reused") + " (PaddleNLP *_ids.npy/*_idx.npz)",
    )


def _bert_hdf5(context: RunContext) -> DatasetInfo:
    from harness_cases.bert_data import ensure_bert_dataset

    p, seed = context.config.params, context.config.settings.seed
    folder, files, created = ensure_bert_dataset(
        context.data_dir, int(p["vocab_size"]), int(p["seq_len"]), int(p["max_predictions"]),
        int(p["num_samples"]), seed)
    return DatasetInfo(
        kind="bert-hdf5", path=str(folder), files=files, synthesized=True, seed=seed,
        description=("synthesised now" if created else "reused") + " (NGC BERT pre-training HDF5)",
    )


def _images_uint8(context: RunContext) -> DatasetInfo:
    from harness_cases.image_data import ensure_image_dataset

    p, seed = context.config.params, context.config.settings.seed
    folder, files, created = ensure_image_dataset(
        context.data_dir, int(p["image_size"]), int(p["num_classes"]), int(p["num_samples"]), seed)
    return DatasetInfo(
        kind="images-uint8", path=str(folder), files=files, synthesized=True, seed=seed,
        description=("synthesised now" if created else "reused")
                    + " (uint8 CHW image records with uint16 labels)",
    )


DATASET_PREPARERS = {"gpt-npy": _gpt_npy, "bert-hdf5": _bert_hdf5, "images-uint8": _images_uint8}


@hookimpl
def prepare_data(context: RunContext) -> DatasetInfo | None:
    prepare = DATASET_PREPARERS.get(context.case.dataset)
    return prepare(context) if prepare else None


@hookimpl
def model_flops(context: RunContext):
    """Counted from the case's parameters, the same for every framework that trains it.

    GPT: 6·N + 12·L·h·s per token (PaLM appendix B); BERT: per sequence (bert_flops); the
    CNNs: 3 x the forward convolution and classifier FLOPs per image (cnn_flops).
    """
    model, unit = context.case.model, context.case.unit
    if model == "gpt" and unit == "tokens/s":
        from harness_cases.gpt_flops import gpt_flops_per_token

        return gpt_flops_per_token(context.config.params)
    if model == "bert" and unit == "sequences/s":
        from harness_cases.bert_flops import bert_flops_per_sequence

        return bert_flops_per_sequence(context.config.params)
    if model in ("resnet50", "mobilenet_v1") and unit == "images/s":
        from harness_cases.cnn_flops import cnn_flops_per_image

        return cnn_flops_per_image(model, context.config.params)
    return None
