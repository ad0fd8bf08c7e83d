"""The cpu vendor: runs anywhere, the embedded default."""
