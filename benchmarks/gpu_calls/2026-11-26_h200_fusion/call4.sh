#!/bin/bash
# Call 4, one H100 80 GB (the same machine as call 3): gpt3_1.3B with its defaults (fusion now on;
# it ran at micro batch 16 x 4, which fits 80 GB), then the same without the fusion (A/B).
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step default_1.3B 120 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3
step fusion_off_1.3B 120 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3 \
  --set gradient_accumulation_fusion=false
tar czf $OUT/results.tgz results
