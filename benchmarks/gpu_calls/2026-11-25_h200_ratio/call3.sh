#!/bin/bash
# Call 3, one H200 (needs_h200: Megatron-core's gpt3_6.7B takes 129 GiB): both frameworks on
# gpt3_6.7B at the vendor's settings (micro batch 2 x 8) and gpt3_1.3B (16 x 4), each with a
# kernel profile of step 3, outside the measured steps.
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
HARNESS_PROFILE_STEPS=3 step side_by_side_6.7B 330 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_6.7B --max-steps 8 --skip-steps 3 --grad-accum 8 --set micro_batch_size=2 \
  --output results --json-out $OUT/side_by_side_gpt3_6.7B_call_3.json
tail -4 $OUT/side_by_side_6.7B.out
HARNESS_PROFILE_STEPS=3 step side_by_side_1.3B 220 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_3.json
tail -4 $OUT/side_by_side_1.3B.out
profiles > $OUT/profiles.txt; grep -B1 -A9 "GPU kernel time" $OUT/profiles.txt
tar czf $OUT/results.tgz results
