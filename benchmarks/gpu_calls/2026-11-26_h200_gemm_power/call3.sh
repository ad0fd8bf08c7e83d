#!/bin/bash
# Call 3, one H100 (nvidia-h100-x1): the GEMM-algorithm benchmark once more after its command
# line was tidied (9342547), at small settings; a check that it runs, figures not used.
timeout 120 python3 benchmarks/bench_gemm_algorithms_at_power_cap.py --model gpt3_125M --micro-batch 4 \
  --algos 2 --warm-s 0.2 --measure-s 0.3 --json-out $OUT/check.json 2>&1 | tail -4
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows']; print(len(r), 'rows')" $OUT/check.json
