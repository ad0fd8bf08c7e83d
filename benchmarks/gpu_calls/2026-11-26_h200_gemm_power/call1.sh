#!/bin/bash
# Call 1, one H200 (needs_h200): both frameworks train gpt3_1.3B at the H200's 700 W power cap,
# so a step's speed is its energy per token. Does any of cuBLASLt's candidate algorithms for
# the block's and the head's products do more work per joule than the one cuBLAS picks?
# Each product back to back for 2 s per candidate (0.5 s untimed), energy from NVML.
nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv,noheader
timeout 420 python3 benchmarks/bench_gemm_algorithms_at_power_cap.py --model gpt3_1.3B --micro-batch 16 \
  --algos 6 --json-out $OUT/gemm_algorithms_gpt3_1.3B_mb16.json 2>&1 | tee $OUT/gemm_algorithms.out
