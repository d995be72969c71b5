"""Table-driven tests of `fluxion.numpy` against NumPy (values) and real `jax.numpy` (result dtypes).

Each record is a function of the array module (`m` is `fluxion.numpy`, `numpy` or `jax.numpy`) plus argument
specifications, so the same expression runs on all three. Every record is checked for values against NumPy
(eagerly and under `fluxion.jit`), for eager results agreeing with `eval_shape`, and for its result dtype and weak
type against real JAX. Differentiable records also get first-order gradient checks and a `vmap`-vs-loop check.
Hypothesis property tests cover broadcasting and reshape/transpose round trips. (Indexing has its own tests.)
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src import test_util as tu

f32, f16, i32, i8, u8, b1, c64 = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int8, np.uint8,
                                                         np.bool_, np.complex64))


@dataclasses.dataclass(frozen=True)
class Arg:
    shape: tuple
    dtype: Any = f32
    kind: str = "normal"


def A(*shape, dtype=f32, kind="normal") -> Arg:
    return Arg(tuple(shape), np.dtype(dtype), kind)


@dataclasses.dataclass(frozen=True)
class Rec:
    """One `fluxion.numpy` expression: `fn(m, *arrays)` with `m` the array module."""

    name: str
    fn: Callable
    args: tuple
    tol: float | None = None
    diff: bool = False
    batch: bool = False
    jax_dtype: bool = True  # compare the result dtype/weak type with real JAX

    def make_args(self, rng):
        return [tu.rand_like(rng, a.shape, a.dtype, a.kind) for a in self.args]


def _u(name, kind="normal", diff=True, dtype=f32, tol=1e-5, **kw):
    return Rec(name, lambda m, x, _n=name: getattr(m, _n)(x), (A(2, 3, dtype=dtype, kind=kind),), tol=tol,
               diff=diff, **kw)


def _b(name, kinds=("normal", "normal"), diff=True, dtype=f32, shapes=((2, 3), (3,)), tol=1e-5, **kw):
    return Rec(name, lambda m, x, y, _n=name: getattr(m, _n)(x, y),
               (A(*shapes[0], dtype=dtype, kind=kinds[0]), A(*shapes[1], dtype=dtype, kind=kinds[1])), tol=tol,
               diff=diff, **kw)


RECORDS = [
    # -- unary ufuncs ---------------------------------------------------------------------------------------------
    *[_u(n, batch=n in ("sin", "exp", "abs")) for n in
      ("sin", "cos", "tanh", "arctan", "sinh", "cosh", "arcsinh", "exp", "exp2", "expm1", "square", "negative",
       "positive", "abs", "absolute", "fabs", "deg2rad", "rad2deg", "cbrt", "sinc")],
    *[_u(n, kind="positive") for n in ("log", "log2", "log10", "log1p", "sqrt", "reciprocal")],
    *[_u(n, kind="unit") for n in ("arcsin", "arccos", "arctanh", "tan")],
    _u("arccosh", kind="gt_one"),
    *[_u(n, kind="fraction", diff=False) for n in ("floor", "ceil", "trunc", "rint", "round", "sign")],
    _u("fix", kind="fraction", diff=False, jax_dtype=False),  # removed from jax.numpy in JAX 0.10
    *[_u(n, kind="special", diff=False) for n in ("isnan", "isinf", "isfinite", "signbit", "isposinf",
                                                   "isneginf")],
    _u("sin", dtype=i32, kind="int", diff=False, tol=1e-5),  # integer input promotes to float32
    _u("exp", dtype=np.int16, kind="small_int", diff=False),  # (NumPy maps int8/uint8 to float16, JAX to f32)
    _u("square", dtype=i8, kind="small_int", diff=False),
    _u("logical_not", dtype=b1, diff=False),
    _u("invert", dtype=i32, kind="int", diff=False),
    _u("conj", dtype=c64, diff=False), _u("real", dtype=c64, diff=False), _u("imag", dtype=c64, diff=False),
    _u("angle", dtype=c64, diff=False), _u("abs", dtype=c64, diff=False),
    Rec("nan_to_num", lambda m, x: m.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0), (A(2, 5, kind="special"),)),
    # -- binary ufuncs (broadcasting (2, 3) with (3,)) ----------------------------------------------------------------
    *[_b(n, batch=n in ("add", "multiply", "maximum")) for n in
      ("add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp",
       "logaddexp2")],
    *[_b(n, kinds=("normal", "nonzero")) for n in ("divide", "true_divide")],
    *[_b(n, kinds=("normal", "nonzero"), diff=False) for n in ("floor_divide", "remainder", "mod", "fmod")],
    _b("power", kinds=("positive", "normal")),
    _b("copysign", kinds=("nonzero", "nonzero")),
    _b("heaviside", diff=False), _b("nextafter", diff=False),
    *[_b(n, kinds=("small_int", "small_int"), diff=False) for n in
      ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")],
    *[_b(n, dtype=b1, diff=False) for n in ("logical_and", "logical_or", "logical_xor")],
    *[_b(n, dtype=i32, kinds=("int", "int"), diff=False) for n in ("bitwise_and", "bitwise_or", "bitwise_xor")],
    _b("left_shift", dtype=i32, kinds=("small_int", "positive"), diff=False),
    _b("right_shift", dtype=i32, kinds=("int", "positive"), diff=False),
    *[_b(n, dtype=i32, kinds=("int", "nonzero"), diff=False) for n in ("floor_divide", "remainder", "divide")],
    _b("add", dtype=u8, kinds=("int", "int"), diff=False),
    _b("power", dtype=i32, kinds=("small_int", "positive"), diff=False),
    Rec("add_int8_uint8", lambda m, x, y: m.add(x, y), (A(3, dtype=i8, kind="int"), A(3, dtype=u8, kind="int"))),
    Rec("mul_f16_scalar", lambda m, x: m.multiply(x, 2.5), (A(4, dtype=f16),), tol=1e-3),
    Rec("int_times_float", lambda m, x: x * 0.5, (A(4, dtype=i32, kind="int"),)),
    Rec("divmod", lambda m, x, y: m.divmod(x, y), (A(4, dtype=i32, kind="int"), A(4, dtype=i32, kind="nonzero"))),
    Rec("where", lambda m, c, x, y: m.where(c, x, y), (A(2, 3, dtype=b1), A(2, 3), A(3,)), diff=True, batch=True),
    Rec("where_scalar", lambda m, x: m.where(x > 0, x, 0.0), (A(5,),), diff=True),
    Rec("clip", lambda m, x: m.clip(x, -0.5, 0.5), (A(2, 5),), diff=True),
    # -- reductions ---------------------------------------------------------------------------------------------------
    *[Rec(f"{n}_{ax}_{kd}", lambda m, x, _n=n, _a=ax, _k=kd: getattr(m, _n)(x, axis=_a, keepdims=_k),
          (A(2, 3, 4),), tol=1e-5, diff=n not in ("argmax", "argmin"), batch=ax == 1)
      for n in ("sum", "mean", "max", "min", "prod", "var", "std")
      for ax, kd in ((None, False), (0, False), (-1, True), ((0, 2), False), (1, False))],
    *[Rec(f"{n}_{ax}", lambda m, x, _n=n, _a=ax: getattr(m, _n)(x, axis=_a), (A(2, 3, 4),))
      for n in ("argmax", "argmin") for ax in (None, 1)],
    *[Rec(f"{n}_{ax}", lambda m, x, _n=n, _a=ax: getattr(m, _n)(x, axis=_a), (A(3, 4, dtype=b1),))
      for n in ("all", "any") for ax in (None, 0)],
    Rec("sum_int8", lambda m, x: m.sum(x), (A(5, dtype=i8, kind="int"),)),
    Rec("sum_bool", lambda m, x: m.sum(x, axis=0), (A(5, 2, dtype=b1),)),
    Rec("mean_int", lambda m, x: m.mean(x, axis=1), (A(3, 4, dtype=i32, kind="int"),)),
    Rec("sum_dtype", lambda m, x: m.sum(x, dtype=m.float32), (A(4, dtype=i32, kind="int"),)),
    Rec("sum_where_initial", lambda m, x, w: m.sum(x, axis=1, where=w, initial=1.0), (A(3, 4), A(3, 4, dtype=b1))),
    Rec("max_initial", lambda m, x: m.max(x, axis=0, initial=0.5), (A(3, 4),)),
    Rec("var_ddof", lambda m, x: m.var(x, axis=0, ddof=1), (A(4, 3),), tol=1e-5, diff=True),
    Rec("cumsum", lambda m, x: m.cumsum(x, axis=1), (A(3, 4),), diff=True, batch=True),
    Rec("cumsum_flat", lambda m, x: m.cumsum(x), (A(3, 4),)),
    Rec("cumprod", lambda m, x: m.cumprod(x, axis=0), (A(4, 3, kind="nonzero"),), tol=1e-5, diff=True),
    Rec("cumsum_int8", lambda m, x: m.cumsum(x, axis=1), (A(3, 4, dtype=i8, kind="small_int"),)),
    Rec("cumsum_bool_dtype", lambda m, x: m.cumsum(x, axis=0, dtype=bool), (A(4, 3, dtype=i32, kind="small_int"),)),
    Rec("nancumsum", lambda m, x: m.nancumsum(x, axis=1), (A(3, 5, kind="special"),), tol=1e-5),
    Rec("nancumprod", lambda m, x: m.nancumprod(x), (A(3, 5, kind="special"),), tol=1e-5),
    Rec("cumulative_sum", lambda m, x: m.cumulative_sum(x, axis=0, include_initial=True), (A(3, 4),), diff=True),
    Rec("cumulative_sum_uint8", lambda m, x: m.cumulative_sum(x), (A(5, dtype=u8, kind="small_int"),)),
    Rec("cumulative_prod", lambda m, x: m.cumulative_prod(x, axis=-1, include_initial=True),
        (A(3, 4, kind="nonzero"),), tol=1e-5),
    Rec("cumulative_prod_int8", lambda m, x: m.cumulative_prod(x), (A(4, dtype=i8, kind="small_int"),)),
    Rec("ptp", lambda m, x: m.ptp(x, axis=1), (A(3, 4),)),
    Rec("count_nonzero", lambda m, x: m.count_nonzero(x, axis=0), (A(3, 4, dtype=i32, kind="small_int"),)),
    Rec("average_weights", lambda m, x, w: m.average(x, axis=1, weights=w), (A(3, 4), A(4, kind="positive")),
        tol=1e-5, diff=True),
    *[Rec(n, lambda m, x, _n=n: getattr(m, _n)(x, axis=1), (A(3, 5, kind="special"),), tol=1e-5)
      for n in ("nansum", "nanmax", "nanmin", "nanmean")],
    # -- shape manipulation -------------------------------------------------------------------------------------------
    Rec("reshape", lambda m, x: m.reshape(x, (4, -1)), (A(2, 3, 4),), diff=True, batch=True),
    Rec("reshape_method", lambda m, x: x.reshape(3, 8), (A(2, 3, 4),)),
    Rec("ravel", lambda m, x: m.ravel(x), (A(2, 3),), diff=True),
    Rec("transpose", lambda m, x: m.transpose(x, (1, 2, 0)), (A(2, 3, 4),), diff=True, batch=True),
    Rec("transpose_default", lambda m, x: m.transpose(x), (A(2, 3, 4),)),
    Rec("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), (A(2, 3, 4),), diff=True),
    Rec("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), (A(2, 3, 4),)),
    Rec("squeeze", lambda m, x: m.squeeze(x), (A(1, 3, 1),)),
    Rec("squeeze_axis", lambda m, x: m.squeeze(x, axis=2), (A(1, 3, 1),)),
    Rec("expand_dims", lambda m, x: m.expand_dims(x, (0, 2)), (A(2, 3),)),
    Rec("atleast_2d", lambda m, x: m.atleast_2d(x), (A(3,),)),
    Rec("atleast_3d", lambda m, x: m.atleast_3d(x), (A(2, 3),)),
    Rec("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 2, 3)), (A(2, 1),), diff=True),
    Rec("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), (A(2, 1), A(3,))),
    Rec("concatenate", lambda m, x, y: m.concatenate([x, y], axis=1), (A(2, 3), A(2, 1)), diff=True, batch=True),
    Rec("concatenate_none", lambda m, x, y: m.concatenate([x, y], axis=None), (A(2, 3), A(4,))),
    Rec("concatenate_promote", lambda m, x, y: m.concatenate([x, y]), (A(3,), A(2, dtype=i32, kind="int"))),
    Rec("stack", lambda m, x, y: m.stack([x, y], axis=1), (A(2, 3), A(2, 3)), diff=True, batch=True),
    Rec("hstack", lambda m, x, y: m.hstack([x, y]), (A(2, 3), A(2, 2))),
    Rec("vstack", lambda m, x, y: m.vstack([x, y]), (A(3,), A(3,))),
    Rec("dstack", lambda m, x, y: m.dstack([x, y]), (A(2, 3), A(2, 3))),
    Rec("column_stack", lambda m, x, y: m.column_stack([x, y]), (A(3,), A(3, 2))),
    Rec("split", lambda m, x: m.split(x, 3, axis=1), (A(2, 6),), diff=True),
    Rec("split_indices", lambda m, x: m.split(x, [1, 4]), (A(6, 2),)),
    Rec("array_split", lambda m, x: m.array_split(x, 4), (A(7,),)),
    Rec("tile", lambda m, x: m.tile(x, (2, 3)), (A(2, 2),), diff=True),
    Rec("repeat", lambda m, x: m.repeat(x, 2, axis=0), (A(2, 3),), diff=True),
    Rec("repeat_flat", lambda m, x: m.repeat(x, 3), (A(2, 2),)),
    Rec("flip", lambda m, x: m.flip(x, axis=1), (A(2, 3),), diff=True),
    Rec("flip_all", lambda m, x: m.flip(x), (A(2, 3),)),
    Rec("fliplr", lambda m, x: m.fliplr(x), (A(2, 3),)), Rec("flipud", lambda m, x: m.flipud(x), (A(2, 3),)),
    Rec("roll", lambda m, x: m.roll(x, 2, axis=1), (A(3, 4),), diff=True),
    Rec("roll_flat", lambda m, x: m.roll(x, -3), (A(3, 4),)),
    Rec("rot90", lambda m, x: m.rot90(x), (A(2, 3),)), Rec("rot90_k2", lambda m, x: m.rot90(x, 2), (A(2, 3),)),
    Rec("pad_constant", lambda m, x: m.pad(x, ((1, 0), (2, 1))), (A(2, 3),), diff=True),
    Rec("pad_value", lambda m, x: m.pad(x, 1, constant_values=3.0), (A(2, 3),)),
    *[Rec(f"pad_{mode}", lambda m, x, _mo=mode: m.pad(x, (2, 1), mode=_mo), (A(4,),))
      for mode in ("edge", "reflect", "wrap", "symmetric")],
    Rec("diagonal", lambda m, x: m.diagonal(x, 1), (A(3, 4),), diff=True),
    Rec("diag_of_vector", lambda m, x: m.diag(x, -1), (A(3,),)),
    Rec("diag_of_matrix", lambda m, x: m.diag(x), (A(3, 3),)),
    Rec("trace", lambda m, x: m.trace(x), (A(3, 3),), diff=True),
    Rec("tril", lambda m, x: m.tril(x), (A(3, 4),), diff=True), Rec("triu", lambda m, x: m.triu(x, 1), (A(3, 4),)),
    Rec("append", lambda m, x, y: m.append(x, y), (A(2, 2), A(3,))),
    Rec("astype", lambda m, x: m.astype(x, m.int32), (A(4, kind="fraction"),)),
    # -- linear algebra -----------------------------------------------------------------------------------------------
    Rec("dot_matvec", lambda m, x, y: m.dot(x, y), (A(2, 3), A(3,)), tol=1e-5, diff=True, batch=True),
    Rec("dot_scalar", lambda m, x, y: m.dot(x, y), (A(2, 3), A()), tol=1e-5),
    Rec("dot_nd", lambda m, x, y: m.dot(x, y), (A(2, 3, 4), A(5, 4, 2)), tol=1e-5),
    Rec("matmul_batched", lambda m, x, y: m.matmul(x, y), (A(2, 3, 4), A(4, 5)), tol=1e-5, diff=True, batch=True),
    Rec("matmul_vec", lambda m, x, y: x @ y, (A(4,), A(3, 4, 2)), tol=1e-5),
    Rec("matmul_int", lambda m, x, y: m.matmul(x, y), (A(2, 3, dtype=i32, kind="small_int"),
                                                     A(3, 2, dtype=i32, kind="small_int"))),
    Rec("vdot", lambda m, x, y: m.vdot(x, y), (A(2, 3), A(2, 3)), tol=1e-5, diff=True),
    Rec("vdot_complex", lambda m, x, y: m.vdot(x, y), (A(3, dtype=c64), A(3, dtype=c64)), tol=1e-5),
    Rec("inner", lambda m, x, y: m.inner(x, y), (A(2, 3), A(4, 3)), tol=1e-5),
    Rec("outer", lambda m, x, y: m.outer(x, y), (A(3,), A(4,)), diff=True),
    Rec("tensordot_2", lambda m, x, y: m.tensordot(x, y), (A(2, 3, 4), A(3, 4, 5)), tol=1e-5, diff=True),
    Rec("tensordot_axes", lambda m, x, y: m.tensordot(x, y, axes=([0], [1])), (A(3, 2), A(4, 3)), tol=1e-5),
    Rec("einsum_matmul", lambda m, x, y: m.einsum("ij,jk->ik", x, y), (A(2, 3), A(3, 4)), tol=1e-5, diff=True),
    Rec("einsum_batch_trace", lambda m, x: m.einsum("bii->b", x), (A(2, 3, 3),), tol=1e-5),
    Rec("einsum_outer_sum", lambda m, x, y: m.einsum("i,j->", x, y), (A(3,), A(4,)), tol=1e-5),
    Rec("einsum_ellipsis", lambda m, x, y: m.einsum("...ij,...jk->...ik", x, y), (A(2, 2, 3), A(2, 3, 2)),
        tol=1e-5),
    Rec("kron", lambda m, x, y: m.kron(x, y), (A(2, 2), A(2, 3))),
    Rec("cross", lambda m, x, y: m.cross(x, y), (A(4, 3), A(4, 3)), tol=1e-5, diff=True),
]

RECORDS_BY_NAME = {}
for _r in RECORDS:
    _key = _r.name if _r.name not in RECORDS_BY_NAME else f"{_r.name}_{_r.args[0].dtype.name}"
    RECORDS_BY_NAME[_key] = _r
assert len(RECORDS_BY_NAME) == len(RECORDS), "duplicate record names"

_EINSUM_REPEATED = ("core bug: jnp.einsum fails on a subscript repeated within one operand (a diagonal/trace); "
                    "repro: jnp.einsum('bii->b', np.ones((2, 3, 3))) raises ValueError('substring not found')")
_FULL_WEAK = ("core bug: jnp.full with a Python scalar fill and no dtype is strongly typed; JAX keeps it weak; "
              "repro: jnp.full((2,), 7).weak_type is False (JAX: True)")

# (check, record name) -> reason (strict xfail) for known core bugs.
KNOWN_FAILURES: dict[tuple, str] = {}


_RETURNS_LIST_IN_JAX = {"broadcast_arrays", "meshgrid", "meshgrid_ij"}


def _listify(name, out):
    """NumPy 2 returns tuples from broadcast_arrays/meshgrid where jax.numpy returns lists."""
    return list(out) if name in _RETURNS_LIST_IN_JAX and isinstance(out, tuple) else out


def _params(check: str, select=lambda r: True):
    out = []
    for key, rec in RECORDS_BY_NAME.items():
        if not select(rec):
            continue
        reason = KNOWN_FAILURES.get((check, key))
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        out.append(pytest.param(rec, id=key, marks=marks))
    return out


def _np_call(rec: Rec, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _listify(rec.name, rec.fn(np, *args))


@pytest.mark.parametrize("rec", _params("values"))
def test_values_against_numpy_eager_and_jit(rec: Rec, rng):
    args = rec.make_args(rng)
    expected = _np_call(rec, args)
    fn = lambda *xs: rec.fn(jnp, *xs)  # noqa: E731
    tu.check_against_numpy(fn, lambda *xs: expected, args, tol=rec.tol, err_msg=f"{rec.name} eager")
    jitted = jax.jit(fn)(*[jnp.asarray(a) for a in args])
    tu.assert_allclose(jitted, expected, atol=rec.tol, rtol=rec.tol, check_dtypes=False, err_msg=f"{rec.name} jit")
    tu.check_jit(fn, args, atol=rec.tol, rtol=rec.tol)
    tu.check_eval_shape(fn, args)


@pytest.mark.parametrize("rec", _params("dtypes", lambda r: r.jax_dtype))
def test_result_dtype_and_weak_type_match_jax(rec: Rec, rng):
    real = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    args = rec.make_args(rng)
    ours = jax.tree_util.tree_leaves(rec.fn(jnp, *[jnp.asarray(a) for a in args]))
    # eval_shape traces without compiling, which keeps the oracle cheap.
    structs = [real.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    theirs = real.tree_util.tree_leaves(real.eval_shape(lambda *xs: rec.fn(real_jnp, *xs), *structs))
    assert [(o.dtype, o.weak_type, o.shape) for o in ours] == [(t.dtype, t.weak_type, t.shape) for t in theirs]


@pytest.mark.parametrize("rec", _params("grads", lambda r: r.diff))
def test_gradients_against_finite_differences(rec: Rec, rng):
    args = rec.make_args(rng)
    tu.check_grads(lambda *xs: rec.fn(jnp, *xs), args, order=1, rng=rng, atol=2e-2, rtol=2e-2, err_msg=rec.name)


@pytest.mark.parametrize("rec", _params("batching", lambda r: r.batch))
def test_vmap_against_loop(rec: Rec, rng):
    examples = [rec.make_args(rng) for _ in range(3)]
    axes = [0] + [None] * (len(rec.args) - 1)  # batch the first operand; the others are shared
    tu.check_batching(lambda *xs: rec.fn(jnp, *xs), tu.stack_examples(examples, axes), in_axes=axes,
                      atol=rec.tol, rtol=rec.tol)
    if len(rec.args) > 1:
        axes = [None] * (len(rec.args) - 1) + [-1]
        tu.check_batching(lambda *xs: rec.fn(jnp, *xs), tu.stack_examples(examples, axes), in_axes=axes,
                          atol=rec.tol, rtol=rec.tol)


# --------------------------------------------------------------------------------------------------------------
# Creation functions
# --------------------------------------------------------------------------------------------------------------

CREATION = {
    "arange_stop": lambda m: m.arange(5), "arange_float_step": lambda m: m.arange(0.0, 1.0, 0.25),
    "arange_neg": lambda m: m.arange(5, -3, -2), "arange_dtype": lambda m: m.arange(3, dtype=m.float16),
    "linspace": lambda m: m.linspace(-1.0, 2.0, 7), "linspace_noend": lambda m: m.linspace(0, 1, 4, endpoint=False),
    "logspace": lambda m: m.logspace(0, 2, 3), "eye": lambda m: m.eye(3, 4, k=1),
    "identity": lambda m: m.identity(3, dtype=m.int32), "tri": lambda m: m.tri(3, 4, k=-1),
    "zeros": lambda m: m.zeros((2, 3), m.int8), "ones": lambda m: m.ones(4), "full": lambda m: m.full((2,), 7),
    "full_like": lambda m: m.full_like(m.ones((2, 2), m.int32), 2.7), "zeros_like": lambda m: m.zeros_like(
        m.ones(3, m.float16)), "ones_like_dtype": lambda m: m.ones_like(m.ones(3), dtype=m.int32),
    "empty_shape": lambda m: m.empty((2, 3)).shape, "meshgrid": lambda m: m.meshgrid(m.arange(3), m.arange(2)),
    "meshgrid_ij": lambda m: m.meshgrid(m.arange(3), m.arange(2), indexing="ij"),
    "array_nested": lambda m: m.array([[1, 2], [3, 4]]), "array_mixed": lambda m: m.array([1, 2.5]),
    "array_ndmin": lambda m: m.array(3.0, ndmin=2),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_matches_numpy(name):
    ours, expected = CREATION[name](jnp), _listify(name, CREATION[name](np))
    if name == "empty_shape":
        assert ours == expected
        return
    tu.assert_allclose(ours, expected, atol=1e-6, rtol=1e-6, check_dtypes=False)


@pytest.mark.parametrize("name", [n for n in sorted(CREATION) if n != "empty_shape"])
def test_creation_dtypes_match_jax(name):
    real = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    ours = jax.tree_util.tree_leaves(CREATION[name](jnp))
    theirs = real.tree_util.tree_leaves(real.eval_shape(lambda: CREATION[name](real_jnp)))
    assert [(o.dtype, o.weak_type) for o in ours] == [(t.dtype, t.weak_type) for t in theirs]


# --------------------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------------------

_EAGER_RAW_NUMPY_ERRORS = ("core bug: eager structural primitives (reshape, concatenate) skip their shape rules, so "
                           "bad shapes surface as raw NumPy errors that do not name the operand shapes; repro: jnp.reshape(jnp.ones((2, 3)), (4, 2)) "
                           "raises 'cannot reshape array of size 6 into shape (4,2)' (under jit: 'cannot reshape "
                           "array of shape (2, 3) (size 6) into shape (4, 2) (size 8)')")


@pytest.mark.parametrize("jit", [False, True])
def test_reshape_error_names_shapes(jit):
    f = jax.jit(lambda x: jnp.reshape(x, (4, 2))) if jit else (lambda x: jnp.reshape(x, (4, 2)))
    with pytest.raises((TypeError, ValueError), match=r"(?s)\(2, 3\).*\(4, 2\)"):
        f(jnp.ones((2, 3)))


@pytest.mark.parametrize("jit", [False, True])
def test_concatenate_error_names_shapes(jit):
    f = lambda a, b: jnp.concatenate([a, b], axis=0)  # noqa: E731
    f = jax.jit(f) if jit else f
    with pytest.raises((TypeError, ValueError), match=r"(?s)\(2, 3\).*\(3, 2\)"):
        f(jnp.ones((2, 3)), jnp.ones((3, 2)))


@pytest.mark.parametrize("jit", [False, True])
def test_cumulative_reductions_of_weak_scalars_are_not_weak(jit):
    # As jnp: the operand is cast to its accumulation dtype strongly, so cumsum(3) is int32[1], not weak.
    fns = [lambda: jnp.cumsum(jnp.asarray(3)), lambda: jnp.cumprod(jnp.asarray(2.0)),
           lambda: jnp.nancumsum(jnp.asarray(1.0)), lambda: jnp.cumsum(jnp.asarray(3), dtype=jnp.int32),
           lambda: jnp.cumulative_sum(jnp.zeros(2, jnp.int32) + 1)]
    for fn in fns:
        out = jax.jit(fn)() if jit else fn()
        assert not out.aval.weak_type and out.dtype in (i32, f32) and out.ndim == 1, fn


def test_cumulative_sum_and_prod_validate_like_jax():
    with pytest.raises(ValueError, match="non-scalar"):
        jnp.cumulative_sum(jnp.float32(1))
    with pytest.raises(ValueError, match="axis was not set"):
        jnp.cumulative_prod(jnp.ones((2, 3)))


def test_axis_out_of_bounds():
    with pytest.raises(ValueError, match="axis"):
        jnp.sum(jnp.ones((2, 3)), axis=2)


def test_non_array_argument_error():
    with pytest.raises(TypeError, match="(?i)str|object"):
        jnp.sin("text")


# --------------------------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       seed=st.integers(0, 2 ** 16))
def test_broadcasting_add_matches_numpy(shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shapes.input_shapes[0]).astype(np.float32)
    y = rng.standard_normal(shapes.input_shapes[1]).astype(np.float32)
    out = jnp.add(x, y)
    assert out.shape == shapes.result_shape
    tu.assert_allclose(out, np.add(x, y))
    tu.assert_allclose(jax.jit(jnp.multiply)(x, y), np.multiply(x, y))


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3))
def test_broadcast_shapes_of_where_matches_numpy(shapes):
    c = np.ones(shapes.input_shapes[0], bool)
    x = np.zeros(shapes.input_shapes[1], np.float32)
    y = np.ones(shapes.input_shapes[2], np.float32)
    assert jnp.where(c, x, y).shape == np.where(c, x, y).shape == shapes.result_shape


@given(data=st.data())
def test_transpose_round_trip(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, max_side=4))
    perm = data.draw(st.permutations(range(len(shape))))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = jnp.transpose(x, perm)
    np.testing.assert_array_equal(np.asarray(t), np.transpose(x, perm))
    inverse = np.argsort(perm)
    np.testing.assert_array_equal(np.asarray(jnp.transpose(t, tuple(inverse))), x)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: jnp.transpose(v, perm))(x)), np.transpose(x, perm))


@given(data=st.data())
def test_reshape_round_trip(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, max_side=4))
    size = int(np.prod(shape))
    # A random target shape with the same size: factor the size into up to 3 parts (plus an inferred -1).
    parts = []
    rest = size
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0] or [1]
        d = data.draw(st.sampled_from(divisors))
        parts.append(d)
        rest //= d
    target = tuple(parts) + (rest,)
    use_minus_one = data.draw(st.booleans()) and size > 0
    spec = tuple(parts) + (-1,) if use_minus_one else target
    x = np.arange(size, dtype=np.float32).reshape(shape)
    r = jnp.reshape(x, spec)
    assert r.shape == target
    np.testing.assert_array_equal(np.asarray(r), x.reshape(target))
    np.testing.assert_array_equal(np.asarray(jnp.reshape(r, shape)), x)
    g = jax.grad(lambda v: jnp.sum(jnp.reshape(v, spec) * 2.0))(x)
    np.testing.assert_array_equal(np.asarray(g), np.full(shape, 2.0, np.float32))
