"""Built-in case catalog and dataset preparation, shared by every framework plugin."""
