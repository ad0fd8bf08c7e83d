"""Models survive a JSON round trip (the results database stores them as JSON)."""

from __future__ import annotations

from harness.config_resolution import resolve_config
from harness.models import ResolvedConfig
from harness_cases.gpt_cases import gpt3_case


def test_resolved_config_round_trips_with_computed_fields():
    config = resolve_config(gpt3_case("gpt3_125M"), framework="pytorch", vendor="cpu", scale="smoke")
    text = config.model_dump_json()
    assert '"config_hash"' in text and '"global_batch_size"' in text
    again = ResolvedConfig.model_validate_json(text)
    assert again == config and again.config_hash == config.config_hash
