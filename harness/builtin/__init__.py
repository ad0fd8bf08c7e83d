"""Hook implementations of the core itself (registered like any other plugin)."""
