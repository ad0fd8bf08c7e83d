"""A results folder of hand-made runs covering every part of a report."""

from __future__ import annotations

import pytest

from tests.harness.report.factory import make_result, record

# (nproc, precision, batch) -> FINAL_RESULT, tokens/s
VALUES = {
    (1, "fp32", 4): 1000.0, (1, "fp32", 8): 1200.0, (1, "bf16", 4): 1500.0, (1, "bf16", 8): 1800.0,
    (2, "fp32", 4): 1800.0, (2, "fp32", 8): 2280.0, (2, "bf16", 4): 2700.0, (2, "bf16", 8): 3240.0,
}


def megatron_lines(values: list[float], batch: int, seq_len: int = 128) -> list[str]:
    """Megatron-LM iteration lines whose throughput is ``values`` (tokens/s) step by step."""
    lines = []
    for step, tokens_per_s in enumerate(values, start=1):
        ms = batch * seq_len / tokens_per_s * 1000.0
        lines.append(f" iteration {step:8d}/{len(values):8d} | consumed samples: {step * batch} | "
                     f"elapsed time per iteration (ms): {ms:.3f} | learning rate: 1.0E-03 | "
                     f"global batch size: {batch:5d} | lm loss: {7.0 - step * 0.1:.6E} |")
    return lines


#: Relative per-step variation, repeated over the measured steps: about 1% and about 5%.
QUIET = (1.0, 1.01, 0.99, 1.005, 0.995)
NOISY = (1.0, 1.06, 0.94, 1.03, 0.97, 1.05, 0.95)


def step_log(value: float, pattern: tuple[float, ...], batch: int, steps: int = 20) -> list[str]:
    """A training log: 5 warm-up steps (the factory's skip_steps), then ``steps`` measured
    steps around ``value``, varying by ``pattern``."""
    warmup = [value * f for f in (0.3, 0.6, 0.8, 0.9, 0.95)]
    return megatron_lines(warmup + [value * pattern[i % len(pattern)] for i in range(steps)], batch)


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    for index, ((nproc, precision, batch), value) in enumerate(VALUES.items()):
        repeats = [value * 0.9, value, value * 1.1] if (nproc, precision, batch) == (1, "fp32", 8) else None
        result = make_result(f"run-{index}", value=value, repeats=repeats, nproc=nproc,
                             precision=precision, batch=batch, minutes=index)
        warmup = [value * 0.3, value * 0.6, value * 0.8, value * 0.9, value * 0.95]
        steady = [value * f for f in (1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.0, 1.02, 0.98, 1.0,
                                      1.01, 0.99, 1.0, 1.0, 1.0)]
        record(root, result, sweep={"sweep": "grid", "group": None, "label": None, "point": index + 1,
                                    "points": 8},
               log_lines=megatron_lines(warmup + steady, batch * nproc))
    # a parallel-layout sweep (named groups): goes to the latency table
    for index, (case, nproc, tp, latency) in enumerate([("DP_1x1x1_2_1536x16", 1, 1, 0.464),
                                                         ("MP_1x2x1_16_1536x16", 2, 2, 0.692)]):
        result = make_result(f"layout-{index}", value=5000.0 / (index + 1), case=case, nproc=nproc,
                             framework="megatron", params={"seq_len": 2048, "tensor_parallel_degree": tp},
                             step_median_s=latency, peak_memory_mib=14362.0 - index * 1000,
                             minutes=20 + index)
        record(root, result, sweep={"sweep": "megatron", "group": ["DP", "MP"][index], "label": None,
                                    "point": index + 1, "points": 2})
    record(root, make_result("broken", value=None, status="failed", batch=16, minutes=30))
    # an older failed attempt of an existing configuration: the success represents it
    record(root, make_result("old-attempt", value=None, status="failed", nproc=1, precision="fp32",
                             batch=4, minutes=-10))
    return root
