"""The typer CLI: one module per command group, thin commands over library functions."""
