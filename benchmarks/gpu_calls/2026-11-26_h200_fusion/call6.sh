#!/bin/bash
# Call 6, one H200 (needs_h200): the Triton gradient accumulation kernel (grad_accumulate.py).
# Its test on the GPU, its speed against torch's add_ over gpt3_6.7B's matrices, then gpt3_6.7B
# bf16 (vendor defaults, fusion on) and fp8 over 30 steps on the same machine (fp8's torchao
# linears hand autograd bf16 weight gradients, which the kernel now adds), and fp8 at micro
# batch 4 x 4 (the same global batch; fewer accumulations), speed only.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -m pytest -q -p no:cacheprovider tests/plugins/harness_pytorch/test_grad_accumulate.py 2>&1 | tail -3
python3 benchmarks/bench_grad_accumulate.py --model gpt3_6.7B --repeats 20 --json-out $OUT/grad_accumulate_gpt3_6.7B.json
A="--vendor nvidia --case gpt3_6.7B --max-steps 30 --set skip_steps=10"
step bf16_6.7B 195 $H run $A
step fp8_6.7B 195 $H run $A --precision fp8
step fp8_mbs4_6.7B 125 $H run --vendor nvidia --case gpt3_6.7B --max-steps 12 --set skip_steps=4 \
  --precision fp8 --set micro_batch_size=4 --set grad_accum_steps=4
tar czf $OUT/results.tgz results
