"""Benchmarks: each workload runs for fluxion and its peers in separate processes; see `python -m benchmarks`."""
