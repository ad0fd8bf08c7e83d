#!/bin/bash
# 2 x H100, call 2: the headline on the whole machine (2 GPUs: the x1x2 vendor config, the
# planner's choice for 80 GB), then certification with a 2-GPU layout, signed and verified.
source "$(dirname "$0")/common.sh"
step head 330 $H run --vendor nvidia --case gpt3_6.7B --max-steps 4 --set skip_steps=1
grep -E "host optimizer|training:|planner|estimated" /tmp/head.out | head -6
$H certify keygen --out /tmp/k/h100x2 > /dev/null 2>&1
step cert 240 $H certify run --vendor nvidia --suite benchmarks/certify/gpu_2gpu.toml --env current --key /tmp/k/h100x2.key --output certifications
grep -v "^step\|━" /tmp/cert.out | tail -14
bundle=$(tail -1 /tmp/cert.out)
$H certify verify "$bundle" --pubkey /tmp/k/h100x2.pub > /tmp/verify.out 2>&1; echo "verify rc=$?"; tail -3 /tmp/verify.out
cp /tmp/k/h100x2.pub /tmp/verify.out $OUT/
tar czf $OUT/results.tgz results certifications
