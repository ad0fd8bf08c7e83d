#!/bin/bash
# One H200, call 1: gpt3_1.3B, PyTorch plugin against Megatron-core at the vendor's settings
# (bf16, micro batch 16 x 4), each with a kernel profile of step 3 (outside the measured steps
# 4-10); then the PyTorch plugin with Inductor's coordinate-descent tuning of its fused kernels.
source "$(dirname "$0")/common.sh"
HARNESS_PROFILE_STEPS=3 step side_by_side 330 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_1.json
TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1 step coordinate_descent 200 $H run --vendor nvidia \
  --case gpt3_1.3B --max-steps 10 --set skip_steps=3
profiles > $OUT/profiles.txt; cat $OUT/profiles.txt | head -60
tar czf $OUT/results.tgz results
