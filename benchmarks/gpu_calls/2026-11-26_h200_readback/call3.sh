#!/bin/bash
# Call 3, one H200 (needs_h200): the MLP's bias + GeLU as Triton kernels (bias_gelu.py). Their
# test on the GPU, the pieces timed alone, then gpt3_1.3B A/B against the previous commit's code
# (.ab/base) and side by side with Megatron-core; gpt3_6.7B A/B if time is left.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
step pytest_on_gpu 120 python3 -m pytest -q -p no:cacheprovider tests/plugins/harness_pytorch/test_bias_gelu.py
tail -3 /tmp/pytest_on_gpu.out
step pieces_1.3B 150 python3 benchmarks/bench_gpt_block_pieces.py --model gpt3_1.3B --micro-batch 16 \
  --json-out $OUT/pieces_gpt3_1.3B.json
grep "ms" /tmp/pieces_1.3B.out | cut -c30-170
B=$PWD/.ab/base  # the previous commit's harness, plugins and vendors, run from their own folder
BASE="env -C $B PYTHONPATH=$B:$B/plugins:$B/vendors:/tmp/site"
RUN="run --vendor nvidia --case gpt3_1.3B --max-steps 10 --set skip_steps=3"
HARNESS_PROFILE_STEPS=2 step base_1.3B 110 $BASE $H $RUN
HARNESS_PROFILE_STEPS=2 step side_by_side_1.3B 190 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 4 --set micro_batch_size=16 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_call_3.json
tail -4 $OUT/side_by_side_1.3B.out
if [ $SECONDS -lt 330 ]; then
  RUN67="run --vendor nvidia --case gpt3_6.7B --max-steps 8 --set skip_steps=3"
  step base_6.7B 120 $BASE $H $RUN67
  step new_6.7B 120 $H $RUN67
fi
mkdir -p $OUT/base; cp -r .ab/base/results/* $OUT/base/ 2>/dev/null
profiles > $OUT/profiles.txt; (cd .ab/base && profiles) > $OUT/profiles_base.txt
grep -A8 "GPU kernel time" $OUT/profiles.txt $OUT/profiles_base.txt | grep -v "^--" | head -40
tar czf $OUT/results.tgz results .ab/base/results
