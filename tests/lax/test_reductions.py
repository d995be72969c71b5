"""Table-driven tests of the reduction `fluxion.lax` primitives: reduce_*, argmax/argmin, dot_general, dot.

Every case is checked for values (eager and jit) against the NumPy reference in `fluxion._src.lax_reference`, for
eager results agreeing with abstract evaluation, for first/second-order derivatives against finite differences
(differentiable reductions, float32), and for `vmap` against a Python loop with several `in_axes`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
from fluxion._src import lax_reference as ref
from fluxion._src import test_util as tu

f32, f16, i32, i8, u8, b1 = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int8, np.uint8, np.bool_))
bf16 = np.dtype(ml_dtypes.bfloat16)


@dataclasses.dataclass(frozen=True)
class Case:
    """One reduction with fixed operand shapes and parameters (see test_structural.Case)."""

    name: str
    fn: Callable
    reference: Callable
    shapes: tuple
    dtypes: tuple
    kind: str = "normal"
    diff: bool = True
    axes: tuple = ((0,), (1,), (-1,))
    tol: object = None
    make_args: Callable | None = None

    def args(self, rng, dtype) -> list:
        if self.make_args is not None:
            return self.make_args(rng, dtype)
        return [tu.rand_like(rng, s, dtype, self.kind) for s in self.shapes]


_SUM_TOL = {f32: 1e-5, f16: 1e-2, bf16: 5e-2}


def _reduce(name, reduced, shape=(2, 3, 4), dtypes=(f32, i32), **kw):
    fn = getattr(lax, name)
    r = getattr(ref, name)
    return Case(f"{name}_axes{''.join(map(str, reduced)) or 'none'}_{'x'.join(map(str, shape))}",
                lambda x: fn(x, reduced), lambda x: r(x, reduced), (shape,), dtypes, **kw)


def _prod_with_zeros(count):
    def make(rng, dtype):
        x = tu.rand_like(rng, (2, 3), dtype, "nonzero")
        x.reshape(-1)[rng.choice(6, count, replace=False)] = 0  # zeros exercise the product rule's special cases
        return [x]
    return Case(f"reduce_prod_{count}_zeros", lambda x: lax.reduce_prod(x, (1,)), lambda x: ref.reduce_prod(x, (1,)),
                ((2, 3),), (f32,), make_args=make)


def _dg(dims, lhs, rhs, dtypes=(f32, i32, bf16), pref=None, **kw):
    (lc, rc), (lb, rb) = dims
    name = (f"dot_general_{'x'.join(map(str, lhs))}_{'x'.join(map(str, rhs))}_c{''.join(map(str, lc))}"
            f"{''.join(map(str, rc))}_b{''.join(map(str, lb))}{''.join(map(str, rb))}")
    if pref is not None:
        name += f"_pref_{np.dtype(pref).name}"
    return Case(name, lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=pref),
                lambda a, b: ref.dot_general(a, b, dims, preferred_element_type=pref), (lhs, rhs), dtypes,
                tol=_SUM_TOL, **kw)


_DG_AXES = ((0, 0), (None, 0), (0, None), (1, -1))

CASES = [
    _reduce("reduce_sum", (), tol=_SUM_TOL),
    _reduce("reduce_sum", (0,), dtypes=(f32, i32, f16, bf16), tol=_SUM_TOL),
    _reduce("reduce_sum", (1, 2), tol=_SUM_TOL),
    _reduce("reduce_sum", (0, 1, 2), dtypes=(f32, i32, u8), tol=_SUM_TOL),
    _reduce("reduce_sum", (0,), shape=(0, 3), diff=False, axes=((0,), (1,))),
    _reduce("reduce_prod", (2,), kind="nonzero", tol=_SUM_TOL),
    _reduce("reduce_prod", (0, 2), kind="nonzero", tol=_SUM_TOL),
    _prod_with_zeros(1),
    _prod_with_zeros(2),
    _reduce("reduce_max", (1,), dtypes=(f32, i32, u8, bf16, b1)),
    _reduce("reduce_max", (0, 2), dtypes=(f32, i8)),
    _reduce("reduce_min", (1,), dtypes=(f32, i32, u8, bf16, b1)),
    _reduce("reduce_min", (0, 1, 2), dtypes=(f32, i8)),
    _reduce("reduce_max", (0,), shape=(0, 3), dtypes=(f32, i32), diff=False, axes=((0,), (1,))),
    _reduce("reduce_max", (1,), shape=(2, 3), dtypes=(f32,), kind="special", diff=False),
    _reduce("reduce_and", (1,), dtypes=(b1, i32, u8), kind="int", diff=False),
    _reduce("reduce_or", (0, 2), dtypes=(b1, i32, u8), kind="int", diff=False),
    _reduce("reduce_xor", (2,), dtypes=(b1, i32, u8), kind="int", diff=False),
    Case("argmax_axis1", lambda x: lax.argmax(x, 1, np.int32), lambda x: ref.argmax(x, 1, np.int32), ((2, 3, 4),),
         (f32, i32, bf16), kind="small_int", diff=False),
    Case("argmin_axis0", lambda x: lax.argmin(x, 0, np.int32), lambda x: ref.argmin(x, 0, np.int32), ((2, 3, 4),),
         (f32, i32, u8), kind="small_int", diff=False),
    Case("argmax_nan_first", lambda x: lax.argmax(x, 1, np.int32), lambda x: ref.argmax(x, 1, np.int32), ((3, 5),),
         (f32,), kind="special", diff=False),
    _dg((((1,), (0,)), ((), ())), (2, 3), (3, 4), axes=_DG_AXES),
    _dg((((0,), (0,)), ((), ())), (3, 2), (3, 4), axes=_DG_AXES),
    _dg((((2,), (1,)), ((0,), (0,))), (3, 2, 4), (3, 4, 5), axes=_DG_AXES),
    _dg((((2,), (0,)), ((1,), (1,))), (2, 3, 4), (4, 3, 5), axes=_DG_AXES),
    _dg((((1, 2), (0, 1)), ((), ())), (2, 3, 4), (3, 4, 2), axes=_DG_AXES),
    _dg((((), ()), ((), ())), (2, 3), (4,), axes=_DG_AXES),
    _dg((((0,), (0,)), ((), ())), (4,), (4,), axes=((0, 0), (None, 0))),
    _dg((((1,), (0,)), ((), ())), (2, 3), (3, 4), dtypes=(i8,), pref=np.int32, kind="int", diff=False,
        axes=_DG_AXES),
    _dg((((1,), (0,)), ((), ())), (2, 3), (3, 4), dtypes=(f16, bf16), pref=np.float32, diff=False,
        axes=_DG_AXES),
    Case("dot_matvec", lax.dot, ref.dot, ((2, 3), (3,)), (f32, i32), axes=_DG_AXES, tol=_SUM_TOL),
    Case("dot_matmat", lax.dot, ref.dot, ((2, 3), (3, 4)), (f32, i32), axes=_DG_AXES, tol=_SUM_TOL),
    Case("dot_vecvec", lax.dot, ref.dot, ((3,), (3,)), (f32, i32), axes=((0, 0), (0, None)), tol=_SUM_TOL),
]

CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), [c.name for c in CASES]

_ASSOC_SCAN_ODD = ("core bug: lax.associative_scan drops the last element along an odd-length axis (the cumprod "
                   "JVP used by reduce_prod's JVP is built on it, so second derivatives of reduce_prod over an "
                   "odd-length axis fail); repro: lax.associative_scan(lax.add, jnp.arange(1., 4.)) drops the last "
                   "element (eagerly it now raises 'add got incompatible shapes for broadcasting: (1,), (0,)'), "
                   "expected [1, 3, 6]")
_PREFERRED_INT = ("core bug: dot_general with preferred_element_type accumulates in the operand dtype and casts "
                  "afterwards, so int8 products overflow; repro: lax.dot_general(jnp.full((1, 3), 100, jnp.int8), "
                  "jnp.full((3, 1), 100, jnp.int8), (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32) "
                  "gives [[48]] (30000 wrapped to int8), expected [[30000]]")

# (check, case name) -> (reason, predicate(dtype, axes) or None); strict xfails for known core bugs.
KNOWN_FAILURES: dict[tuple, tuple] = {}


def _marks(check, case, dtype=None, axes=None):
    entry = KNOWN_FAILURES.get((check, case.name))
    if entry is not None and (entry[1] is None or entry[1](dtype, axes)):
        return [pytest.mark.xfail(reason=entry[0], strict=True)]
    return []


def _value_params():
    return [pytest.param(c, dt, id=f"{c.name}-{np.dtype(dt).name}", marks=_marks("values", c, dt))
            for c in CASES for dt in c.dtypes]


def _grad_params():
    return [pytest.param(c, id=c.name, marks=_marks("grads", c)) for c in CASES if c.diff]


def _batch_params():
    return [pytest.param(c, axes, id=f"{c.name}-axes{axes}", marks=_marks("batching", c, None, axes))
            for c in CASES for axes in (c.axes if len(c.shapes) > 1 or len(c.axes[0]) == 1 else ())]


@pytest.mark.parametrize("case,dtype", _value_params())
def test_values_eager_jit_and_abstract_eval(case: Case, dtype, rng):
    args = case.args(rng, dtype)
    tu.check_against_numpy(case.fn, case.reference, args, tol=case.tol, check_dtypes=True,
                           err_msg=f"{case.name} eager")
    tu.check_jit(case.fn, args, atol=case.tol, rtol=case.tol, err_msg=f"{case.name} jit vs eager")
    tu.check_eval_shape(case.fn, args, err_msg=f"{case.name} eval_shape")


@pytest.mark.parametrize("case", _grad_params())
def test_grads_first_and_second_order(case: Case, rng):
    args = case.args(rng, f32)
    tu.check_grads(case.fn, args, order=2, modes=("fwd", "rev"), rng=rng, err_msg=case.name)


@pytest.mark.parametrize("case,axes", _batch_params())
def test_vmap_matches_loop(case: Case, axes, rng):
    dtype = case.dtypes[0]
    examples = [case.args(rng, dtype) for _ in range(3)]
    args = tu.stack_examples(examples, axes)
    tu.check_batching(case.fn, args, in_axes=axes, atol=case.tol, rtol=case.tol, err_msg=f"{case.name} vmap{axes}")


# --------------------------------------------------------------------------------------------------------------
# Specific semantics
# --------------------------------------------------------------------------------------------------------------

def test_reduce_max_gradient_goes_to_the_maximum():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, -1.0]], np.float32)
    g = fluxion.grad(lambda x: lax.reduce_sum(lax.reduce_max(x, (1,)), (0,)))(x)
    tu.assert_allclose(g, np.array([[0, 1, 0], [1, 0, 0]], np.float32))


def test_reduce_max_of_empty_is_minus_infinity():
    out = lax.reduce_max(np.zeros((0, 2), np.float32), (0,))
    tu.assert_allclose(out, np.full(2, -np.inf, np.float32))


def test_argmax_index_dtype():
    out = lax.argmax(np.array([1.0, 3.0, 2.0], np.float32), 0, np.int16)
    assert out.dtype == np.int16 and int(out) == 1


def test_reduce_sum_rejects_bad_axis():
    with pytest.raises((ValueError, TypeError), match="3"):
        fluxion.jit(lambda x: lax.reduce_sum(x, (3,)))(np.zeros((2, 2), np.float32))


def test_dot_general_rejects_mismatched_contraction():
    with pytest.raises(TypeError, match=r"(?s)3.*4|4.*3"):
        fluxion.jit(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(
            np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32))


def test_dot_general_matches_real_jax():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3, 5)).astype(np.float32)
    dims = (((2,), (0,)), ((0,), (1,)))
    expected = np.asarray(jax.lax.dot_general(a, b, dims))
    tu.assert_allclose(lax.dot_general(a, b, dims), expected, atol=1e-5, rtol=1e-5)
