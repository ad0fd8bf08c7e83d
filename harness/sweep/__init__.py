"""Sweeps: a matrix of runs from the command line or a TOML file, planned against the
plugins (skipped with a reason where this machine cannot run a point, skipped as done where
the results database already has it) and executed one after another, failures isolated."""
