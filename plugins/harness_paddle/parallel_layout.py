"""FlagPerf parallel config names -> a Paddle fleet hybrid-parallel layout, checked per device.

FlagPerf names its Paddle GPT configs ``config_TP{t}PP{p}SH{stage}SP{degree}<hardware>x<nnodes>x<nproc>``,
e.g. ``config_TP2PP1SH1SP4A10080Gx1x8``: tensor parallel 2, pipeline parallel 1, sharding
stage 1 over 4 ranks (the remaining factor of the world size is data parallel).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from harness.errors import UnavailableError, UserInputError
from harness_cases.gpt_knobs import GptKnobs

_NAME = re.compile(r"TP(\d+)PP(\d+)SH(\d+)SP(\d+)")


class ParallelLayout(BaseModel):
    tensor_parallel_degree: int = Field(1, ge=1)
    pipeline_parallel_degree: int = Field(1, ge=1)
    sharding_stage: int = Field(0, ge=0, le=3)
    sharding_degree: int = Field(1, ge=1)

    @property
    def hybrid(self) -> bool:
        return (self.tensor_parallel_degree > 1 or self.pipeline_parallel_degree > 1
                or self.sharding_degree > 1)

    def data_parallel_degree(self, world: int) -> int:
        return world // (self.tensor_parallel_degree * self.pipeline_parallel_degree * self.sharding_degree)

    def describe(self) -> str:
        return (f"TP{self.tensor_parallel_degree}PP{self.pipeline_parallel_degree}"
                f"SH{self.sharding_stage}SP{self.sharding_degree}")


def parse_config_name(name: str) -> ParallelLayout | None:
    """The layout a FlagPerf config name encodes, or None when the name encodes none."""
    match = _NAME.search(name)
    if match is None:
        return None
    tp, pp, stage, degree = (int(g) for g in match.groups())
    if min(tp, pp, degree) < 1 or stage > 3:
        raise UserInputError(f"config {name!r}: TP/PP/SP degrees must be >= 1 and SH a sharding stage 0-3")
    return ParallelLayout(tensor_parallel_degree=tp, pipeline_parallel_degree=pp,
                          sharding_stage=stage, sharding_degree=degree)


#: The GPT knobs that make a parallel layout.
LAYOUT_KNOBS = ("tensor_parallel_degree", "pipeline_parallel_degree", "sharding_stage",
                "sharding_degree")


def layout_from_params(params: dict) -> ParallelLayout:
    # Any case's params (BERT's too): only the layout knobs are read.
    knobs = GptKnobs.of({key: params.get(key) for key in LAYOUT_KNOBS})
    return ParallelLayout(
        tensor_parallel_degree=knobs.tensor_parallel_degree,
        pipeline_parallel_degree=knobs.pipeline_parallel_degree,
        sharding_stage=knobs.sharding_stage,
        sharding_degree=knobs.sharding_degree or 1,  # the cases leave it 0: one group
    )


def resolve_layout(config_name: str | None, params: dict, *, model: str, device_kind: str,
                   world: int) -> ParallelLayout:
    """The layout of a run, refusing with a clear message what this device/model cannot run."""
    from_name = parse_config_name(config_name) if config_name else None
    from_params = layout_from_params(params)
    if from_name is not None and from_params.hybrid and from_params != from_name:
        raise UserInputError(
            f"config {config_name} encodes {from_name.describe()} but the parameters ask for "
            f"{from_params.describe()}; drop the conflicting --set or pick another config")
    layout = from_name or from_params
    where = f"config {config_name}" if from_name else "the layout of the case parameters"
    if not layout.hybrid:
        return layout
    if device_kind == "cpu":
        raise UnavailableError(
            f"{where} asks for {layout.describe()}: tensor/pipeline parallel and sharding need GPUs "
            "with NCCL; on the cpu vendor the Paddle plugin runs data parallel only (TP1PP1SH0SP1)"
        )
    if model != "gpt":
        raise UnavailableError(
            f"{where} asks for {layout.describe()}: the Paddle {model} script trains data parallel "
            "only; hybrid layouts are implemented for GPT")
    if layout.pipeline_parallel_degree > 1:
        raise UnavailableError(
            f"{where} asks for pipeline parallel degree {layout.pipeline_parallel_degree}: the harness "
            "Paddle GPT has no pipeline stages; use a PP1 config (TP and sharding are supported)")
    product = layout.tensor_parallel_degree * layout.pipeline_parallel_degree * layout.sharding_degree
    if world % product:
        raise UserInputError(
            f"{where} asks for TP {layout.tensor_parallel_degree} x PP {layout.pipeline_parallel_degree}"
            f" x sharding {layout.sharding_degree} = {product} ranks, which does not divide the "
            f"{world} processes of this run")
    if layout.sharding_degree > 1 and layout.sharding_stage == 0:
        raise UserInputError(f"{where}: sharding degree {layout.sharding_degree} needs a sharding stage 1-3")
    return layout
