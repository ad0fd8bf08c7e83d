#!/bin/bash
# Call 2, one H200 (needs_h200): the monitor now records the SM clock and NVML's clock event
# reasons. gpt3_1.3B side by side with Megatron-core at the vendor's layout (16 x 4) and at the
# case's micro batch without accumulation (8 x 1), each run's clocks over its measured steps;
# a warm-up step of each run profiled (HARNESS_PROFILE_STEPS) for the busy share.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv,noheader
HARNESS_PROFILE_STEPS=2 step side_by_side_16x4 200 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_16x4.json
HARNESS_PROFILE_STEPS=5 step side_by_side_8x1 200 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 30 --skip-steps 10 --grad-accum 1 --set micro_batch_size=8 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_8x1.json
grep -h "throughput:" /tmp/side_by_side_16x4.out /tmp/side_by_side_8x1.out
python3 benchmarks/gpu_calls/2026-11-26_h200_mbs8/clocks.py results/*/result.json
profiles > $OUT/profiles.txt; grep "busy\|kernel time" $OUT/profiles.txt
tar czf $OUT/monitors.tgz results/*/monitor.csv results/*/train.log
