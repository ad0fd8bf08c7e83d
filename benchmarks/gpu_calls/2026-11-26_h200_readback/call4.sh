#!/bin/bash
# Call 4, one H200 (needs_h200): the MLP's GeLU in cuBLASLt's GELU_AUX_BIAS and DGELU_BGRAD
# epilogues against a product plus Inductor's GeLU kernels, at gpt3_1.3B (micro batch 16) and
# gpt3_6.7B (micro batch 2) shapes. (Run as one command line; a first attempt without the
# wheels on PYTHONPATH failed at import.)
python3 benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_1.3B --micro-batch 16 --json-out $OUT/gelu_epilogue_gpt3_1.3B.json
python3 benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_6.7B --micro-batch 2 --json-out $OUT/gelu_epilogue_gpt3_6.7B.json
