"""Executing launches and turning their outcome into results."""
