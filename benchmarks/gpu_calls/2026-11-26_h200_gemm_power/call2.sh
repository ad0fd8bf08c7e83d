#!/bin/bash
# Call 2, one H100 80 GB (nvidia-h100-x1): the headline command with the code as it stands at the
# end of the work on #16 (the memory planner picks offload=cpu; fusion on; the Triton
# accumulation kernel for the head's gradients; the monitor's clocks), as on 2026-11-26 call 3.
source "$(dirname "$0")/../2026-11-25_h200_ratio/common.sh"
nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv,noheader
git log --oneline -1 2>/dev/null
step headline_6.7B 330 $H run --vendor nvidia --case gpt3_6.7B --max-steps 5 --set skip_steps=2
grep -h "memory plan\|device clocks\|loss" /tmp/headline_6.7B.out | head -8
tar czf $OUT/results.tgz results
