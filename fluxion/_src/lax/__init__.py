"""Primitives, one family per module, each with its rules for every transformation beside it."""
