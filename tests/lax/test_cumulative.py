"""Table-driven tests of the cumulative `fluxion.lax` primitives and `lax.associative_scan`.

Each (operation, shape, axis, reverse) case is checked for values (eager and jit) against the NumPy reference in
`fluxion._src.lax_reference`, for eager results agreeing with abstract evaluation, for first/second-order
derivatives against finite differences (float32), and for `vmap` against a Python loop. Odd and even scan lengths
are both covered because the parallel scan splits the axis into even and odd halves.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
from fluxion._src import lax_reference as ref
from fluxion._src import test_util as tu

f32, i32, f16, b1 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.float16), np.dtype(np.bool_)

OPS = {
    # name: (dtypes for the value test, input kind, differentiable)
    "cumsum": ((f32, i32, f16), "normal", True),
    "cumprod": ((f32, i32), "nonzero", True),
    "cummax": ((f32, i32, f16), "normal", True),
    "cummin": ((f32, i32), "normal", True),
    "cumlogsumexp": ((f32, f16), "normal", True),
}

# (shape, axis): odd and even lengths, first/last/negative axes, length 1 and 0.
LAYOUTS = [((5,), 0), ((4,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 5), -1), ((1,), 0), ((0, 2), 0)]

_TOL = {f32: 1e-5, f16: 1e-2}

_ASSOC_SCAN_ODD = ("core bug: lax.associative_scan drops the last element along an odd-length axis (the JVPs of "
                   "cumprod/cummax/cummin/cumlogsumexp are built on it); repro: "
                   "lax.associative_scan(lax.add, jnp.arange(1., 4.)) drops the last element (eagerly it now "
                   "raises 'add got incompatible shapes for broadcasting: (1,), (0,)'), expected [1, 3, 6]")


def _odd_length(shape, axis) -> bool:
    return shape[axis] % 2 == 1 and shape[axis] > 1


def _grad_marks(name, shape, axis):
    return []


def _cases(with_dtypes: bool, grads: bool = False):
    params = []
    for name, (dts, kind, diff) in OPS.items():
        if grads and not diff:
            continue
        for shape, axis in LAYOUTS:
            if grads and 0 in shape:
                continue
            for reverse in (False, True):
                base = f"{name}-{'x'.join(map(str, shape))}-axis{axis}-{'rev' if reverse else 'fwd'}"
                if with_dtypes:
                    for dt in dts:
                        params.append(pytest.param(name, kind, shape, axis, reverse, dt, id=f"{base}-{dt.name}"))
                else:
                    marks = _grad_marks(name, shape, axis) if grads else []
                    params.append(pytest.param(name, kind, shape, axis, reverse, id=base, marks=marks))
    return params


def _fns(name, axis, reverse):
    fn = getattr(lax, name)
    r = getattr(ref, name)
    return (lambda x: fn(x, axis=axis, reverse=reverse)), (lambda x: r(x, axis=axis, reverse=reverse))


@pytest.mark.parametrize("name,kind,shape,axis,reverse,dtype", _cases(with_dtypes=True))
def test_values_eager_jit_and_abstract_eval(name, kind, shape, axis, reverse, dtype, rng):
    fn, reference = _fns(name, axis, reverse)
    x = tu.rand_like(rng, shape, dtype, kind)
    tol = _TOL.get(dtype)
    tu.check_against_numpy(fn, reference, [x], tol=tol, check_dtypes=True, err_msg=f"{name} eager")
    tu.check_jit(fn, [x], atol=tol, rtol=tol)
    tu.check_eval_shape(fn, [x])


@pytest.mark.parametrize("name,kind,shape,axis,reverse", _cases(with_dtypes=False, grads=True))
def test_grads_first_and_second_order(name, kind, shape, axis, reverse, rng):
    fn, _ = _fns(name, axis, reverse)
    x = tu.rand_like(rng, shape, f32, kind)
    tu.check_grads(fn, [x], order=2, modes=("fwd", "rev"), rng=rng, err_msg=name)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("in_axis", [0, 1, -1])
def test_vmap_matches_loop(name, in_axis, rng):
    _, kind, _ = OPS[name]
    fn, _ = _fns(name, 1, False)  # per-example shape (3, 4), scanning axis 1
    x = tu.stack_examples([[tu.rand_like(rng, (3, 4), f32, kind)] for _ in range(2)], [in_axis])
    tu.check_batching(fn, x, in_axes=in_axis)


# --------------------------------------------------------------------------------------------------------------
# associative_scan
# --------------------------------------------------------------------------------------------------------------

def _marks_for_length(n):
    return []


@pytest.mark.parametrize("n", [pytest.param(n, marks=_marks_for_length(n)) for n in (1, 2, 3, 4, 5, 7, 8)])
def test_associative_scan_add_matches_cumsum(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    tu.assert_allclose(lax.associative_scan(lax.add, x), np.cumsum(x), atol=1e-5, rtol=1e-5)
    tu.assert_allclose(lax.associative_scan(lax.add, x, reverse=True), np.cumsum(x[::-1])[::-1], atol=1e-5,
                       rtol=1e-5)


def _affine_compose(a, b):
    """Composition of affine maps x -> a1 x + b1 then x -> a2 x + b2 (associative, non-commutative)."""
    (a1, b1), (a2, b2) = a, b
    return (lax.mul(a1, a2), lax.add(lax.mul(b1, a2), b2))


def _affine_reference(a, b, axis):
    a = np.moveaxis(a, axis, 0)
    b = np.moveaxis(b, axis, 0)
    out_a, out_b = [a[0]], [b[0]]
    for i in range(1, a.shape[0]):
        out_a.append(out_a[-1] * a[i])
        out_b.append(out_b[-1] * a[i] + b[i])
    return np.moveaxis(np.stack(out_a), 0, axis), np.moveaxis(np.stack(out_b), 0, axis)


@pytest.mark.parametrize("shape,axis", [
    ((8,), 0), pytest.param((6,), 0, marks=_marks_for_length(3)), ((2, 4), 1),
    pytest.param((5, 2), 0, marks=_marks_for_length(5))])
def test_associative_scan_pytree_noncommutative(shape, axis, rng):
    a = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    scan = lambda a, b: lax.associative_scan(_affine_compose, (a, b), axis=axis)  # noqa: E731
    out = scan(a, b)
    tu.assert_allclose(out, _affine_reference(a, b, axis), atol=1e-5, rtol=1e-5)
    tu.check_jit(scan, [a, b], atol=1e-6, rtol=1e-6)
    tu.check_grads(scan, [a, b], order=1, rng=rng)


@pytest.mark.parametrize("length", [4, pytest.param(3, marks=_marks_for_length(3))])
def test_associative_scan_under_vmap(length, rng):
    x = rng.standard_normal((length, 2)).astype(np.float32)
    tu.check_batching(lambda v: lax.associative_scan(lax.add, v), [x], in_axes=1)


def test_cumsum_transpose_is_reverse_cumsum():
    ct = np.arange(1, 5, dtype=np.float32)
    _, f_vjp = fluxion.vjp(lambda x: lax.cumsum(x), np.zeros(4, np.float32))
    tu.assert_allclose(f_vjp(ct)[0], np.cumsum(ct[::-1])[::-1])


def test_cummax_gradient_follows_running_maximum():
    x = np.array([1.0, 3.0, 2.0, 5.0], np.float32)
    g = fluxion.grad(lambda x: lax.reduce_sum(lax.cummax(x), (0,)))(x)
    tu.assert_allclose(g, np.array([1, 2, 0, 1], np.float32))


def test_cumsum_rejects_out_of_range_axis():
    with pytest.raises((ValueError, TypeError), match="axis"):
        lax.cumsum(np.zeros((2, 3), np.float32), axis=2)
