"""Runnable examples: `python -m fluxion.examples.mnist`."""
