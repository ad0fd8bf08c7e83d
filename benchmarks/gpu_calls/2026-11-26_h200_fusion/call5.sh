#!/bin/bash
# Call 5, two H100s (nvidia-h100-x2): gpt3_1.3B with its defaults on both GPUs (data parallel,
# the ranks' flat fp32 gradients averaged once per optimizer step; the fusion now on, so the
# matrix products accumulate into the buffer that is all-reduced), then without the fusion (A/B).
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step default_1.3B_x2 150 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3
step fusion_off_1.3B_x2 150 $H run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3 \
  --set gradient_accumulation_fusion=false
grep -ho "gradient accumulation fusion [^,]*\|> training: [^,]*" results/*/train.log | sort | uniq -c
tar czf $OUT/results.tgz results
