#!/bin/bash
# Call 2 (the H100 that call 1 got): Megatron-core at micro batch 16 ran out of memory on 80 GB,
# so both frameworks at micro batch 8 x 8, each with a kernel profile of step 3 (outside the
# measured steps 4-10).
source "$(dirname "$0")/common.sh"
HARNESS_PROFILE_STEPS=3 step side_by_side_mbs8 330 python3 benchmarks/bench_gpt_pytorch_vs_megatron.py \
  --case gpt3_1.3B --max-steps 10 --skip-steps 3 --grad-accum 8 --set micro_batch_size=8 \
  --output results --json-out $OUT/side_by_side_gpt3_1.3B_mbs8_call_2.json
tail -6 $OUT/side_by_side_mbs8.out
profiles > $OUT/profiles.txt; cat $OUT/profiles.txt | head -70
tar czf $OUT/results.tgz results
