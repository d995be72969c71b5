"""The source of representative fused kernels, pinned byte for byte.

The on-disk kernel cache is keyed by the hash of each kernel's source, so a change in the generated text -- even
one that computes the same values -- makes every cached kernel recompile (seconds each). The files in
`pinned_kernels/` hold what `kernel.build` (and the one-hot matcher) produced for these groups; a deliberate change of
the generated code updates them (and bumps `fusion.MATHLIB_VERSION` if the helpers changed).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends.compiler import fusion, passes

PINNED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pinned_kernels")
f32 = np.float32


def _select_relu_like(x, b):
    return jnp.where(x + b > 0, x * b, jnp.exp(x) - 1.0)


def _with_sum(y):
    return y, jnp.sum(y)


def _sum_and_max(e):
    return jnp.sum(e, axis=1), jnp.max(e, axis=1)


CASES = {
    # elementwise, a row vector broadcast along the first axis
    "elementwise_broadcast": (_select_relu_like, np.ones((64, 128), f32), np.ones((128,), f32)),
    # contiguous 3-D arrays merged into one parallel loop
    "parallel_merged_3d": (lambda x, y: jnp.tanh(x) * y + 1.0, np.ones((8, 256, 256), f32), np.ones((8, 256, 256), f32)),
    # iotas along both axes
    "iota": (lambda x: x * lax.broadcasted_iota(np.int32, (128, 64), 1) + lax.broadcasted_iota(np.int32, (128, 64), 0),
             np.ones((128, 64), np.int32)),
    # KR: row-wise reductions
    "kr_rowwise": (lambda x: jnp.max(x * 2.0 + 1.0, axis=1), np.ones((256, 64), f32)),
    "kr_abs_sum_and_min": (lambda x: (jnp.sum(jnp.abs(x), axis=(1, 2)), jnp.min(x - 1.0, axis=(1, 2))),
                           np.ones((64, 16, 8), f32)),
    "kr_shared_two_reductions": (lambda x: _sum_and_max(jnp.exp(x) + 1.0), np.ones((128, 64), f32)),
    # R: full reductions, chunked; with an elementwise output written through the chunk's view; a scalar input
    "r_full": (lambda x: jnp.sum(x * x - 1.0), np.ones((1 << 14,), f32)),
    "r_chunked_with_output": (lambda x: _with_sum(jnp.exp(x) * 2.0), np.ones((1 << 15,), f32)),
    "r_with_elementwise_output_parallel": (lambda x, s: (x * s + 2.0, jnp.sum(x * s)), np.ones((1 << 17,), f32),
                                           np.float32(3.0)),
    # RK: column-wise reductions, a row of partial accumulators per chunk; integer sum and boolean max
    "rk_columnwise": (lambda x: jnp.sum(x * 3.0, axis=0), np.ones((1000, 100), f32)),
    "rk_int_and_bool": (lambda x: (jnp.sum(x * 2, axis=0), jnp.max(x > 3, axis=0)), np.ones((4096, 3), np.int32)),
    # the one-hot scatter kernel
    "one_hot": (lambda y: (jnp.arange(10)[None, :] == y[:, None]).astype(f32), np.zeros((6000,), np.int32)),
}


@contextlib.contextmanager
def _default_thresholds():
    config = fluxion.config
    with config.override("fluxion_check_fusion", False), config.override("jax_enable_x64", False), \
            config.override("fluxion_fuse_min_elements", 1 << 12), \
            config.override("fluxion_small_group_min_ops", 8), config.override("fluxion_parallel_min_work", 1 << 18):
        yield


def _kernel_sources(fun, *args) -> list[str]:
    # Calls inlined first, as `backends.compile`'s optimization does (jnp functions such as `where` are staged as
    # `jit` calls); the other passes are left out so the pinned kernels show the planner's own work.
    closed = passes.inline_calls(fluxion.make_jaxpr(fun)(*args))
    pairs, _ = fusion.Planner(load=False).specs(fusion.prepare(closed))
    return [spec.source for _, spec in pairs]


def _pinned(name: str) -> list[str]:
    out = []
    while os.path.exists(path := os.path.join(PINNED, f"{name}_{len(out)}.py.txt")):
        with open(path) as f:
            out.append(f.read())
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_source_is_unchanged(name):
    fun, *args = CASES[name]
    with _default_thresholds():
        got = _kernel_sources(fun, *args)
    want = _pinned(name)
    assert want, f"no pinned source for {name}"
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w
