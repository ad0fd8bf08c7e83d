#!/bin/bash
# 2 x H100, call 4: the headline with 128 accumulated micro-batches a rank (global batch 512
# sequences, 1M tokens: half GPT-3 6.7B's), the host step amortised twice as far as with 64;
# then Megatron-core on gpt3_1.3B with 2 GPUs beside the PyTorch plugin's call-1 figure.
source "$(dirname "$0")/common.sh"
step head128 420 $H run --vendor nvidia --case gpt3_6.7B --max-steps 4 --set skip_steps=1 --set grad_accum_steps=128
grep -hE "host optimizer|iteration  " results/*6.7B*/*.log | cut -c1-200
step mega13 110 $H run --vendor nvidia --framework megatron --case gpt3_1.3B --nproc 2 --max-steps 14 --set skip_steps=4
tar czf $OUT/results.tgz results
