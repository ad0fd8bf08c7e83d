#!/bin/bash
# Call 2, one H200 (needs_h200): does Inductor's GEMM autotuning (Triton matrix-product templates
# with the GeLU / bias epilogues fused, benchmarked against cuBLAS per shape) cut gpt3_1.3B's
# GPU work? The fused linears are opaque custom operators Inductor cannot tune, so the tuned run
# has the fusion off; both fusion settings run untuned on the same machine as baselines.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
ARGS="--vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3 --set micro_batch_size=16 --set grad_accum_steps=4 --set recompute=none"
HARNESS_PROFILE_STEPS=3 step fusion_on_1.3B 80 $H run $ARGS --set gradient_accumulation_fusion=true
HARNESS_PROFILE_STEPS=3 step fusion_off_1.3B 80 $H run $ARGS --set gradient_accumulation_fusion=false
HARNESS_PROFILE_STEPS=3 TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1 step autotuned_gemm_1.3B 380 $H run $ARGS \
  --set gradient_accumulation_fusion=false
profiles > $OUT/profiles.txt; grep -A10 "GPU kernel time" $OUT/profiles.txt | grep -v "^--" | head -40
tar czf $OUT/results.tgz results
