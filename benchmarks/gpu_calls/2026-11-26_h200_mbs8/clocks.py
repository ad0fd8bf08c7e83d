"""Print each result's throughput beside its GPU clocks over the measured steps (call 2)."""
import json
import sys

for path in sys.argv[1:]:
    result = json.load(open(path))
    metrics = result.get("device_metrics") or {}
    value = (result.get("throughput") or {}).get("value")
    print(f"{result['run_id']}: {result['framework']:9s} {value or 0:>10,.0f} tokens/s | SM clock "
          f"{metrics.get('training_sm_clock_mhz')} MHz (max {metrics.get('max_sm_clock_mhz')}) | "
          f"power-capped {metrics.get('training_power_capped_pct')}% | thermal "
          f"{metrics.get('training_thermal_limited_pct')}% | busy power {metrics.get('busy_power_w')} W | "
          f"utilisation {metrics.get('training_utilization_pct')} over {metrics.get('training_span_s')} s")
