"""Backends turn primitives into computation; nothing above this package computes with NumPy directly."""
