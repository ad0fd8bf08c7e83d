#!/usr/bin/env bash
# Loss curves of the GPT cases on one GPU each, two runs at a time on a 2-GPU machine
# (H100 80 GB or H200), every run's result in one results folder.
#
#   bash benchmarks/gpu_loss_curves.sh [RESULTS_DIR] [PHASE...]
#
# Phases (default: 1):
#   1  gpt3_1.3B, its 100 steps, bf16, the nvidia defaults (optimizer-held fp32 masters, micro batch
#      16 x 4): in GPU memory on GPU 0 and with the optimizer in host memory (offload=cpu, same
#      micro batches) on GPU 1, at the same time. About 2.0 s a step on either card (tokens/s in
#      benchmarks/results/), 100 steps plus start-up: about 4 minutes on GPU 0, 4.5 on GPU 1
#      (the host AdamW over 1.3 B parameters adds about 0.5 s a step).
#   2  gpt3_1.3B fp8, 50 steps, on GPU 0 (about 2 minutes), and the short gpt3_6.7B check on
#      GPU 1: STEPS_6P7B steps (default 12) with the nvidia defaults. On an H200 that is the
#      in-GPU layout (about 2.4 s a step: 2 minutes with compilation); on an 80 GB H100 the
#      memory planner offloads it (64 micro-batches, about 21 s a step: 12 steps take about
#      5 minutes, so pass STEPS_6P7B=6 there to stay near 3).
# Phase 1 alone fits about 5 minutes of wall time, phases 1 and 2 about 8 on an H200.
#
# Each phase ends by printing its loss curves side by side (`harness results curves`): every
# 10th step as a Markdown table, then every step as tab-separated text. The same curves are in
# each run's result.json: log_summary.loss_curve and log_summary.learning_rate_curve
# ([step, value] pairs), and the run's health verdict in health (status and reasons).
# The run ids are in RESULTS_DIR/loss_curves_phase<N>.ids. Logs: RESULTS_DIR/<run id>/train.log.
# For BENCHMARKS.md: copy the result.json files under benchmarks/results/<gpu>/ and name them
# in a `kind = "curves"` table of benchmarks/tables.toml, then run `harness benchmarks`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/loss_curves}
shift || true
PHASES=${*:-1}
HARNESS=${HARNESS:-python3 -m harness}
STEPS_6P7B=${STEPS_6P7B:-12}
# A rehearsal on a machine without GPUs: VENDOR=cpu EXTRA="--scale smoke" bash benchmarks/gpu_loss_curves.sh
VENDOR=${VENDOR:-nvidia}
EXTRA=${EXTRA:-}
mkdir -p "$OUT"
PIDS=()

# run GPU NAME ARGS...: one harness run on one GPU, in the background; its JSON result in
# $OUT/NAME.json and its console output in $OUT/NAME.console.
run() {
  local gpu=$1 name=$2
  shift 2
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$gpu $HARNESS run --vendor "$VENDOR" --output "$OUT" --json $EXTRA "$@" \
    >"$OUT/$name.json" 2>"$OUT/$name.console" &
  PIDS+=($!)
}

# finish PHASE NAME...: wait for the phase's runs, then print their curves.
finish() {
  local phase=$1 status=0 ids=()
  shift
  for pid in "${PIDS[@]}"; do
    wait "$pid" || status=$?
  done
  PIDS=()
  for name in "$@"; do
    local id
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$OUT/$name.json" 2>/dev/null) \
      || { echo "phase $phase: $name left no result; see $OUT/$name.console" >&2; status=1; continue; }
    ids+=("$id")
    echo "$name $id" >>"$OUT/loss_curves_phase$phase.ids"
  done
  if [ ${#ids[@]} -gt 0 ]; then
    echo "== phase $phase: loss, every 10th step"
    $HARNESS results curves "${ids[@]}" --output "$OUT" --every 10 --markdown
    echo "== phase $phase: learning rate, every 10th step"
    $HARNESS results curves "${ids[@]}" --output "$OUT" --curve learning_rate --every 10 --markdown
    echo "== phase $phase: loss, every step"
    $HARNESS results curves "${ids[@]}" --output "$OUT"
    for id in "${ids[@]}"; do
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); h=r.get("health") or {}; print(r["run_id"], r["status"], "health:", h.get("status"), "; ".join(h.get("reasons", [])))' "$OUT/$id/result.json"
    done
  fi
  return $status
}

failed=0
for phase in $PHASES; do
  case $phase in
    1)
      run 0 gpt3_1.3B_bf16 --case gpt3_1.3B
      run 1 gpt3_1.3B_bf16_offload --case gpt3_1.3B --set offload=cpu --set grad_accum_steps=4
      finish 1 gpt3_1.3B_bf16 gpt3_1.3B_bf16_offload || failed=1
      ;;
    2)
      run 0 gpt3_1.3B_fp8 --case gpt3_1.3B --max-steps 50 --precision fp8
      run 1 gpt3_6.7B_bf16 --case gpt3_6.7B --max-steps "$STEPS_6P7B"
      finish 2 gpt3_1.3B_fp8 gpt3_6.7B_bf16 || failed=1
      ;;
    *)
      echo "unknown phase $phase (valid: 1 2)" >&2
      exit 2
      ;;
  esac
done
exit $failed
