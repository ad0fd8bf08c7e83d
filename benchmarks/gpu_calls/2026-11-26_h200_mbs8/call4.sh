#!/bin/bash
# Call 4, one H200 (needs_h200): gpt3_6.7B side by side with Megatron-core at the vendor layout
# (2 x 8), with the GPU's clocks (the side-by-side table's last two columns).
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv,noheader
step side_by_side_6.7B 560 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_6.7B --max-steps 8 --skip-steps 3 --grad-accum 8 --set micro_batch_size=2 \
  --output results --json-out $OUT/side_by_side_gpt3_6.7B_2x8.json
grep -A3 "^framework" /tmp/side_by_side_6.7B.out
tar czf $OUT/monitors.tgz results/*/monitor.csv
