"""Shared pytest configuration for the fluxion test suite.

Seed handling: every test that asks for the `rng` fixture gets a `numpy.random.Generator` seeded from the base
seed (`--seed N`, or the `FLUXION_TEST_SEED` environment variable, default 0) combined with a stable hash of the
test's node id, so each test sees its own reproducible stream and the stream does not depend on test order or on
how pytest-xdist distributes tests. Failing tests print the seed to pass back with `--seed`.

This file deliberately imports neither fluxion nor jax: collecting tests for one area must not import (or fail on)
another area's dependencies, and real JAX is only ever imported by the tests that use it as an oracle.
"""

from __future__ import annotations

import os
import zlib

# jit compiles fused kernels on a background thread and switches to them when ready; tests compile them before
# the first call instead, so a jitted function gives the same bits on every call of a test run.
os.environ.setdefault("FLUXION_JIT_SYNC_KERNELS", "1")
# The whole-step tier compiles a program for seconds in the background; tests of other things should not pay for
# it (nor see a call switch tiers midway): tests/compiler/test_whole_step.py turns it on where it is tested.
os.environ.setdefault("FLUXION_JIT_WHOLE_STEP", "0")

import numpy as np
import pytest

try:  # Hypothesis is an optional test dependency; without it the property tests skip themselves.
    from hypothesis import HealthCheck, settings

    # Property tests run fluxion's Python-level tracing; keep example counts modest so the suite stays fast, and
    # disable deadlines because the first example of a run pays import and cache-warming costs.
    settings.register_profile("fluxion", max_examples=40, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("fluxion-thorough", max_examples=400, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("FLUXION_HYPOTHESIS_PROFILE", "fluxion"))
except ImportError:  # pragma: no cover
    pass


def pytest_addoption(parser):
    parser.addoption("--seed", action="store", type=int, default=None,
                     help="base seed for the `rng` fixture (default: $FLUXION_TEST_SEED or 0)")


def _base_seed(config) -> int:
    opt = config.getoption("--seed", default=None)
    if opt is not None:
        return int(opt)
    return int(os.environ.get("FLUXION_TEST_SEED", "0"))


def pytest_report_header(config):
    return f"fluxion test seed: {_base_seed(config)} (override with --seed N or FLUXION_TEST_SEED)"


@pytest.fixture
def seed(request) -> int:
    """A per-test seed: the base seed mixed with a CRC of the node id (stable across runs and processes)."""
    base = _base_seed(request.config)
    return (base * 1_000_003 + zlib.crc32(request.node.nodeid.encode())) % (2 ** 32)


@pytest.fixture
def rng(seed) -> np.random.Generator:
    """A NumPy random generator seeded per test (see the module docstring)."""
    return np.random.default_rng(seed)


@pytest.fixture
def without_fusion_check(monkeypatch):
    """Turns the fused tier's check mode (`FLUXION_CHECK_FUSION=1`) off for one test: for tests of the default
    thresholds and of the exact code each tier generates, which check mode changes on purpose."""
    from fluxion import config

    monkeypatch.delenv("FLUXION_CHECK_FUSION", raising=False)
    with config.override("fluxion_check_fusion", False):  # restores the option read from the environment
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "seed" in getattr(item, "fixturenames", ()):
        base = _base_seed(item.config)
        report.sections.append(("fluxion seed", f"base seed {base}; rerun with --seed {base}"))
