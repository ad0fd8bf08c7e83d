"""Reading training logs: detect a log's format, parse it line by line, aggregate.

Below the result layer: turning a reading into a result and recording it is
:mod:`harness.ingest` (behind ``harness parse``, ``harness/cli/parse.py``).
"""
