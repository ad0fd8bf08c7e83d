#!/bin/bash
# 2 x H100, call 1: gpt3_1.3B weak scaling 1 -> 2 GPUs (vendor default config; micro batch 8 x 8
# if 16 x 4 runs out of memory beside NCCL), then a 2-node job on one host (each node one GPU).
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; nvidia-smi topo -m | head -4; nproc; free -g | sed -n 2p
step w1 200 $H run --vendor nvidia --case gpt3_1.3B --nproc 1 --max-steps 14 --set skip_steps=4
step w2 200 $H run --vendor nvidia --case gpt3_1.3B --nproc 2 --max-steps 14 --set skip_steps=4
SET=()
if grep -qi "out of memory" /tmp/w2.out; then
  SET=(--set micro_batch_size=8 --set grad_accum_steps=8)
  step w1b 150 $H run --vendor nvidia --case gpt3_1.3B --nproc 1 --max-steps 14 --set skip_steps=4 "${SET[@]}"
  step w2b 150 $H run --vendor nvidia --case gpt3_1.3B --nproc 2 --max-steps 14 --set skip_steps=4 "${SET[@]}"
fi
export MASTER_ADDR=127.0.0.1
( CUDA_VISIBLE_DEVICES=1 timeout 200 $H run --vendor nvidia --case gpt3_1.3B --nproc 1 --nnodes 2 --node-rank 1 --job-id h100pair --max-steps 14 --set skip_steps=4 "${SET[@]}" --output results_node1 > /tmp/n1.out 2>&1; echo "node1 rc=$?" >> /tmp/n1.out ) &
CUDA_VISIBLE_DEVICES=0 step n0 210 $H run --vendor nvidia --case gpt3_1.3B --nproc 1 --nnodes 2 --node-rank 0 --job-id h100pair --max-steps 14 --set skip_steps=4 "${SET[@]}"
wait
tail -4 /tmp/n1.out; cp /tmp/n1.out $OUT/
tar czf $OUT/results.tgz results results_node1
