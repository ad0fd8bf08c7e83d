#!/bin/bash
# Call 5, one H200 (needs_h200): the three single-kernel benchmarks after they came to share
# benchmarks/cuda_timing.py (same timing: CUDA-event medians of 20 after warm-up), as a check
# that they still run, and second samples of call 1-4's pieces.
python3 benchmarks/bench_grad_accumulate.py --model gpt3_1.3B --repeats 20
python3 benchmarks/bench_gpt_block_pieces.py --model gpt3_1.3B --micro-batch 16 --json-out $OUT/pieces_gpt3_1.3B.json
python3 benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_1.3B --micro-batch 16 --json-out $OUT/gelu_epilogue_gpt3_1.3B.json
