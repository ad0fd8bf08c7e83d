#!/bin/bash
# 2 x H100, call 3: the seed's Megatron-LM matrix cases that fit 2 GPUs (the two 1-GPU seed
# cases, whose V100 latency and memory the seed gives) and 2-GPU DP / TP layouts of its model.
source "$(dirname "$0")/common.sh"
for c in DP_1x1x1_2_1536x16 MP_1x1x1_8_768x12 DP_2x1x1_4_1536x16 MP_1x2x1_16_1536x16; do
  step $c 120 $H run --vendor nvidia --framework megatron --case $c --max-steps 30 --set skip_steps=10
done
step DP_PP_2x1x2 150 $H run --vendor nvidia --framework megatron --case DP_PP_2x1x2_512_1536x16 --max-steps 8 --set skip_steps=3
tar czf $OUT/results.tgz results
