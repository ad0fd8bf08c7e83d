#!/bin/bash
# Call 1, one H200 (needs_h200): the gradient accumulation fusion as traceable custom operators
# (0 graph breaks), first measured on a GPU. gpt3_1.3B side by side with Megatron-core with the
# fusion on, the PyTorch plugin with it off on the same machine (A/B), and gpt3_6.7B side by side
# at the vendor's settings (fusion on). Every run profiles step 3, outside the measured steps.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
HARNESS_PROFILE_STEPS=3 step side_by_side_1.3B 170 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --set gradient_accumulation_fusion=true --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_1.json
tail -4 $OUT/side_by_side_1.3B.out
HARNESS_PROFILE_STEPS=3 step fusion_off_1.3B 90 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 \
  --set skip_steps=3 --set micro_batch_size=16 --set grad_accum_steps=4 \
  --set recompute=none --set gradient_accumulation_fusion=false
HARNESS_PROFILE_STEPS=3 step side_by_side_6.7B 280 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_6.7B --max-steps 8 --skip-steps 3 --grad-accum 8 --set micro_batch_size=2 \
  --output results --json-out $OUT/side_by_side_gpt3_6.7B_call_1.json
tail -4 $OUT/side_by_side_6.7B.out
grep -ho "gradient accumulation fusion [^,]*" results/*/train.log | sort | uniq -c
profiles > $OUT/profiles.txt; grep -A10 "GPU kernel time" $OUT/profiles.txt | grep -v "^--" | head -60
tar czf $OUT/results.tgz results
