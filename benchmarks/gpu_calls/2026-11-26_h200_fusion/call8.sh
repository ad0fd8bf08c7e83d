#!/bin/bash
# Call 8, one H100 80 GB: gpt3_1.3B side by side with Megatron-core at micro batch 8 x 8 (16 does
# not fit Megatron-core on 80 GB), the PyTorch plugin with the fusion, as 2026-11-25's call 2
# measured it without (1.096x).
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
HARNESS_PROFILE_STEPS=3 step side_by_side_1.3B 200 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 8 --set micro_batch_size=8 \
  --set gradient_accumulation_fusion=true --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_8.json
tail -4 $OUT/side_by_side_1.3B.out
profiles > $OUT/profiles.txt; grep -A10 "GPU kernel time" $OUT/profiles.txt | grep -v "^--" | head -24
tar czf $OUT/results.tgz results
