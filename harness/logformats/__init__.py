"""Framework-neutral log formats owned by the core: FlagPerf, MLPerf, generic keyword mode,
and NGC TensorFlow (which has no framework plugin of its own)."""
