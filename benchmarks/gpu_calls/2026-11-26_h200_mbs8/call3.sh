#!/bin/bash
# Call 3, one H100 80 GB (nvidia-h100-x1): the same side by side with the GPU's clocks as call 2,
# at the H100 layout of 2026-11-25 (8 x 8: Megatron-core's micro batch 16 does not fit 80 GB)
# and at 8 x 1. The side-by-side table now shows each run's SM clock and power-capped share.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv,noheader
HARNESS_PROFILE_STEPS=2 step side_by_side_8x8 230 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 8 --set micro_batch_size=8 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_8x8.json
HARNESS_PROFILE_STEPS=5 step side_by_side_8x1 200 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 30 --skip-steps 10 --grad-accum 1 --set micro_batch_size=8 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_8x1.json
for f in /tmp/side_by_side_8x8.out /tmp/side_by_side_8x1.out; do grep -A3 "^framework" $f; done
profiles > $OUT/profiles.txt; grep "busy\|kernel time" $OUT/profiles.txt
tar czf $OUT/monitors.tgz results/*/monitor.csv
