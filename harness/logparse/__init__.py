"""Log ingestion: detect a training log's format, parse it line by line, aggregate, ingest.

``harness parse`` is the command-line front end (``harness/cli/parse.py``).
"""
