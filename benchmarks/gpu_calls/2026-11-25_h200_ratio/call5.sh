#!/bin/bash
# Call 5, one H200: gpt3_1.3B (vendor default, micro batch 16 x 4) with gradient accumulation
# fusion on and off on the same machine (A/B).
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step fusion_on_1.3B 120 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3
step fusion_off_1.3B 120 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3 \
  --set gradient_accumulation_fusion=false
tar czf $OUT/results.tgz results
