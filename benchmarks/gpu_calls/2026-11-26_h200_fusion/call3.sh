#!/bin/bash
# Call 3, one H100 80 GB: the headline with its defaults, where the memory planner picks
# offload=cpu and the vendor config now has gradient accumulation fusion on (into the offloaded
# optimizer's flat fp32 gradients on the GPU: first run on a GPU), then the same without it (A/B).
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step headline_6.7B 270 $H run --vendor nvidia --case gpt3_6.7B --max-steps 5 --set skip_steps=2
step fusion_off_6.7B 270 $H run --vendor nvidia --case gpt3_6.7B --max-steps 5 --set skip_steps=2 \
  --set gradient_accumulation_fusion=false
grep -h "gradient accumulation fusion\|memory plan" results/*/train.log results/*/*.log 2>/dev/null | sort | uniq -c | head
tar czf $OUT/results.tgz results
