"""Framework-neutral log formats owned by the core: FlagPerf, MLPerf, generic keyword mode,
NGC TensorFlow (which has no framework plugin of its own) and Megatron-LM iteration lines
(printed by the PyTorch and the Megatron-core plugins alike)."""
