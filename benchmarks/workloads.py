"""Workload bodies, one function per (workload, framework); each returns seconds per operation (median).

Run in a fresh process per (workload, framework) by `benchmarks/run.py`, so imports and caches never mix.
"""

from __future__ import annotations

import statistics
import time


def _timeit(fn, repeat: int = 7, number: int = 1000) -> float:
    fn()  # warm up (and compile)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def _modules(framework: str):
    if framework == "fluxion":
        import fluxion as jax
        import fluxion.numpy as jnp
    elif framework == "jax":
        import jax
        import jax.numpy as jnp
    else:
        raise ValueError(framework)
    return jax, jnp


def eager_add(framework: str, size: int = 1000) -> float:
    """Eager `x + y` on `size` float32 elements: seconds per op."""
    import numpy as np
    if framework == "numpy":
        x = np.ones(size, np.float32)
        y = np.ones(size, np.float32)
        return _timeit(lambda: x + y)
    if framework == "torch":
        import torch
        x = torch.ones(size)
        y = torch.ones(size)
        return _timeit(lambda: x + y)
    jax, jnp = _modules(framework)
    x = jnp.ones(size, dtype=jnp.float32)
    y = jnp.ones(size, dtype=jnp.float32)
    return _timeit(lambda: (x + y).block_until_ready())


def jit_call(framework: str) -> float:
    """A jitted function of three small arrays: seconds per call (dispatch overhead)."""
    import numpy as np
    if framework == "numpy":
        a, b, c = (np.ones(10, np.float32) for _ in range(3))
        return _timeit(lambda: a * b + c)
    if framework == "torch":
        import torch
        a, b, c = (torch.ones(10) for _ in range(3))
        return _timeit(lambda: a * b + c)
    jax, jnp = _modules(framework)
    f = jax.jit(lambda a, b, c: a * b + c)
    a, b, c = (jnp.ones(10, dtype=jnp.float32) for _ in range(3))
    return _timeit(lambda: f(a, b, c).block_until_ready())


def selu_jit(framework: str, size: int = 1_000_000) -> float:
    """The tutorial's selu on 1e6 float32, jitted (eager for numpy/torch): seconds per call."""
    import numpy as np
    x_np = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    if framework == "numpy":
        return _timeit(lambda: 1.05 * np.where(x_np > 0, x_np, 1.67 * np.exp(x_np) - 1.67), number=20)
    if framework == "torch":
        import torch
        x = torch.from_numpy(x_np)
        return _timeit(lambda: 1.05 * torch.where(x > 0, x, 1.67 * torch.exp(x) - 1.67), number=20)
    jax, jnp = _modules(framework)
    f = jax.jit(lambda x: 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67))
    x = jnp.asarray(x_np)
    return _timeit(lambda: f(x).block_until_ready(), number=20)


WORKLOADS = {
    "eager_add_1k_us": (eager_add, ("fluxion", "jax", "numpy", "torch"), 1e6),
    "jit_call_3_small_us": (jit_call, ("fluxion", "jax", "numpy", "torch"), 1e6),
    "selu_1e6_ms": (selu_jit, ("fluxion", "jax", "numpy", "torch"), 1e3),
}
