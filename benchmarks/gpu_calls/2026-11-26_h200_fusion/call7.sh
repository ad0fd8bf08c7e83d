#!/bin/bash
# Call 7, one H200 (needs_h200): a bf16 seed band for the fp8 loss check of call 6 (gpt3_6.7B,
# vendor defaults: micro batch 2 x 8, global batch 16, 30 steps): bf16 with seeds 1235 and 1236
# (call 6's bf16 run is seed 1234), and fp8 with seed 1235.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
A="--vendor nvidia --case gpt3_6.7B --max-steps 30 --set skip_steps=10"
step bf16_seed1235 185 $H run $A --set seed=1235
step bf16_seed1236 185 $H run $A --set seed=1236
step fp8_seed1235 185 $H run $A --set seed=1235 --precision fp8
tar czf $OUT/results.tgz results
