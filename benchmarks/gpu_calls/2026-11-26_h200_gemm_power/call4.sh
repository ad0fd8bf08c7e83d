#!/bin/bash
# Call 4, one H100 (nvidia-h100-x1): after the review moved the ctypes cuBLASLt plumbing into
# benchmarks/cublaslt.py, both benchmarks that use it run once more at small settings (a check
# that they run and that their outputs still match torch's; figures not used).
timeout 120 python3 benchmarks/bench_gemm_algorithms_at_power_cap.py --model gpt3_125M --micro-batch 4 \
  --algos 2 --warm-s 0.2 --measure-s 0.3 --json-out $OUT/gemm_check.json 2>&1 | tail -3
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows']; print(len(r), 'rows, largest difference', max(x['max_rel_diff'] for x in r))" $OUT/gemm_check.json
timeout 120 python3 benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_1.3B --micro-batch 16 --repeats 5 \
  --json-out $OUT/gelu_check.json 2>&1 | tail -6
