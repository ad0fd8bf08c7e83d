#!/bin/bash
# One H100, after merging the shared optimizer step (torch_setup.optimizer_step) and the compute
# capability: NVML's capability, and the fp16 loss-scaler paths of BERT, ResNet-50 and GPT on CUDA.
export HARNESS_CACHE_DIR=/tmp/hcache HARNESS_NVIDIA_MONITOR_INTERVAL_S=0.5
python3 -c "from harness_nvidia.nvml_devices import discover, load_nvml; n = load_nvml(); print([(d.name, d.compute_capability) for d in discover(n).devices])"
run() { echo "=== $*"; timeout 150 python3 -m harness run --vendor nvidia "$@" 2>&1 | grep -E "status|reason|FINAL_RESULT|MFU|peak memory|run folder|rror"; }
run --case bert_base_seq128 --precision fp16 --batch-size 96 --max-steps 60 --set skip_steps=20 --set compile=false
run --case resnet50 --precision fp16 --max-steps 60 --set skip_steps=20 --set channels_last=true
run --case gpt3_125M --precision fp16 --set master_weights=model --max-steps 30 --set skip_steps=10
grep -h "lm loss" results/*gpt3_125M*/train.log | sed -E 's/.*iteration +([0-9]+).*lm loss: ([0-9.E+-]+).*loss scale: ([0-9.]+).*skipped iterations: +([0-9]+).*/\1 \2 \3 \4/' | tr '\n' ';'; echo
tar czf $OUT/results.tgz results
