"""The nvidia vendor: NVIDIA GPUs discovered through NVML."""
