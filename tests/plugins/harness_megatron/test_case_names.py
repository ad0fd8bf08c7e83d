"""The Megatron-LM matrix case names: parsing, checks and the seed table's layouts."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness_megatron.case_names import SEED_MATRIX, parse_case_name
from harness_megatron.cases import matrix_case

# (case, nodes, gpus per node, dp, tp, pp, micro batch, accumulation, global batch, hidden,
#  heads, layers): the seed's test-case table, row by row.
SEED_TABLE = [
    ("DP_1x1x1_2_1536x16", 1, 1, 1, 1, 1, 2, 1, 2, 1536, 16, 16),
    ("DP_8x1x1_16_1536x16", 1, 8, 8, 1, 1, 2, 1, 16, 1536, 16, 16),
    ("DP_16x1x1_32_1536x16", 2, 8, 16, 1, 1, 2, 1, 32, 1536, 16, 16),
    ("DP_32x1x1_64_1536x16", 4, 8, 32, 1, 1, 2, 1, 64, 1536, 16, 16),
    ("MP_1x1x1_8_768x12", 1, 1, 1, 1, 1, 8, 1, 8, 768, 12, 12),
    ("MP_1x8x1_16_1536x16", 1, 8, 1, 8, 1, 16, 1, 16, 1536, 16, 16),
    ("MP_1x16x1_16_3072x16", 2, 8, 1, 16, 1, 16, 1, 16, 3072, 32, 16),
    ("MP_1x32x1_16_3072x32", 4, 8, 1, 32, 1, 16, 1, 16, 3072, 32, 32),
    ("2D_8x1x1_16_1536x16", 1, 8, 8, 1, 1, 2, 1, 16, 1536, 16, 16),
    ("2D_1x8x1_16_1536x16", 1, 8, 1, 8, 1, 16, 1, 16, 1536, 16, 16),
    ("2D_2x4x1_16_1536x16", 1, 8, 2, 4, 1, 8, 1, 16, 1536, 16, 16),
    ("2D_4x2x1_16_1536x16", 1, 8, 4, 2, 1, 4, 1, 16, 1536, 16, 16),
    ("2D_2x8x1_16_2304x24", 2, 8, 2, 8, 1, 8, 1, 16, 2304, 24, 24),
    ("2D_4x8x1_32_2304x24", 4, 8, 4, 8, 1, 8, 1, 32, 2304, 24, 24),
    ("DP_PP_8x1x4_512_1536x16", 4, 8, 8, 1, 4, 2, 32, 512, 1536, 16, 16),
    ("MP_PP_1x8x4_512_2304x24", 4, 8, 1, 8, 4, 16, 32, 512, 2304, 24, 24),
    ("2D_PP_2x4x4_512_2304x24", 4, 8, 2, 4, 4, 8, 32, 512, 2304, 24, 24),
    ("2D_PP_2x8x2_512_2304x24", 4, 8, 2, 8, 2, 8, 32, 512, 2304, 24, 24),
]


@pytest.mark.parametrize("row", SEED_TABLE, ids=[r[0] for r in SEED_TABLE])
def test_seed_table_rows(row):
    name, nodes, gpn, dp, tp, pp, mbs, accum, gbs, hidden, heads, layers = row
    case = parse_case_name(name)
    assert (case.dp, case.tp, case.pp, case.global_batch) == (dp, tp, pp, gbs)
    assert (case.hidden, case.heads, case.layers) == (hidden, heads, layers)
    assert (case.micro_batch, case.micro_batches_per_step) == (mbs, accum)
    assert case.layout() == (nodes, gpn)
    spec = matrix_case(case)
    assert spec.settings["nproc"] == gpn and spec.settings["nnodes"] == nodes
    assert spec.settings["micro_batch_size"] == mbs and spec.settings["grad_accum_steps"] == accum
    assert spec.params["tensor_parallel_degree"] == tp and spec.params["pipeline_parallel_degree"] == pp
    assert spec.params["seq_len"] == 2048


def test_the_matrix_is_the_seed_table():
    assert set(SEED_MATRIX) == {row[0] for row in SEED_TABLE}


@pytest.mark.parametrize("bad, message", [
    ("DP_8x1_16_1536x16", "not a Megatron matrix case name"),
    ("XX_1x1x1_2_1536x16", "not a Megatron matrix case name"),
    ("DP_1x1x1_2_1000x16", "hidden size 1000"),
    ("PP_1x1x3_6_1536x16", "not a Megatron matrix case name"),
    ("DP_PP_1x1x3_512_1536x16", "do not split into 3 pipeline stages"),
    ("MP_1x32x1_16_1536x16", "16 heads do not split over tensor parallel 32"),
    ("DP_3x1x1_16_1536x16", "global batch 16 does not split"),
    ("DP_0x1x1_2_1536x16", "at least 1"),
])
def test_bad_names_say_what_is_wrong(bad, message):
    with pytest.raises(UserInputError, match=message):
        parse_case_name(bad)
