#!/bin/bash
# Call 6, one H200 (needs_h200): a run check of the three single-kernel benchmarks after they came
# to share their command line and JSON writing (benchmarks/cuda_timing.py); 5 repeats each, the
# figures not used (call 5 has the 20-repeat samples).
python3 benchmarks/bench_gpt_block_pieces.py --model gpt3_1.3B --micro-batch 16 --repeats 5 --json-out $OUT/p.json
python3 benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_1.3B --micro-batch 16 --repeats 5 --json-out $OUT/e.json
python3 benchmarks/bench_grad_accumulate.py --model gpt3_1.3B --repeats 5
