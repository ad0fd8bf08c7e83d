#!/bin/bash
# Call 1, one H200 (needs_h200): gpt3_1.3B side by side with Megatron-core at the case's own
# micro batch (8) without gradient accumulation -- the settings of the 1.148x of 2026-11-21 and
# the issue's 1.146x of 2026-11-23 -- from the committed code, twice; the second pair with a warm-up
# step (5) profiled per run (HARNESS_PROFILE_STEPS) for the GPU's busy share.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step side_by_side_mbs8_a 280 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 30 --skip-steps 10 --grad-accum 1 --set micro_batch_size=8 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_mbs8_a.json
tail -4 $OUT/side_by_side_mbs8_a.out
HARNESS_PROFILE_STEPS=5 step side_by_side_mbs8_b 280 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 30 --skip-steps 10 --grad-accum 1 --set micro_batch_size=8 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_mbs8_b.json
tail -4 $OUT/side_by_side_mbs8_b.out
profiles > $OUT/profiles.txt; grep "busy\|kernel time" $OUT/profiles.txt
mkdir -p $OUT/runs && for d in results/*/; do n=$(basename $d); cp $d/result.json $OUT/runs/$n.result.json 2>/dev/null; done
ls $OUT/runs
