#!/bin/bash
# Call 1, one H200 (needs_h200): the step results read back one step late (no device idle at
# step ends), the bias of three of the four block linears added in the following compiled
# kernel instead of cuBLAS's epilogue; A/B against the previous commit's code (carried in
# .ab/base, run from there), and gpt3_1.3B side by side with Megatron-core. Pieces timed alone
# first (bench_gpt_block_pieces.py). Every run profiles steps 2-3, outside the measured steps.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
step pieces_1.3B 150 python3 benchmarks/bench_gpt_block_pieces.py --model gpt3_1.3B --micro-batch 16 \
  --json-out $OUT/pieces_gpt3_1.3B.json
grep "ms" /tmp/pieces_1.3B.out | cut -c1-160
B=$PWD/.ab/base  # the previous commit's harness, plugins and vendors, run from their own folder
BASE="env -C $B PYTHONPATH=$B:$B/plugins:$B/vendors:/tmp/site"
RUN="run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3"
HARNESS_PROFILE_STEPS=2-3 step base_1.3B_a 110 $BASE $H $RUN
HARNESS_PROFILE_STEPS=2-3 step side_by_side_1.3B 190 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_1.json
tail -4 $OUT/side_by_side_1.3B.out
HARNESS_PROFILE_STEPS=2-3 step base_1.3B_b 110 $BASE $H $RUN
mkdir -p $OUT/base; cp -r .ab/base/results/* $OUT/base/ 2>/dev/null
profiles > $OUT/profiles.txt; (cd .ab/base && profiles) > $OUT/profiles_base.txt
grep -A8 "GPU kernel time" $OUT/profiles.txt $OUT/profiles_base.txt | grep -v "^--" | head -60
grep -h "elapsed time per iteration" results/*/train.log .ab/base/results/*/train.log | tail -3 | cut -c1-200
tar czf $OUT/results.tgz results .ab/base/results
