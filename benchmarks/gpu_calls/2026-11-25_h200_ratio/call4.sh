#!/bin/bash
# Call 4, one H200 (needs_h200): gradient accumulation fusion in the PyTorch plugin. gpt3_1.3B
# and gpt3_6.7B side by side with Megatron-core at the vendor's settings (fusion on, profile of
# step 3), and gpt3_6.7B with the fusion off on the same machine (A/B).
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
HARNESS_PROFILE_STEPS=3 step side_by_side_1.3B 170 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_4.json
tail -4 $OUT/side_by_side_1.3B.out
step fusion_off_6.7B 140 $H run --vendor nvidia --case gpt3_6.7B --max-steps 8 --set skip_steps=3 \
  --set gradient_accumulation_fusion=false
HARNESS_PROFILE_STEPS=3 step side_by_side_6.7B 260 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_6.7B --max-steps 8 --skip-steps 3 --grad-accum 8 --set micro_batch_size=2 \
  --output results --json-out $OUT/side_by_side_gpt3_6.7B_call_4.json
tail -4 $OUT/side_by_side_6.7B.out
grep -ho "gradient accumulation fusion [^,]*" results/*/train.log | sort | uniq -c
profiles > $OUT/profiles.txt; grep -A10 "GPU kernel time" $OUT/profiles.txt | grep -v "^--" | head -60
tar czf $OUT/results.tgz results
