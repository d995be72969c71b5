"""Trace state is per thread: eager work in one thread is never captured by a trace running in another.

Before, the trace stack was process-wide: while one thread traced (a jit compile, a grad), other threads' eager ops
were traced too (a data-loading thread doing `jnp.asarray(batch) / 255.0` beside a training loop raised
TracerArrayConversionError), and with a tiny switch interval the whole process could end up broken.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


@pytest.fixture
def fast_switching():
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(saved)


def _run_threads(n: int, work) -> list:
    errors: list = []
    start = threading.Barrier(n)

    def target(k):
        try:
            start.wait()
            work(k)
        except BaseException as err:  # noqa: BLE001 -- reported by the test
            errors.append((k, err))

    threads = [threading.Thread(target=target, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_eager_ops_beside_a_tracing_thread_stay_eager(fast_switching):
    """A 'data loader' converts batches eagerly while other threads trace jit first calls and grads."""
    batch = np.arange(784, dtype=np.uint8).reshape(28, 28)

    def work(k):
        rng = np.random.default_rng(k)
        for i in range(1000):
            kind = (k + i) % 3
            if kind == 0:  # eager ops, checking the values
                x = jnp.asarray(batch) / 255.0
                assert type(x) is fluxion.Array
                np.testing.assert_allclose(np.asarray(x), batch / 255.0, rtol=1e-6)
            elif kind == 1:  # a first call of a new jitted function (traces), then a cached call
                scale = float(rng.integers(1, 5))
                f = fluxion.jit(lambda x, s=scale: jnp.tanh(x) * s + jnp.sum(x))
                v = rng.standard_normal(8).astype(np.float32)
                np.testing.assert_allclose(np.asarray(f(v)), np.tanh(v) * scale + v.sum(), rtol=1e-5, atol=1e-5)
            else:  # a grad (linearize + transpose trace in this thread)
                v = rng.standard_normal(4).astype(np.float32)
                g = fluxion.grad(lambda x: jnp.sum(jnp.sin(x) * x))(v)
                np.testing.assert_allclose(np.asarray(g), np.cos(v) * v + np.sin(v), rtol=1e-5, atol=1e-6)

    errors = _run_threads(8, work)
    assert not errors, errors[:3]
    # The process is healthy afterwards: nothing is left tracing.
    assert fluxion._src.core.all_eager.value
    assert float(jnp.asarray(2.0) * 3) == 6.0


def test_a_thread_inside_jit_tracing_does_not_capture_another_threads_ops(fast_switching):
    inside = threading.Event()
    release = threading.Event()
    results: dict = {}

    def slow_body(x):
        inside.set()
        release.wait(10)  # hold the trace open while the other thread computes
        return x + 1

    def tracer_thread(_):
        results["jit"] = float(fluxion.jit(slow_body)(1.0))

    def eager_thread(_):
        inside.wait(10)
        y = jnp.ones(3) * 2  # would have been staged into slow_body's jaxpr before
        results["eager"] = np.asarray(y).tolist()
        release.set()

    t1 = threading.Thread(target=tracer_thread, args=(0,))
    t2 = threading.Thread(target=eager_thread, args=(1,))
    t1.start()
    t2.start()
    t1.join(20)
    t2.join(20)
    assert results == {"jit": 2.0, "eager": [2.0, 2.0, 2.0]}
