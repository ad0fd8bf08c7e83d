#!/bin/bash
# Call 2, one H200 (needs_h200): gpt3_1.3B side by side with Megatron-core without gradient
# accumulation (micro batch 16, one micro-batch a step: the condition of the issue's 1.146x of
# 2026-11-23), beside call 1's vendor-settings pair (16 x 4), from the committed code.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step side_by_side_1.3B_accum1 240 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 30 --skip-steps 10 --grad-accum 1 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_accum1_call_2.json
tail -4 $OUT/side_by_side_1.3B_accum1.out
grep -h "gradient accumulation fusion\|> training" results/*/train.log | cut -c1-220
tar czf $OUT/results.tgz results
