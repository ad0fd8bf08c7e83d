"""The Paddle framework plugin package (log formats, framework plugin)."""
