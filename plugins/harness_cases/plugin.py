"""Registers the built-in cases and prepares their datasets."""

from __future__ import annotations

from harness import hookimpl
from harness.models import DatasetInfo
from harness.models.context import RunContext
from harness_cases.gpt_cases import gpt3_cases


@hookimpl
def register_cases(register) -> None:
    for case in gpt3_cases():
        register(case)


@hookimpl
def prepare_data(context: RunContext) -> DatasetInfo | None:
    if context.case.dataset != "gpt-npy":
        return None
    from harness_cases.gpt_data import ensure_gpt_dataset

    vocab = int(context.config.params["vocab_size"])
    seed = context.config.settings.seed
    folder, files, created = ensure_gpt_dataset(context.data_dir, vocab, seed)
    return DatasetInfo(
        kind="gpt-npy",
        path=str(folder),
        files=files,
        synthesized=True,
        seed=seed,
        description=("synthesised now" if created else "reused") + " (PaddleNLP *_ids.npy/*_idx.npz)",
    )
