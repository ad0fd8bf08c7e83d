# Sourced by this session's one-H200 call scripts: environment, and a helper that runs one
# command with a time limit, prints its summary lines and keeps its whole output under $OUT.
export HARNESS_CACHE_DIR=/tmp/hcache HARNESS_NVIDIA_MONITOR_INTERVAL_S=0.5 PYTHONUNBUFFERED=1
H="python3 -m harness"
step() {
  local name=$1 limit=$2; shift 2
  local start=$(date +%s)
  timeout "$limit" "$@" > /tmp/$name.out 2>&1
  local rc=$?
  echo "== $name rc=$rc took $(( $(date +%s) - start )) s"
  grep -v "^step\|━" /tmp/$name.out | grep -E "FINAL_RESULT|MFU|peak memory|status|rror|run folder|training:|x$|framework " | head -14
  cp /tmp/$name.out $OUT/
}
# The profile lines of every run's training log.
profiles() { for f in results/*/train.log; do grep -q "> profile" "$f" && { echo "# $f"; grep "> profile\|>   " "$f"; }; done; }
