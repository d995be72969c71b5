"""Table-driven tests of the elementwise `fluxion.lax` primitives.

One record per primitive (or per parameterization of one): the fluxion function, the plain-NumPy reference from
`fluxion._src.lax_reference`, its arity, the dtypes it accepts, how to draw inputs, and tolerances. Each record is
expanded over shapes and dtypes and checked for:

* values against the NumPy reference, eagerly and under `fluxion.jit` (which must also agree with eager on weak
  types);
* eager output shape/dtype/weak type equal to abstract evaluation (`eval_shape`, `make_jaxpr` out avals);
* first- and second-order JVPs and VJPs against finite differences (differentiable primitives, float32/complex64);
* `vmap` against a Python loop over the batch for several `in_axes`, including an empty batch.

Known core bugs are kept as strict xfails in `KNOWN_FAILURES`; each names a minimal reproducer.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy
import fluxion.lax as lax
from fluxion._src import lax_reference as ref
from fluxion._src import test_util as tu

f32, f16, c64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.complex64)
bf16 = np.dtype(ml_dtypes.bfloat16)
i8, i32, u8, u32 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.uint32)
b1 = np.dtype(np.bool_)

FLOATS = (f32, f16, bf16)
INTS = (i32, i8, u8, u32)
SIGNED = (i32, i8)


@dataclasses.dataclass(frozen=True)
class Op:
    """One elementwise operation under test.

    Attributes:
      name: test id.
      fn: the fluxion function (positional array arguments).
      ref: the NumPy reference with the same signature.
      nargs: arity.
      dtypes: dtypes the values test runs on (all operands share it unless `make_args` says otherwise).
      kind: `test_util.RAND_KINDS` name, or one per operand.
      make_args: optional (rng, shapes, dtype) -> list of NumPy operands, overriding `kind`.
      diff: True if differentiable (grad checks run for `grad_dtypes`).
      grad_dtypes: dtypes for the derivative checks.
      tol: value tolerance (number or dtype dict) or None for the default.
      grad_tol: derivative tolerance or None.
      batch: run the vmap checks.
    """

    name: str
    fn: Callable
    ref: Callable
    nargs: int
    dtypes: tuple
    kind: Any = "normal"
    make_args: Callable | None = None
    diff: bool = True
    grad_dtypes: tuple = (f32,)
    tol: Any = None
    grad_tol: Any = None
    batch: bool = True

    def args(self, rng, shapes, dtype):
        if self.make_args is not None:
            return self.make_args(rng, shapes, dtype)
        return tu.rand_args(rng, shapes, [dtype] * self.nargs, self.kind)


def _rem_args(rng, shapes, dtype):
    """Dividends whose quotient has a fractional part in (0.2, 0.8): rem is smooth there (no jump within eps)."""
    y = tu.rand_like(rng, shapes[1], dtype, "nonzero")
    if np.dtype(dtype).kind in "iu":
        return [tu.rand_like(rng, shapes[0], dtype, "int"), y]
    q = rng.integers(-3, 4, shapes[0]) + rng.uniform(0.2, 0.8, shapes[0])
    return [np.asarray(q * np.asarray(y, np.float64)).astype(dtype), y]


def _shift_args(rng, shapes, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    x = tu.rand_like(rng, shapes[0], dtype, "int")
    y = rng.integers(0, bits + 3, shapes[1]).astype(dtype)  # includes out-of-range amounts (>= bits)
    return [x, y]


def _pow_int_args(rng, shapes, dtype):
    return [tu.rand_like(rng, shapes[0], dtype, "nonzero"), rng.integers(-3, 4, shapes[1]).astype(np.int32)]


def _pow_args(rng, shapes, dtype):
    return [tu.rand_like(rng, shapes[0], dtype, "positive"), tu.rand_like(rng, shapes[1], dtype, "uniform")]


def _complex_args(rng, shapes, dtype):
    return [tu.rand_like(rng, s, f32) for s in shapes]


def _select_args(rng, shapes, dtype):
    return [tu.rand_like(rng, shapes[0], b1, "bool")] + [tu.rand_like(rng, s, dtype) for s in shapes[1:]]


def _select3_args(rng, shapes, dtype):
    return ([rng.integers(0, 3, shapes[0]).astype(np.int32)] + [tu.rand_like(rng, s, dtype) for s in shapes[1:]])


def _clamp_args(rng, shapes, dtype):
    lo = np.asarray(-0.5 - rng.uniform(0, 0.3, shapes[0])).astype(dtype)
    hi = np.asarray(0.5 + rng.uniform(0, 0.3, shapes[2])).astype(dtype)
    x = np.asarray(rng.uniform(-1.5, 1.5, shapes[1])).astype(dtype)
    # Keep x away from the bounds so the clamp's kinks are outside the finite-difference stencil.
    x = np.where(np.abs(np.asarray(x, np.float64) - np.asarray(lo, np.float64)) < 0.05, x + 0.1, x)
    x = np.where(np.abs(np.asarray(x, np.float64) - np.asarray(hi, np.float64)) < 0.05, x - 0.1, x).astype(dtype)
    return [lo, x, hi]


def _halves_args(rng, shapes, dtype):  # exact ties k + 0.5, where the two rounding methods differ
    return [np.asarray(rng.integers(-4, 4, shapes[0]) + 0.5).astype(dtype)]


def _convert(new_dtype):
    return (lambda x: lax.convert_element_type(x, new_dtype), lambda x: ref.convert_element_type(x, new_dtype))


def _unary(name, dtypes=FLOATS, kind="normal", diff=True, grad_dtypes=(f32,), fn=None, reference=None, **kw):
    return Op(name, fn or getattr(lax, name), reference or getattr(ref, name), 1, dtypes, kind, diff=diff,
              grad_dtypes=grad_dtypes, **kw)


def _binary(name, dtypes=FLOATS, kind="normal", diff=True, grad_dtypes=(f32,), fn=None, reference=None, **kw):
    return Op(name, fn or getattr(lax, name), reference or getattr(ref, name), 2, dtypes, kind, diff=diff,
              grad_dtypes=grad_dtypes, **kw)


_TRANSCENDENTAL_TOL = {f32: 1e-5, f16: 4e-3, bf16: 2e-2, c64: 1e-5}

OPS = [
    # -- unary, floating -------------------------------------------------------------------------------------------
    _unary("neg", FLOATS + SIGNED + (c64,), grad_dtypes=(f32, c64)),
    _unary("sign", FLOATS + SIGNED + (u8, c64), kind="nonzero"),
    _unary("floor", FLOATS, kind="fraction"),
    _unary("ceil", FLOATS, kind="fraction"),
    _unary("round", FLOATS, kind="fraction"),
    _unary("round_half_even", FLOATS, kind="fraction", fn=lambda x: lax.round(x, 1),
           reference=lambda x: ref.round(x, 1)),
    Op("round_halves", lax.round, ref.round, 1, FLOATS, make_args=_halves_args, diff=False),
    Op("round_half_even_halves", lambda x: lax.round(x, 1), lambda x: ref.round(x, 1), 1, FLOATS,
       make_args=_halves_args, diff=False),
    _unary("is_finite", FLOATS, kind="special", diff=False),
    _unary("exp", FLOATS + (c64,), grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _unary("exp2", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("log", FLOATS + (c64,), kind="positive", grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _unary("log1p", FLOATS, kind="positive", tol=_TRANSCENDENTAL_TOL),
    _unary("expm1", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("tanh", FLOATS + (c64,), tol=_TRANSCENDENTAL_TOL),
    _unary("logistic", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("sin", FLOATS + (c64,), grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _unary("cos", FLOATS + (c64,), grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _unary("tan", FLOATS, kind="uniform", tol=_TRANSCENDENTAL_TOL),
    _unary("asin", FLOATS, kind="unit", tol=_TRANSCENDENTAL_TOL),
    _unary("acos", FLOATS, kind="unit", tol=_TRANSCENDENTAL_TOL),
    _unary("atan", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("sinh", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("cosh", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("asinh", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("acosh", FLOATS, kind="gt_one", tol=_TRANSCENDENTAL_TOL),
    _unary("atanh", FLOATS, kind="unit", tol=_TRANSCENDENTAL_TOL),
    _unary("sqrt", FLOATS + (c64,), kind="positive", grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _unary("rsqrt", FLOATS, kind="positive", tol=_TRANSCENDENTAL_TOL),
    _unary("cbrt", FLOATS, kind="nonzero", tol=_TRANSCENDENTAL_TOL),
    _unary("abs", FLOATS + SIGNED + (c64,), kind="nonzero", grad_dtypes=(f32, c64)),
    _unary("square", FLOATS + SIGNED + (c64,), grad_dtypes=(f32, c64)),
    _unary("real", (c64,), grad_dtypes=(c64,)),
    _unary("imag", (c64,), grad_dtypes=(c64,)),
    _unary("conj", (c64,), grad_dtypes=(c64,)),
    _unary("erf", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("erfc", FLOATS, tol=_TRANSCENDENTAL_TOL),
    _unary("erf_inv", FLOATS, kind="unit", tol=_TRANSCENDENTAL_TOL, grad_tol=2e-2),
    _unary("lgamma", FLOATS, kind="positive", tol=_TRANSCENDENTAL_TOL),
    _unary("digamma", FLOATS, kind="positive", tol=_TRANSCENDENTAL_TOL),
    # -- unary, integer ---------------------------------------------------------------------------------------------
    _unary("bitwise_not", INTS + (b1,), kind="int", diff=False),
    _unary("population_count", INTS, kind="int", diff=False),
    _unary("clz", INTS, kind="int", diff=False),
    _unary("integer_pow_3", FLOATS + SIGNED + (c64,), fn=lambda x: lax.integer_pow(x, 3),
           reference=lambda x: ref.integer_pow(x, 3), grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _unary("integer_pow_0", (f32, i32), fn=lambda x: lax.integer_pow(x, 0), reference=lambda x: ref.integer_pow(x, 0)),
    _unary("integer_pow_1", (f32,), fn=lambda x: lax.integer_pow(x, 1), reference=lambda x: ref.integer_pow(x, 1)),
    _unary("integer_pow_neg2", (f32,), kind="nonzero", fn=lambda x: lax.integer_pow(x, -2),
           reference=lambda x: ref.integer_pow(x, -2), tol=_TRANSCENDENTAL_TOL),
    # -- conversions --------------------------------------------------------------------------------------------------
    Op("convert_f32_i32", *_convert(i32), 1, (f32,), "fraction", diff=False),
    Op("convert_f32_u8", *_convert(u8), 1, (f32,), "special", diff=False),
    Op("convert_f32_bool", *_convert(b1), 1, (f32,), "special", diff=False),
    Op("convert_f32_f16", *_convert(f16), 1, (f32,), diff=False, tol=4e-3),
    Op("convert_f32_bf16", *_convert(bf16), 1, (f32,), diff=False, tol=2e-2),
    Op("convert_f16_f32", *_convert(f32), 1, (f16, bf16), diff=False),
    Op("convert_i32_f32", *_convert(f32), 1, (i32, u8, i8, b1), "int", diff=False),
    Op("convert_i32_u8", *_convert(u8), 1, (i32,), "int", diff=False),
    Op("convert_u8_i8", *_convert(i8), 1, (u8,), "int", diff=False),
    Op("convert_f32_c64", *_convert(c64), 1, (f32,), grad_dtypes=(f32,)),
    Op("convert_f32_f32_noop", *_convert(f32), 1, (f32,)),
    Op("bitcast_f32_i32", lambda x: lax.bitcast_convert_type(x, np.int32),
       lambda x: ref.bitcast_convert_type(x, np.int32), 1, (f32,), diff=False),
    Op("bitcast_i32_u8", lambda x: lax.bitcast_convert_type(x, np.uint8),
       lambda x: ref.bitcast_convert_type(x, np.uint8), 1, (i32,), "int", diff=False),
    # -- binary -----------------------------------------------------------------------------------------------------
    _binary("add", FLOATS + INTS + (c64,), grad_dtypes=(f32, c64)),
    _binary("sub", FLOATS + INTS + (c64,), grad_dtypes=(f32, c64)),
    _binary("mul", FLOATS + INTS + (c64,), grad_dtypes=(f32, c64)),
    _binary("div", FLOATS + SIGNED + (u8, c64), kind="nonzero", grad_dtypes=(f32, c64), tol=_TRANSCENDENTAL_TOL),
    _binary("rem", FLOATS + SIGNED + (u8,), make_args=_rem_args, tol=_TRANSCENDENTAL_TOL),
    _binary("max", FLOATS + INTS + (b1,)),
    _binary("min", FLOATS + INTS + (b1,)),
    _binary("max_special", (f32,), kind="special", diff=False, fn=lax.max, reference=ref.max),
    _binary("min_special", (f32,), kind="special", diff=False, fn=lax.min, reference=ref.min),
    _binary("atan2", FLOATS, kind="nonzero", tol=_TRANSCENDENTAL_TOL),
    _binary("nextafter", (f32,), diff=False),
    _binary("pow", (f32, f16, c64), make_args=_pow_args, tol=_TRANSCENDENTAL_TOL),
    _binary("pow_int_exponent", (f32,), make_args=_pow_int_args, fn=lax.pow, reference=ref.pow,
            tol=_TRANSCENDENTAL_TOL),
    _binary("bitwise_and", INTS + (b1,), kind="int", diff=False),
    _binary("bitwise_or", INTS + (b1,), kind="int", diff=False),
    _binary("bitwise_xor", INTS + (b1,), kind="int", diff=False),
    _binary("shift_left", INTS, make_args=_shift_args, diff=False),
    _binary("shift_right_logical", INTS, make_args=_shift_args, diff=False),
    _binary("shift_right_arithmetic", SIGNED + (u8,), make_args=_shift_args, diff=False),
    _binary("eq", FLOATS + INTS + (b1,), kind="small_int", diff=False),
    _binary("ne", FLOATS + INTS + (b1,), kind="small_int", diff=False),
    _binary("lt", FLOATS + INTS + (b1,), kind="small_int", diff=False),
    _binary("le", FLOATS + INTS + (b1,), kind="small_int", diff=False),
    _binary("gt", FLOATS + INTS + (b1,), kind="small_int", diff=False),
    _binary("ge", FLOATS + INTS + (b1,), kind="small_int", diff=False),
    _binary("eq_special", (f32,), kind="special", diff=False, fn=lax.eq, reference=ref.eq),
    _binary("complex", (f32,), make_args=_complex_args),
    # -- n-ary ------------------------------------------------------------------------------------------------------
    Op("select_n_bool", lax.select_n, ref.select_n, 3, (f32, i32, c64), make_args=_select_args),
    Op("select_n_int3", lax.select_n, ref.select_n, 4, (f32,), make_args=_select3_args),
    Op("clamp", lax.clamp, ref.clamp, 3, (f32, f16, i32), make_args=_clamp_args),
]

OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate op names in the table"

# Ops whose operands must be a scalar or all equal shapes (every lax elementwise op); the shape lists below
# give each operand's shape.
UNARY_SHAPES = [((),), ((4,),), ((2, 3),), ((0,),)]
BINARY_SHAPES = [((), ()), ((4,), (4,)), ((2, 3), (2, 3)), ((), (2, 3)), ((2, 3), ()), ((0,), (0,))]
NARY_SHAPES = {3: [((), (), ()), ((2, 3),) * 3, ((), (2, 3), (2, 3)), ((2, 3), (2, 3), ())],
               4: [((),) * 4, ((2, 3),) * 4, ((), (2, 3), (2, 3), (2, 3))]}


def _shape_cases(op: Op) -> list:
    if op.nargs == 1:
        return UNARY_SHAPES
    if op.nargs == 2:
        return BINARY_SHAPES
    cases = NARY_SHAPES[op.nargs]
    if op.name == "clamp":  # clamp's bounds are scalars or x's shape; x is the middle operand
        return [((), (), ()), ((2, 3),) * 3, ((), (2, 3), ()), ((2, 3), (2, 3), ())]
    return cases


# --------------------------------------------------------------------------------------------------------------
# Known core bugs (strict xfails): (check, op name, dtype name or None for all) -> reason
# --------------------------------------------------------------------------------------------------------------

_BITCAST_SHAPE = ("core bug: bitcast_convert_type to a narrower dtype merges the new trailing axis into the last "
                  "axis; repro: lax.bitcast_convert_type(jnp.zeros((2, 3), jnp.int32), jnp.uint8).shape == (2, 12), "
                  "expected (2, 3, 4) (its own abstract eval says (2, 3, 4))")
_DIGAMMA_JVP = ("core gap: no JVP rule for digamma (JAX uses polygamma(1, x)); repro: "
                "fluxion.grad(lax.digamma)(1.5) raises NotImplementedError")
_COMPLEX_UNBROADCAST = ("core bug: the transpose of lax.complex does not sum the cotangent over a broadcast scalar "
                        "operand; repro: fluxion.vjp(lax.complex, np.float32(1), np.ones((2, 3), np.float32))[1]"
                        "(jnp.ones((2, 3), jnp.complex64))[0].shape == (2, 3), expected ()")

# (check, op name) -> (reason, predicate(dtype, shapes, axes) selecting the affected cases, or None for all).
KNOWN_FAILURES: dict[tuple, tuple] = {}


def _marks(check: str, op: Op, dtype=None, shapes=None, axes=None) -> list:
    entry = KNOWN_FAILURES.get((check, op.name))
    if entry is not None:
        reason, applies = entry
        if applies is None or applies(dtype, shapes, axes):
            return [pytest.mark.xfail(reason=reason, strict=True)]
    return []


def _value_params():
    params = []
    for op in OPS:
        for dt in op.dtypes:
            for shapes in _shape_cases(op):
                sid = "x".join("(" + ",".join(map(str, s)) + ")" for s in shapes)
                params.append(pytest.param(op, dt, shapes, id=f"{op.name}-{np.dtype(dt).name}-{sid}",
                                           marks=_marks("values", op, dt, shapes)))
    return params


def _grad_params():
    params = []
    for op in OPS:
        if not op.diff:
            continue
        for dt in op.grad_dtypes:
            cases = [c for c in _shape_cases(op) if 0 not in sum(c, ())]
            # Scalars, and the all-arrays case; mixed scalar/array cases exercise the unbroadcasting transposes.
            for shapes in cases[:1] + [c for c in cases if c != cases[0] and (2, 3) in c]:
                sid = "x".join("(" + ",".join(map(str, s)) + ")" for s in shapes)
                params.append(pytest.param(op, dt, shapes, id=f"{op.name}-{np.dtype(dt).name}-{sid}",
                                           marks=_marks("grads", op, dt, shapes)))
    return params


def _batch_axes(nargs: int) -> list:
    """in_axes cases over operands of per-example shape (2, 3) (a batch axis is inserted at each given axis)."""
    if nargs == 1:
        return [(0,), (1,), (-1,)]
    if nargs == 2:
        return [(0, 0), (1, 0), (None, 0), (0, None), (-1, 1)]
    return [(0,) * nargs, (None,) + (1,) * (nargs - 1), (0,) + (None,) * (nargs - 1), (-1,) + (0,) * (nargs - 1)]


def _batch_params():
    params = []
    for op in OPS:
        if not op.batch:
            continue
        dt = op.dtypes[0]
        full = [c for c in _shape_cases(op) if all(s == (2, 3) for s in c)]
        for axes in _batch_axes(op.nargs):
            params.append(pytest.param(op, dt, full[0], axes, id=f"{op.name}-{np.dtype(dt).name}-axes{axes}",
                                       marks=_marks("batching", op, dt, full[0], axes)))
        mixed = [c for c in _shape_cases(op) if () in c and (2, 3) in c]
        if mixed:  # a scalar operand next to array operands, batched differently
            shapes = mixed[0]
            axes = tuple(0 if s == () else 1 for s in shapes)
            params.append(pytest.param(op, dt, shapes, axes, id=f"{op.name}-{np.dtype(dt).name}-mixed{axes}",
                                       marks=_marks("batching", op, dt, shapes, axes)))
    return params


# --------------------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,dtype,shapes", _value_params())
def test_values_eager_jit_and_abstract_eval(op: Op, dtype, shapes, rng):
    args = op.args(rng, shapes, dtype)
    expected = op.ref(*args)
    out = tu.check_against_numpy(op.fn, op.ref, args, tol=op.tol, check_dtypes=True, err_msg=f"{op.name} eager")
    assert np.shape(out) == np.shape(expected)
    tu.check_jit(op.fn, args, atol=op.tol, rtol=op.tol, err_msg=f"{op.name} jit vs eager")
    jitted = fluxion.jit(op.fn)(*[fluxion.numpy.asarray(a) for a in args])
    tu.assert_allclose(jitted, expected, atol=op.tol, rtol=op.tol, err_msg=f"{op.name} jit vs NumPy")
    tu.check_eval_shape(op.fn, args, err_msg=f"{op.name} eval_shape")


@pytest.mark.parametrize("op,dtype,shapes", _grad_params())
def test_grads_first_and_second_order(op: Op, dtype, shapes, rng):
    args = op.args(rng, shapes, dtype)
    tu.check_grads(op.fn, args, order=2, modes=("fwd", "rev"), atol=op.grad_tol, rtol=op.grad_tol, rng=rng,
                   err_msg=op.name)


@pytest.mark.parametrize("op,dtype,shapes,axes", _batch_params())
def test_vmap_matches_loop(op: Op, dtype, shapes, axes, rng):
    args = tu.stack_examples([op.args(rng, shapes, dtype) for _ in range(3)], axes)
    tu.check_batching(op.fn, args, in_axes=axes, atol=op.tol, rtol=op.tol, err_msg=f"{op.name} vmap{axes}")


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_vmap_out_axes(out_axes, rng):
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    tu.check_batching(lax.sin, [x], in_axes=1, out_axes=out_axes)


def test_vmap_nested_binary(rng):
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    y = rng.standard_normal((4, 3)).astype(np.float32)
    inner = fluxion.vmap(lax.mul, in_axes=(1, 0))  # per example: x (2, 4) axis 1 against y (4,) axis 0
    out = fluxion.vmap(inner, in_axes=(0, 1))(x, y)
    expected = np.einsum("acb,ba->abc", x, y)
    tu.assert_allclose(out, expected)


# --------------------------------------------------------------------------------------------------------------
# Literal and scalar handling
# --------------------------------------------------------------------------------------------------------------

def test_python_scalar_operand_adopts_array_dtype():
    x = fluxion.numpy.arange(3, dtype=np.int8)
    out = lax.add(x, 1)
    assert out.dtype == np.int8 and not out.weak_type
    tu.assert_allclose(out, np.arange(1, 4, dtype=np.int8))
    y = lax.mul(2.0, fluxion.numpy.ones(2, dtype=f16))
    assert y.dtype == f16


_EAGER_SELECT_UNCHECKED = ("core bug: eager lax.select_n skips its shape/dtype rule (it only runs under tracing), so a "
                           "float selector is silently accepted; repro: lax.select_n(np.ones(2, np.float32), "
                           "np.ones(2, np.float32), np.zeros(2, np.float32)) returns an Array instead of raising "
                           "TypeError (under jit it raises)")


def test_mismatched_dtypes_are_rejected():
    with pytest.raises(TypeError, match=r"(?s)float32.*int32"):
        lax.add(np.ones(2, np.float32), np.ones(2, np.int32))


def test_mismatched_dtypes_are_rejected_under_jit():
    with pytest.raises(TypeError, match=r"(?s)float32.*int32"):
        fluxion.jit(lax.add)(np.ones(2, np.float32), np.ones(2, np.int32))


def test_mismatched_shapes_are_rejected():
    with pytest.raises((TypeError, ValueError), match=r"\(2,\).*\(3,\)"):
        lax.mul(np.ones(2, np.float32), np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["sin", "exp", "log", "sqrt", "floor"])
def test_float_only_ops_reject_integers(name):
    with pytest.raises(TypeError, match="int32"):
        getattr(lax, name)(np.arange(3, dtype=np.int32))


def test_bitwise_ops_reject_floats():
    with pytest.raises(TypeError, match="float32"):
        lax.bitwise_and(np.ones(2, np.float32), np.ones(2, np.float32))


def test_select_n_rejects_float_predicate():
    with pytest.raises(TypeError, match="float32"):
        lax.select_n(np.ones(2, np.float32), np.ones(2, np.float32), np.zeros(2, np.float32))


def test_select_n_rejects_float_predicate_under_jit():
    with pytest.raises(TypeError, match="float32"):
        fluxion.jit(lax.select_n)(np.ones(2, np.float32), np.ones(2, np.float32), np.zeros(2, np.float32))


def test_max_min_gradient_splits_ties_evenly():
    x = fluxion.numpy.float32(1.5)
    gx, gy = fluxion.grad(lambda a, b: lax.max(a, b), argnums=(0, 1))(x, x)
    assert float(gx) == 0.5 and float(gy) == 0.5


def test_pow_gradient_at_zero_exponent_and_base():
    # As JAX: d/dx x^y at y == 0 is 0 for an integer exponent (not 0 * inf), but the plain formula (nan at x == 0)
    # for a float exponent; d/dy x^y at x == 0 is 0 by convention.
    gx_int = fluxion.grad(lambda x: lax.pow(x, np.int32(0)))(np.float32(0.0))
    gx_float = fluxion.grad(lambda x: lax.pow(x, np.float32(0.0)))(np.float32(0.0))
    gy = fluxion.grad(lambda y: lax.pow(np.float32(0.0), y))(np.float32(2.0))
    assert float(gx_int) == 0.0 and np.isnan(float(gx_float)) and float(gy) == 0.0


def test_reference_agrees_with_real_jax_on_integer_semantics():
    """Validates the NumPy reference itself against `jax.lax` on the operations with non-obvious semantics."""
    jax = pytest.importorskip("jax")
    x = np.array([-8, 8, -1, 5, 7, -128 + 1], np.int32)
    y = np.array([1, 40, 31, -1, 32, 3], np.int32)
    d = np.array([3, -3, 2, -2, 3, 5], np.int32)
    for name, b in [("shift_left", y), ("shift_right_logical", y), ("shift_right_arithmetic", y), ("rem", d),
                    ("div", d)]:
        np.testing.assert_array_equal(getattr(ref, name)(x, b), np.asarray(getattr(jax.lax, name)(x, b)),
                                      err_msg=name)
    np.testing.assert_array_equal(ref.clz(x), np.asarray(jax.lax.clz(x)))
    np.testing.assert_array_equal(ref.population_count(x), np.asarray(jax.lax.population_count(x)))
    f = np.array([np.nan, 3e9, -3e9, -2.7, 2.5, -0.5, np.inf], np.float32)
    for dt in (np.int32, np.uint8, np.int8):
        np.testing.assert_array_equal(ref.convert_element_type(f, dt),
                                      np.asarray(jax.lax.convert_element_type(f, dt)), err_msg=str(dt))
    np.testing.assert_array_equal(ref.round(f, 0), np.asarray(jax.lax.round(f, 0)))
    np.testing.assert_array_equal(ref.round(f, 1), np.asarray(jax.lax.round(f, 1)))


# --------------------------------------------------------------------------------------------------------------
# float64 derivatives (64-bit mode): finite differences are accurate to ~1e-8 here, so this catches derivative
# rules that are only approximately right (which the float32 tolerance of 1e-2 would let through).
# --------------------------------------------------------------------------------------------------------------

@pytest.fixture
def x64():
    old = fluxion.config.jax_enable_x64
    fluxion.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        fluxion.config.update("jax_enable_x64", old)


def _f64_grad_params():
    out = []
    for op in OPS:
        if not op.diff or f32 not in op.grad_dtypes or op.nargs > 2 or op.name.startswith("convert_"):
            continue  # (conversions fix their output dtype, so they have no float64 variant)
        shapes = ((2, 3),) * op.nargs
        out.append(pytest.param(op, shapes, id=op.name, marks=_marks("grads", op, np.dtype(np.float64), shapes)))
    return out


@pytest.mark.parametrize("op,shapes", _f64_grad_params())
def test_grads_float64_tight(op: Op, shapes, rng, x64):
    args = [np.asarray(a).astype(np.float64) if np.asarray(a).dtype == f32 else a
            for a in op.args(rng, shapes, f32)]
    out = op.fn(*[fluxion.numpy.asarray(a) for a in args])
    assert np.asarray(out).dtype in (np.float64, np.complex128, np.bool_, np.int64), np.asarray(out).dtype
    tu.check_grads(op.fn, args, order=2, modes=("fwd", "rev"), rng=rng, atol=1e-6, rtol=1e-6, eps=1e-5,
                   err_msg=f"{op.name} float64")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_large_select_is_bit_exact_against_numpy_where(dtype):
    from fluxion._src.backends.eager.elementwise import SELECT_BITS_MIN_ELEMENTS, _select_n
    rng = np.random.default_rng(3)
    n = SELECT_BITS_MIN_ELEMENTS + 5
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    y[4:6] = [np.nan, -0.0]
    m = rng.random(n) < 0.5          # unpredictable: the case the bit-mask path exists for
    it = np.int32 if dtype == np.float32 else np.int64
    want = np.where(m, x, y).view(it)
    np.testing.assert_array_equal(_select_n(m, y, x).view(it), want)       # the backend (any float width)
    np.testing.assert_array_equal(_select_n(np.stack([m, m])[:, ::1][0], y, x).view(it), want)
    if dtype == np.float32:                                                 # through the public API
        got = np.asarray(lax.select(fluxion.numpy.asarray(m), fluxion.numpy.asarray(x), fluxion.numpy.asarray(y)))
        np.testing.assert_array_equal(got.view(it), want)


def test_sign_returns_signed_zeros_and_nans_as_jax_does():
    jax = pytest.importorskip("jax")
    x = np.array([-0.0, 0.0, np.nan, -np.nan, -3.0, 2.5, -np.inf], np.float32)
    want = np.asarray(jax.lax.sign(x))
    for got in (lax.sign(x), fluxion.jit(lax.sign)(x)):
        got = np.asarray(got)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
