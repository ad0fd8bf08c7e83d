"""Recorded results out of harness: CSV / JSON Lines tables and TensorBoard event files."""
