# Sourced by the 2-GPU call scripts: environment and a helper that runs one command with a
# time limit, prints its summary lines and keeps its whole output under $OUT.
export HARNESS_CACHE_DIR=/tmp/hcache HARNESS_NVIDIA_MONITOR_INTERVAL_S=0.5 PYTHONUNBUFFERED=1
H="python3 -m harness"
step() {
  local name=$1 limit=$2; shift 2
  local start=$(date +%s)
  timeout "$limit" "$@" > /tmp/$name.out 2>&1
  local rc=$?
  echo "== $name rc=$rc took $(( $(date +%s) - start )) s"
  grep -v "^step\|━" /tmp/$name.out | grep -E "FINAL_RESULT|MFU|peak memory|status|error|Error|planner|estimated|run folder|steps  |training:|host optimizer|scaling|node" | head -14
  cp /tmp/$name.out $OUT/
}
