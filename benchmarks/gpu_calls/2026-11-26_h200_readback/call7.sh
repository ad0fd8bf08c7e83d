#!/bin/bash
# Call 7, one H200 (needs_h200): a run check of the two new benchmarks after the final read
# (sequence length from the case, the cuBLASLt helper without its per-device cache); 5 repeats,
# figures not used.
python3 benchmarks/bench_gpt_block_pieces.py --model gpt3_1.3B --micro-batch 16 --repeats 5 --json-out $OUT/p.json
python3 benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_1.3B --micro-batch 16 --repeats 5 --json-out $OUT/e.json
