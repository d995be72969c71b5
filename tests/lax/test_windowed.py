"""Tests of the windowed reductions (fluxion/_src/lax/windowed.py): `reduce_window` and its sum/max/min primitives.

Oracles: a loop over output positions that reads each window element by element (XLA's ReduceWindow definition:
padding and base-dilation holes never contribute, `init_value` is combined once per window), finite differences,
a Python loop for `vmap`, eager execution for `jit`, and real `jax.lax.reduce_window` where installed (including
JAX's max-pool gradient on ties, which passes the gradient to the first maximal element of each window).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src import test_util as tu
from fluxion._src.lax import windowed as lw

f32, i32 = np.dtype(np.float32), np.dtype(np.int32)

_OPS = {"sum": (lax.add, 0.0, lambda a, b: a + b), "max": (lax.max, -np.inf, max),
        "min": (lax.min, np.inf, min)}


def reduce_window_reference(x, init, op, window_dimensions, window_strides, padding, base_dilation,
                            window_dilation):
    """Loops over output positions and window offsets; skips padding and dilation holes."""
    x = np.asarray(x)
    nd = x.ndim
    sizes = [((n - 1) * b + 1 if n else 0) + lo + hi for n, b, (lo, hi) in zip(x.shape, base_dilation, padding)]
    spans = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation)]
    out_shape = [max(0, (s - sp) // st + 1) if s >= sp else 0 for s, sp, st in zip(sizes, spans, window_strides)]
    out = np.zeros(out_shape, x.dtype)
    for pos in np.ndindex(*out_shape):
        acc = init
        for off in np.ndindex(*window_dimensions):
            src = []
            for k in range(nd):
                p = pos[k] * window_strides[k] + off[k] * window_dilation[k] - padding[k][0]
                if p < 0 or p % base_dilation[k] or p // base_dilation[k] >= x.shape[k]:
                    break
                src.append(p // base_dilation[k])
            else:
                acc = op(acc, x[tuple(src)])
        out[pos] = acc
    return out


@dataclasses.dataclass(frozen=True)
class WindowCase:
    name: str
    shape: tuple
    window: tuple
    strides: tuple
    padding: object
    base_dilation: tuple | None = None
    window_dilation: tuple | None = None

    def kwargs(self):
        return dict(window_dimensions=self.window, window_strides=self.strides, padding=self.padding,
                    base_dilation=self.base_dilation, window_dilation=self.window_dilation)

    def pads(self):
        if not isinstance(self.padding, str):
            return self.padding
        wd = self.window_dilation or (1,) * len(self.shape)
        spans = [(w - 1) * d + 1 for w, d in zip(self.window, wd)]
        return lax_pads(self.shape, spans, self.strides, self.padding)

    def reference(self, x, kind, init=None):
        op_init = _OPS[kind][1] if init is None else init
        nd = len(self.shape)
        return reduce_window_reference(x, np.asarray(op_init, x.dtype).item(), _OPS[kind][2], self.window,
                                       self.strides, self.pads(), self.base_dilation or (1,) * nd,
                                       self.window_dilation or (1,) * nd)

    def fn(self, kind, init=None):
        op, op_init, _ = _OPS[kind]
        init = op_init if init is None else init
        return lambda x: lw.reduce_window(x, init, op, **self.kwargs())


def lax_pads(shape, spans, strides, padding):
    from fluxion._src.lax.convolution import padtype_to_pads
    return padtype_to_pads(shape, spans, strides, padding)


CASES = [
    WindowCase("pool_2x2", (2, 6, 4, 3), (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
    WindowCase("same_overlapping", (5, 7), (3, 2), (1, 2), "SAME"),
    WindowCase("explicit_padding", (6, 5), (2, 3), (2, 1), ((1, 2), (0, 1))),
    WindowCase("negative_padding", (7,), (2,), (1,), ((-1, 1),)),
    WindowCase("base_dilation", (4, 5), (3, 2), (2, 1), ((1, 1), (0, 0)), base_dilation=(2, 1)),
    WindowCase("window_dilation", (6, 7), (2, 3), (1, 2), "SAME", window_dilation=(2, 2)),
    WindowCase("both_dilations", (10,), (3,), (3,), "SAME", base_dilation=(2,), window_dilation=(2,)),
    WindowCase("empty_output", (2, 3), (3, 4), (1, 1), "VALID"),
]
KINDS = list(_OPS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [f32, i32], ids=lambda d: d.name)
def test_values_match_loop_reference(case, kind, dtype, rng):
    x = tu.rand_like(rng, case.shape, dtype, "int" if dtype == i32 else "normal")
    init = None if dtype == f32 else {"sum": 0, "max": np.iinfo(np.int32).min, "min": np.iinfo(np.int32).max}[kind]
    got = case.fn(kind, init)(x)
    tu.assert_allclose(got, case.reference(x, kind, init), atol=1e-5, rtol=1e-5, err_msg=f"{case.name} {kind}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("kind,init", [("sum", 1.5), ("max", 0.25), ("min", -0.5)])
def test_non_identity_init_is_combined_once_per_window(case, kind, init, rng):
    x = tu.rand_like(rng, case.shape, f32)
    tu.assert_allclose(case.fn(kind, init)(x), case.reference(x, kind, init), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("kind", KINDS)
def test_jit_and_eval_shape(case, kind, rng):
    x = tu.rand_like(rng, case.shape, f32)
    tu.check_jit(case.fn(kind), [x])
    tu.check_eval_shape(case.fn(kind), [x])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("kind", KINDS)
def test_grads(case, kind, rng):
    # Distinct, well-separated values so max/min never tie within a finite-difference step.
    n = int(np.prod(case.shape))
    x = (rng.permutation(n).reshape(case.shape) * 0.1).astype(np.float32)
    # Windows made only of padding/holes give +-inf, where derivatives are meaningless: use a finite init there.
    init = None if np.all(np.isfinite(case.reference(x, kind))) else {"max": -100.0, "min": 100.0}[kind]
    tu.check_grads(case.fn(kind, init), [x], order=2, rng=rng, err_msg=f"{case.name} {kind}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("kind", KINDS)
def test_jit_of_grad_matches_eager(case, kind, rng):
    n = int(np.prod(case.shape))
    x = (rng.permutation(n).reshape(case.shape) * 0.1).astype(np.float32)
    init = None if np.all(np.isfinite(case.reference(x, kind))) else {"max": -100.0, "min": 100.0}[kind]
    tu.check_jit(fluxion.grad(lambda x: (case.fn(kind, init)(x) ** 2).sum()), [x], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("axis", [0, -1])
def test_vmap_matches_loop(case, kind, axis, rng):
    x = np.stack([tu.rand_like(rng, case.shape, f32) for _ in range(3)], axis)
    tu.check_batching(case.fn(kind), [x], in_axes=axis)


def test_max_pool_gradient_ties_go_to_first_element():
    # All-zero windows (as after a ReLU): the whole gradient of each window goes to its first element.
    g = fluxion.grad(lambda x: lw.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "VALID").sum())(
        np.zeros((3, 3), np.float32))
    tu.assert_allclose(g, np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0]], np.float32))
    g = fluxion.grad(lambda x: lw.reduce_window(x, np.inf, lax.min, (2,), (2,), "VALID").sum())(
        np.zeros(4, np.float32))
    tu.assert_allclose(g, np.array([1, 0, 1, 0], np.float32))


def test_against_jax(rng):
    jax = pytest.importorskip("jax")
    jops = {"sum": jax.lax.add, "max": jax.lax.max, "min": jax.lax.min}
    for case in CASES:
        x = tu.rand_like(rng, case.shape, f32)
        z = np.round(x).clip(-1, 1)  # many ties
        for kind in KINDS:
            op, init, _ = _OPS[kind]
            want = jax.lax.reduce_window(x, init, jops[kind], **case.kwargs())
            tu.assert_allclose(case.fn(kind)(x), np.asarray(want), atol=1e-5, rtol=1e-5, err_msg=case.name)
            if kind != "sum" and case.window_dilation is not None:
                continue  # JAX has no max/min-pool VJP with window dilation
            if not isinstance(case.padding, str) and min(min(p) for p in case.padding) < 0:
                continue  # JAX's VJP fails on negative padding
            wgt = np.arange(np.asarray(want).size, dtype=np.float32).reshape(np.asarray(want).shape)
            gj = jax.grad(lambda v: (jax.lax.reduce_window(v, init, jops[kind], **case.kwargs()) * wgt).sum())(z)
            gm = fluxion.grad(lambda v: (case.fn(kind)(v) * wgt).sum())(z)
            tu.assert_allclose(gm, np.asarray(gj), atol=1e-5, rtol=1e-5, err_msg=f"{case.name} {kind} grad")


def test_computation_recognized_by_tracing(rng):
    x = tu.rand_like(rng, (4, 6), f32)
    want = CASES[1].reference(x, "max")
    for fn in (jnp.maximum, lambda a, b: lax.max(b, a)):
        tu.assert_allclose(lw.reduce_window(x, -np.inf, fn, (3, 2), (1, 2), "SAME"), want, atol=1e-6)
    tu.assert_allclose(lw.reduce_window(x, 0.0, lambda a, b: a + b, (3, 2), (1, 2), "SAME"),
                       CASES[1].reference(x, "sum"), atol=1e-5)
    jaxpr = fluxion.make_jaxpr(lambda x: lw.reduce_window(x, 0.0, jnp.add, (2, 2), (1, 1), "VALID"))(x)
    assert [e.primitive.name for e in jaxpr.eqns] == ["reduce_window_sum"]


def test_unsupported_computation_and_operands():
    x = np.zeros((3, 3), np.float32)
    with pytest.raises(NotImplementedError, match="lax.add, lax.max or lax.min"):
        lw.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID")
    with pytest.raises(NotImplementedError, match="several operands"):
        lw.reduce_window((x, x), (0.0, 0.0), lambda a, b: a, (2, 2), (1, 1), "VALID")


@pytest.mark.parametrize("kwargs,match", [
    (dict(window_dimensions=(2,), window_strides=(1, 1), padding="VALID"), "one entry per operand dimension"),
    (dict(window_dimensions=(2, 0), window_strides=(1, 1), padding="VALID"), "must be positive"),
    (dict(window_dimensions=(2, 2), window_strides=(1, 1), padding=((0, 0),)), "padding"),
])
def test_shape_errors(kwargs, match):
    with pytest.raises(TypeError, match=match):
        lw.reduce_window_sum(np.zeros((3, 3), np.float32), **kwargs)


def test_avg_pool_as_flax_writes_it(rng):
    # flax.linen.avg_pool: reduce_window(x, 0., lax.add, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID') / 4.
    x = tu.rand_like(rng, (2, 4, 6, 3), f32)
    got = lw.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    want = x.reshape(2, 2, 2, 3, 2, 3).mean(axis=(2, 4))
    tu.assert_allclose(got, want, atol=1e-6, rtol=1e-6)
