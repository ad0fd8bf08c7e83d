"""The MXNet framework plugin package (log formats, framework plugin)."""
