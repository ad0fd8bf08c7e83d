"""The run's progress bar: its phase before the first step, an ETA; the summary box wraps."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from harness.cli.progress import WARMUP_PHASE, ConsoleObserver, eta_seconds, format_duration
from harness.cli.summary import print_summary
from harness.app import Harness
from tests.harness.report.conftest import megatron_lines
from tests.harness.report.factory import make_result

CONTEXT = SimpleNamespace(config=SimpleNamespace(params={"seq_len": 128}),
                          case=SimpleNamespace(unit="tokens/s"))


def _registry():
    return Harness.load(load_entrypoints=False).registry


def test_phases_before_the_first_step():
    observer = ConsoleObserver(_registry(), console=Console(file=io.StringIO(), force_terminal=True))
    try:
        observer.stage("environment", "framework pytorch")
        assert observer.phase == "environment: framework pytorch"
        observer.stage("data", "dataset gpt-npy")
        assert observer.phase == "data: dataset gpt-npy"
        observer.start_repeat(CONTEXT, 3, "megatron")
        assert observer.phase == WARMUP_PHASE and observer.progress.tasks[0].total == 3
        observer.on_line(megatron_lines([1000.0], batch=8)[0] + "\n")
        assert observer.phase == "training" and observer.progress.tasks[0].completed == 1
        columns = [type(c).__name__ for c in observer.progress.columns]
        assert "TimeRemainingColumn" in columns and "SpinnerColumn" in columns
    finally:
        observer.end_repeat()
    assert observer.progress is None


def test_plain_output_names_the_phase_and_an_eta():
    buffer = io.StringIO()
    observer = ConsoleObserver(_registry(), console=Console(file=buffer, force_terminal=False, width=200))
    observer.start_repeat(CONTEXT, 10, "megatron")
    for line in megatron_lines([1000.0] * 3, batch=8):
        observer.on_line(line + "\n")
    observer.end_repeat()
    text = buffer.getvalue()
    assert f"{WARMUP_PHASE}: waiting for the first of 10 steps" in text
    assert "step 1/10" in text and "ETA -:--" in text  # no pace yet after one step


def test_eta():
    assert eta_seconds(1, 100.0, 1, 100.0, 10) is None
    assert eta_seconds(1, 100.0, 5, 108.0, 10) == 10.0  # 2 s per step, 5 steps left
    assert eta_seconds(1, 100.0, 10, 120.0, 10) == 0.0
    assert format_duration(None) == "-:--" and format_duration(75) == "1:15"
    assert format_duration(3725) == "1:02:05"


def test_summary_box_wraps_long_paths():
    long_dir = Path("/very/long/results/folder/" + "nested-" * 20 + "run-folder")
    report = SimpleNamespace(result=make_result("wrap-run", value=100.0), run_dir=long_dir,
                             legacy_path=long_dir / "index" / "legacy")
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=80, force_terminal=False))
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text  # folded, not cut
    joined = "".join(line.strip("│ ").strip() for line in text.splitlines())
    assert str(long_dir).replace(" ", "") in joined.replace(" ", "")


def test_summary_shows_the_device_utilisation_over_the_training_span():
    result = make_result("util-run", value=100.0)
    result.device_metrics = {"training_utilization_pct": [97.6, 63.2], "training_span_s": 41.5}
    report = SimpleNamespace(result=result, run_dir=Path("/r"), legacy_path=Path("/r/index/x"))
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=160, force_terminal=False))
    assert "63% lowest of 2 while training (42 s, first to last busy sample)" in buffer.getvalue()
    result.device_metrics["training_span_source"] = "measured steps"
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=160, force_terminal=False))
    assert "63% lowest of 2 while training (42 s, the measured steps)" in buffer.getvalue()
    result.device_metrics = {}  # no monitor (cpu vendor): no row
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=160, force_terminal=False))
    assert "device utilisation" not in buffer.getvalue()


def test_summary_shows_the_slowest_gpus_clock_and_how_often_it_was_held_down():
    result = make_result("clock-run", value=100.0)
    result.device_metrics = {"training_sm_clock_mhz": [1812.4, 1755.0], "max_sm_clock_mhz": [1980, 1980],
                             "training_power_capped_pct": [40.0, 62.5],
                             "training_thermal_limited_pct": [0.0, 0.0]}
    report = SimpleNamespace(result=result, run_dir=Path("/r"), legacy_path=Path("/r/index/x"))
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=200, force_terminal=False))
    assert ("SM 1,755 MHz mean while training, lowest of 2 (max 1,980); power cap 62% of samples, "
            "thermal or hardware slowdown 0% of samples") in buffer.getvalue()
    result.device_metrics = {"training_sm_clock_mhz": [None]}  # the queries unsupported: no row
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=200, force_terminal=False))
    assert "device clocks" not in buffer.getvalue()


def test_summary_names_where_the_modified_keys_were_set():
    result = make_result("modified-run", value=100.0)
    result.modified = ["learning_rate", "max_steps", "skip_steps"]
    result.config.sources = {"learning_rate": "cli", "max_steps": "sweep:explore.toml",
                             "skip_steps": "sweep:explore.toml"}
    report = SimpleNamespace(result=result, run_dir=Path("/r"), legacy_path=Path("/r/index/x"))
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=200, force_terminal=False))
    assert ("learning_rate set on the command line; max_steps, skip_steps set in sweep file "
            "explore.toml: not measured over the case's own window") in buffer.getvalue()


def _summary_text(result, width: int = 200) -> str:
    report = SimpleNamespace(result=result, run_dir=Path("/r"), legacy_path=Path("/r/index/x"))
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=width, force_terminal=False))
    return buffer.getvalue()


def test_summary_flags_noise_where_the_number_is():
    from harness.report.noise import DEFAULT_NOISE_THRESHOLD

    noisy = _summary_text(make_result("noisy-run", value=100.0, step_cv=0.492))
    assert f"CV 49.2% (noisy: above {DEFAULT_NOISE_THRESHOLD:.0%})" in noisy
    quiet = _summary_text(make_result("quiet-run", value=100.0, step_cv=DEFAULT_NOISE_THRESHOLD))
    assert "CV 3.0%" in quiet and "noisy" not in quiet  # at the threshold: not above it
    repeats = _summary_text(make_result("repeat-run", value=100.0, repeats=[90.0, 100.0, 110.0]))
    assert "90.0, 100.0, 110.0 (CV 10.0% (noisy: above 3%))" in repeats


def test_summary_says_what_model_smoke_scale_ran():
    """Smoke scale shrinks every GPT case to one model: the summary says so, with the case's
    own values."""
    registry = _registry()
    result = make_result("smoke-run", value=100.0, case="gpt3_6.7B")
    assert result.config.scale == "smoke"
    report = SimpleNamespace(result=result, run_dir=Path("/r"), legacy_path=Path("/r/index/x"))
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=400, force_terminal=False), registry=registry)
    text = buffer.getvalue()
    assert ("gpt3_6.7B (smoke scale: num_layers 2 (case: 32), hidden_size 128 (case: 4096), num_heads 4 "
            "(case: 32), seq_len 256 (case: 2048), vocab_size 2048 (case: 50304); the same model as "
            "gpt3_1.3B, gpt3_125M, gpt3_13B, gpt3_2.7B, gpt3_350M at smoke scale)") in text
    full = make_result("full-run", value=100.0, case="gpt3_6.7B")
    full = full.model_copy(update={"config": full.config.model_copy(update={"scale": "full"})})
    report.result = full
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=400, force_terminal=False), registry=registry)
    assert "gpt3_6.7B (full scale)" in buffer.getvalue()


def test_summary_names_the_health_rules_passed_and_not_judged():
    from harness.health import judge_health

    result = make_result("health-run", value=100.0)
    # 14 steps at the start of a long warm-up: below uniform is not judged.
    losses = [11.29, 11.29, 11.28, 11.27, 11.25, 11.24, 11.22, 11.21, 11.19, 11.17, 11.15, 11.13, 11.12, 11.1]
    result.health = judge_health(list(enumerate(losses, start=1)), skip_steps=4, uniform_loss=10.83,
                                 learning_rates=[(step, 2e-4 * step / 22889) for step in range(1, 15)],
                                 peak_learning_rate=2e-4)
    report = SimpleNamespace(result=result, run_dir=Path("/r"), legacy_path=Path("/r/index/x"))
    buffer = io.StringIO()
    print_summary(report, console=Console(file=buffer, width=200, force_terminal=False))
    assert "healthy (finite, no spike, falling; not judged: below uniform)" in buffer.getvalue()
