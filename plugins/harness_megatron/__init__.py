"""Megatron-core framework plugin: GPT with tensor, pipeline and data parallelism."""
