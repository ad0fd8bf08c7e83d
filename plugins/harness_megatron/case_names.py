"""Names of the Megatron-LM test matrix: ``<group>_<dp>x<tp>x<pp>_<global batch>_<hidden>x<layers>``.

Examples from the seeds: ``DP_8x1x1_16_1536x16``, ``MP_1x8x1_16_1536x16``,
``2D_2x4x1_16_1536x16``, ``DP_PP_8x1x4_512_1536x16``. Sequence length 2048; heads as in the
seed table (64-wide heads for hidden 768, 96-wide for 1536, 2304 and 3072).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import UserInputError

GROUPS = ("DP", "MP", "2D", "DP_PP", "MP_PP", "2D_PP")
SEQ_LEN = 2048
#: hidden size -> attention heads, from the seed's case table.
HEADS = {768: 12, 1536: 16, 2304: 24, 3072: 32}
#: In the seed's pipeline-parallel cases micro batch x data parallel is 16 (32 micro-batches
#: of a global batch of 512); in the others one micro-batch per step: micro batch = gbs / dp.
PP_SAMPLES_PER_MICROBATCH_STEP = 16

_NAME = re.compile(r"^(?P<group>DP_PP|MP_PP|2D_PP|DP|MP|2D)_(?P<dp>\d+)x(?P<tp>\d+)x(?P<pp>\d+)"
                   r"_(?P<gbs>\d+)_(?P<hidden>\d+)x(?P<layers>\d+)$")


@dataclass(frozen=True)
class MatrixCase:
    name: str
    group: str
    dp: int
    tp: int
    pp: int
    global_batch: int
    hidden: int
    layers: int

    @property
    def heads(self) -> int:
        return HEADS[self.hidden]

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def micro_batch(self) -> int:
        if self.pp > 1:
            return max(1, PP_SAMPLES_PER_MICROBATCH_STEP // self.dp)
        return self.global_batch // self.dp

    @property
    def micro_batches_per_step(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)

    def layout(self, gpus_per_node: int = 8) -> tuple[int, int]:
        """(nnodes, nproc per node) as in the seed: nodes of 8 GPUs, fewer GPUs on one node."""
        if self.world_size <= gpus_per_node:
            return 1, self.world_size
        return self.world_size // gpus_per_node, gpus_per_node


def parse_case_name(name: str) -> MatrixCase:
    """Parse and check a matrix case name; UserInputError says what is wrong and what is valid."""
    match = _NAME.match(name)
    if not match:
        raise UserInputError(
            f"{name!r} is not a Megatron matrix case name. Expected <group>_<dp>x<tp>x<pp>_"
            f"<global batch>_<hidden>x<layers> with group one of {', '.join(GROUPS)}, "
            f"e.g. DP_8x1x1_16_1536x16."
        )
    g = match.groupdict()
    case = MatrixCase(name=name, group=g["group"], dp=int(g["dp"]), tp=int(g["tp"]), pp=int(g["pp"]),
                      global_batch=int(g["gbs"]), hidden=int(g["hidden"]), layers=int(g["layers"]))
    if min(case.dp, case.tp, case.pp, case.global_batch, case.layers) < 1:
        raise UserInputError(f"{name}: every size must be at least 1")
    if case.hidden not in HEADS:
        raise UserInputError(f"{name}: hidden size {case.hidden} has no head count in the seed "
                             f"table; valid: {', '.join(map(str, sorted(HEADS)))}")
    if case.layers % case.pp:
        raise UserInputError(f"{name}: {case.layers} layers do not split into {case.pp} pipeline stages")
    if case.heads % case.tp:
        raise UserInputError(f"{name}: {case.heads} heads do not split over tensor parallel {case.tp}")
    if case.global_batch % case.dp or case.global_batch % (case.micro_batch * case.dp):
        raise UserInputError(f"{name}: global batch {case.global_batch} does not split over "
                             f"data parallel {case.dp} in micro-batches of {case.micro_batch}")
    return case


#: The seed's test matrix (Megatron-LM reproduction, 8 x V100 per node), in its order.
SEED_MATRIX: tuple[str, ...] = (
    "DP_1x1x1_2_1536x16", "DP_8x1x1_16_1536x16", "DP_16x1x1_32_1536x16", "DP_32x1x1_64_1536x16",
    "MP_1x1x1_8_768x12", "MP_1x8x1_16_1536x16", "MP_1x16x1_16_3072x16", "MP_1x32x1_16_3072x32",
    "2D_8x1x1_16_1536x16", "2D_1x8x1_16_1536x16", "2D_2x4x1_16_1536x16", "2D_4x2x1_16_1536x16",
    "2D_2x8x1_16_2304x24", "2D_4x8x1_32_2304x24",
    "DP_PP_8x1x4_512_1536x16", "MP_PP_1x8x4_512_2304x24", "2D_PP_2x4x4_512_2304x24",
    "2D_PP_2x8x2_512_2304x24",
)
#: Layouts of one H200 host (1, 2 or 4 GPUs) in the same naming, so the matrix runs on the
#: machines that exist here: the seed's 1536x16 model in DP, TP and PP on 2 and 4 GPUs.
HOST_MATRIX: tuple[str, ...] = (
    "DP_2x1x1_4_1536x16", "DP_4x1x1_8_1536x16", "MP_1x2x1_16_1536x16", "MP_1x4x1_16_1536x16",
    "2D_2x2x1_16_1536x16", "DP_PP_2x1x2_512_1536x16", "DP_PP_1x1x4_512_1536x16",
)
