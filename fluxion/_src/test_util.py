"""Helpers for testing fluxion transformations against independent oracles.

Used only by the test suite (it imports NumPy and fluxion, never JAX). The checks are:

* `check_grads`: forward mode against central finite differences along random directions, and reverse mode via
  the inner-product identity `<vjp(ct), t> == <ct, J t>` with `J t` also taken from finite differences, recursively
  up to a requested order (derivatives of derivatives).
* `check_batching`: `fluxion.vmap` against a Python loop over the batch that stacks the per-example results,
  including an empty (size-0) batch.
* `check_jit`: the jitted function against eager execution (values, dtypes, weak types).
* `check_eval_shape`: eager output shapes/dtypes/weak types against `eval_shape` and `make_jaxpr`'s output types.
* `check_against_numpy`: values against a NumPy reference.
* `rand_like`: NumPy random inputs of any supported dtype from a named distribution (`RAND_KINDS`).

Pytrees are supported by every check; leaves are compared with `assert_allclose`, which understands bfloat16,
complex values, NaN and infinities.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import ml_dtypes
import numpy as np

from . import api, api_util, core
from .jit import jit
from .tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten

# --------------------------------------------------------------------------------------------------------------
# Tolerances
# --------------------------------------------------------------------------------------------------------------

_bf16 = np.dtype(ml_dtypes.bfloat16)

# Default comparison tolerances per dtype (both absolute and relative), sized to the dtype's precision.
DEFAULT_TOLERANCE: dict[np.dtype, float] = {
    np.dtype(np.bool_): 0.0, np.dtype(np.int8): 0.0, np.dtype(np.int16): 0.0, np.dtype(np.int32): 0.0,
    np.dtype(np.int64): 0.0, np.dtype(np.uint8): 0.0, np.dtype(np.uint16): 0.0, np.dtype(np.uint32): 0.0,
    np.dtype(np.uint64): 0.0,
    _bf16: 2e-2, np.dtype(np.float16): 4e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-14,
    np.dtype(np.complex64): 2e-6, np.dtype(np.complex128): 1e-14,
}

# Tolerances for derivative checks: finite differences in low precision are only accurate to a few digits.
DEFAULT_GRAD_TOLERANCE: dict[np.dtype, float] = {
    _bf16: 1e-1, np.dtype(np.float16): 5e-2, np.dtype(np.float32): 1e-2, np.dtype(np.float64): 1e-6,
    np.dtype(np.complex64): 1e-2, np.dtype(np.complex128): 1e-6,
}

# Finite-difference step per dtype: large enough that rounding of f's output (ulp / eps) stays small, small enough
# that the central difference's O(eps^2) truncation error does too.
DEFAULT_EPS: dict[np.dtype, float] = {
    _bf16: 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-6,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-6,
}


def tolerance(dtype: Any, tol: float | dict | None = None, table: dict | None = None) -> float:
    """The tolerance for `dtype`: `tol` if it is a number, `tol[dtype]` if a dict has it, else the table default."""
    dt = np.dtype(dtype)
    if isinstance(tol, dict):
        for k, v in tol.items():
            if np.dtype(k) == dt:
                return float(v)
        tol = None
    if tol is not None:
        return float(tol)
    return (table or DEFAULT_TOLERANCE).get(dt, 1e-6)


# --------------------------------------------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------------------------------------------

def to_numpy(x: Any) -> np.ndarray:
    """A NumPy array holding the value of a fluxion Array, NumPy value or Python scalar."""
    return np.asarray(x)


def _is_inexact(dt: np.dtype) -> bool:
    return dt.kind in "fc" or dt == _bf16


def _comparable(x: np.ndarray) -> np.ndarray:
    """Upcasts low-precision floats (which NumPy's isclose cannot handle, e.g. bfloat16) to float64/complex128."""
    if x.dtype == _bf16 or x.dtype.kind == "f":
        return x.astype(np.float64)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x


def assert_allclose(actual: Any, expected: Any, *, atol: float | dict | None = None, rtol: float | dict | None = None,
                    check_dtypes: bool = True, check_shapes: bool = True, err_msg: str = "") -> None:
    """Asserts two pytrees have the same structure and leafwise-close values (NaNs compare equal).

    Args:
      actual, expected: pytrees of arrays/scalars.
      atol, rtol: numbers, or dicts from dtype to number; default from `DEFAULT_TOLERANCE` for the actual dtype.
      check_dtypes: also require equal dtypes (expected NumPy dtypes are compared as given).
      check_shapes: require equal shapes (otherwise NumPy broadcasting applies).

    Raises:
      AssertionError: naming the leaf index and the mismatch.
    """
    a_leaves, a_tree = tree_flatten(actual)
    e_leaves, e_tree = tree_flatten(expected)
    if a_tree != e_tree:
        raise AssertionError(f"{err_msg}: tree structures differ: {a_tree} vs {e_tree}")
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        a_np, e_np = to_numpy(a), to_numpy(e)
        where = f"{err_msg} (leaf {i})" if len(a_leaves) > 1 else err_msg
        if check_dtypes and a_np.dtype != e_np.dtype:
            raise AssertionError(f"{where}: dtype mismatch: actual {a_np.dtype}, expected {e_np.dtype}")
        if check_shapes and a_np.shape != e_np.shape:
            raise AssertionError(f"{where}: shape mismatch: actual {a_np.shape}, expected {e_np.shape}")
        # The looser of the two dtypes' tolerances applies (comparisons against float64 references included).
        at = max(tolerance(a_np.dtype, atol), tolerance(e_np.dtype, atol) if not check_dtypes else 0.0)
        rt = max(tolerance(a_np.dtype, rtol), tolerance(e_np.dtype, rtol) if not check_dtypes else 0.0)
        a_c, e_c = _comparable(a_np), _comparable(e_np)
        if a_c.dtype == np.bool_ or e_c.dtype == np.bool_ or (a_c.dtype.kind in "iu" and e_c.dtype.kind in "iu"):
            np.testing.assert_array_equal(a_c, e_c, err_msg=where)
        else:
            np.testing.assert_allclose(a_c, e_c, atol=at, rtol=rt, equal_nan=True, err_msg=where)


def _aval_triple(x: Any) -> tuple:
    a = core.get_aval(api_util.as_value(x))
    return tuple(a.shape), np.dtype(a.dtype), bool(a.weak_type)


# --------------------------------------------------------------------------------------------------------------
# Random inputs
# --------------------------------------------------------------------------------------------------------------

def _rand_normal(rng, shape):
    return rng.standard_normal(shape)


def _rand_uniform(rng, shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape)


def _rand_positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _rand_nonzero(rng, shape):
    mag = rng.uniform(0.5, 2.0, shape)
    return np.where(rng.random(shape) < 0.5, -mag, mag)


def _rand_unit(rng, shape):  # inside (-1, 1), away from the ends (asin, atanh, erf_inv)
    return rng.uniform(-0.9, 0.9, shape)


def _rand_greater_than_one(rng, shape):  # acosh
    return rng.uniform(1.2, 3.0, shape)


def _rand_small_int(rng, shape):
    return rng.integers(-5, 6, shape)


def _rand_int(rng, shape):
    return rng.integers(-100, 101, shape)


def _rand_fraction(rng, shape):  # values whose fractional part is away from 0 and 0.5 (floor/round/rem kinks)
    whole = rng.integers(-3, 4, shape)
    return whole + np.where(rng.random(shape) < 0.5, rng.uniform(0.1, 0.4, shape), rng.uniform(0.6, 0.9, shape))


def _rand_bool(rng, shape):
    return rng.random(shape) < 0.5


def _rand_special(rng, shape):  # normal values with some infinities, NaNs and zeros mixed in
    x = rng.standard_normal(shape)
    pick = rng.random(shape)
    x = np.where(pick < 0.1, np.inf, x)
    x = np.where((pick >= 0.1) & (pick < 0.2), -np.inf, x)
    x = np.where((pick >= 0.2) & (pick < 0.3), np.nan, x)
    return np.where((pick >= 0.3) & (pick < 0.35), 0.0, x)


RAND_KINDS: dict[str, Callable] = {
    "normal": _rand_normal, "uniform": _rand_uniform, "positive": _rand_positive, "nonzero": _rand_nonzero,
    "unit": _rand_unit, "gt_one": _rand_greater_than_one, "small_int": _rand_small_int, "int": _rand_int,
    "fraction": _rand_fraction, "bool": _rand_bool, "special": _rand_special,
}


def rand_like(rng: np.random.Generator, shape: Sequence[int], dtype: Any, kind: str = "normal") -> np.ndarray:
    """A NumPy array of `shape` and `dtype` drawn from the distribution `kind` (a key of `RAND_KINDS`).

    Integer dtypes get values in range of the dtype: from `kind` if it is an integer kind ("int", "small_int"),
    1..5 for "positive", +-(1..5) for "nonzero", else small integers in [-5, 5]; unsigned dtypes get the absolute
    values; bool gets a fair coin; complex dtypes draw real and imaginary parts independently.

    Raises:
      KeyError: unknown `kind`.
    """
    dt = np.dtype(dtype)
    shape = tuple(shape)
    gen = RAND_KINDS[kind]
    if dt == np.bool_:
        return _rand_bool(rng, shape) if kind in ("bool", "normal", "uniform") else np.asarray(gen(rng, shape)) != 0
    if dt.kind in "iu":
        if kind in ("int", "small_int"):
            raw = np.asarray(gen(rng, shape))
        elif kind == "positive":
            raw = rng.integers(1, 6, shape)
        elif kind == "nonzero":
            raw = rng.integers(1, 6, shape) * np.where(rng.random(shape) < 0.5, -1, 1)
        else:
            raw = _rand_small_int(rng, shape)
        if dt.kind == "u":
            raw = np.abs(raw)
        info = np.iinfo(dt)
        return np.clip(raw, info.min, info.max).astype(dt)
    if dt.kind == "c":
        return (np.asarray(gen(rng, shape)) + 1j * np.asarray(gen(rng, shape))).astype(dt)
    return np.asarray(gen(rng, shape)).astype(dt)


def rand_args(rng: np.random.Generator, shapes: Sequence[Sequence[int]], dtypes_: Sequence[Any],
              kind: str | Sequence[str] = "normal") -> list:
    """One `rand_like` array per (shape, dtype); `kind` may be one name or one per argument."""
    kinds = [kind] * len(shapes) if isinstance(kind, str) else list(kind)
    return [rand_like(rng, s, d, k) for s, d, k in zip(shapes, dtypes_, kinds)]


# --------------------------------------------------------------------------------------------------------------
# Value checks
# --------------------------------------------------------------------------------------------------------------

def _as_fluxion(x: Any) -> Any:
    """NumPy arrays become fluxion Arrays (canonical dtype); everything else (scalars, Arrays) passes through."""
    if isinstance(x, np.ndarray):
        return core.to_array(x)
    return x


def check_against_numpy(f_fluxion: Callable, f_numpy: Callable, args: Sequence[Any], tol: float | dict | None = None,
                        *, check_dtypes: bool = False, err_msg: str = "") -> Any:
    """Asserts `f_fluxion(*args)` matches `f_numpy(*numpy_args)` leafwise; returns the fluxion result.

    NumPy arguments are converted to fluxion Arrays for `f_fluxion`; `f_numpy` receives them unchanged.
    """
    out = f_fluxion(*[tree_map(_as_fluxion, a) for a in args])
    expected = f_numpy(*args)
    assert_allclose(out, expected, atol=tol, rtol=tol, check_dtypes=check_dtypes,
                    err_msg=err_msg or "fluxion vs NumPy")
    return out


def check_jit(f: Callable, args: Sequence[Any], *, atol: float | dict | None = None,
              rtol: float | dict | None = None, static_argnums: Sequence[int] = (), check_weak_type: bool = True,
              err_msg: str = "") -> None:
    """Asserts `jit(f)(*args)` equals eager `f(*args)`: values, shapes, dtypes and (optionally) weak types."""
    args = [tree_map(_as_fluxion, a) for a in args]
    eager = f(*args)
    jitted = jit(f, static_argnums=tuple(static_argnums))(*args)
    msg = err_msg or "jit vs eager"
    assert_allclose(jitted, eager, atol=atol, rtol=rtol, err_msg=msg)
    if check_weak_type:
        ew = [_aval_triple(x)[2] for x in tree_leaves(eager)]
        jw = [_aval_triple(x)[2] for x in tree_leaves(jitted)]
        if ew != jw:
            raise AssertionError(f"{msg}: weak types differ: eager {ew}, jit {jw}")


def check_eval_shape(f: Callable, args: Sequence[Any], *, check_weak_type: bool = True, err_msg: str = "") -> None:
    """Asserts the eager result of `f(*args)` has the shapes/dtypes/weak types that abstract evaluation predicts.

    Compares against both `fluxion.eval_shape(f, *args)` and the output avals of `fluxion.make_jaxpr(f)(*args)`.
    """
    args = [tree_map(_as_fluxion, a) for a in args]
    eager = f(*args)
    msg = err_msg or "eager vs abstract evaluation"
    got = [_aval_triple(x) for x in tree_leaves(eager)]
    shapes = api.eval_shape(f, *args)
    if tree_structure(shapes) != tree_structure(eager):
        raise AssertionError(f"{msg}: eval_shape structure {tree_structure(shapes)} != eager {tree_structure(eager)}")
    from_eval_shape = [(tuple(s.shape), np.dtype(s.dtype), bool(s.weak_type)) for s in tree_leaves(shapes)]
    closed = api.make_jaxpr(f)(*args)
    from_jaxpr = [(tuple(a.shape), np.dtype(a.dtype), bool(a.weak_type)) for a in closed.out_avals]
    if not check_weak_type:
        got = [g[:2] for g in got]
        from_eval_shape = [g[:2] for g in from_eval_shape]
        from_jaxpr = [g[:2] for g in from_jaxpr]
    if got != from_eval_shape:
        raise AssertionError(f"{msg}: eager (shape, dtype, weak) {got} != eval_shape {from_eval_shape}")
    if got != from_jaxpr:
        raise AssertionError(f"{msg}: eager (shape, dtype, weak) {got} != make_jaxpr out_avals {from_jaxpr}")


# --------------------------------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------------------------------

def _normalize_in_axes(in_axes: Any, nargs: int) -> list:
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * nargs
    axes = list(in_axes)
    if len(axes) != nargs:
        raise ValueError(f"check_batching: in_axes {in_axes} has {len(axes)} entries for {nargs} arguments")
    return axes


def _take(x: Any, i: int | slice, axis: int | None) -> Any:
    if axis is None:
        return x
    xn = to_numpy(x)
    out = np.take(xn, i, axis=axis)
    return core.to_array(out) if isinstance(x, (core.Array, np.ndarray)) else out


def _batch_size(args: Sequence[Any], axes: Sequence[Any]) -> int:
    sizes = {np.shape(to_numpy(leaf))[ax] for a, ax in zip(args, axes) if ax is not None
             for leaf in tree_leaves(a)}
    if len(sizes) != 1:
        raise ValueError(f"check_batching: mapped arguments have batch sizes {sorted(sizes)}; need exactly one")
    return sizes.pop()


def check_batching(f: Callable, args: Sequence[Any], in_axes: Any = 0, out_axes: int = 0, *,
                   atol: float | dict | None = None, rtol: float | dict | None = None, check_empty: bool = True,
                   err_msg: str = "") -> None:
    """Asserts `vmap(f, in_axes, out_axes)(*args)` equals looping `f` over the batch and stacking the results.

    Args:
      f: the per-example function (positional arguments; pytree arguments are mapped leafwise).
      args: the *batched* arguments; argument `i` carries the batch along axis `in_axes[i]` (None: unmapped).
      in_axes: an int or None for all arguments, or a sequence with one entry per argument (negative allowed).
      out_axes: where the batch axis goes in every output leaf.
      check_empty: also run `vmap` on a size-0 batch (the mapped axes sliced to length 0) and check the output's
        shape and dtype against `eval_shape` of one example with the batch axis of size 0 inserted.

    Raises:
      AssertionError: values, shapes or dtypes differ (the message names the check).
    """
    args = [tree_map(_as_fluxion, a) for a in args]
    axes = _normalize_in_axes(in_axes, len(args))
    size = _batch_size(args, axes)
    msg = err_msg or f"vmap(in_axes={in_axes}, out_axes={out_axes}) vs loop"
    batched = api.vmap(f, in_axes=tuple(axes), out_axes=out_axes)(*args)
    per_example = [f(*[tree_map(lambda leaf, ax=ax, i=i: _take(leaf, i, ax), a) for a, ax in zip(args, axes)])
                   for i in range(size)]
    if size:
        treedef = tree_structure(per_example[0])
        columns = zip(*[tree_leaves(r) for r in per_example])
        stacked = [np.stack([to_numpy(x) for x in col], axis=out_axes) for col in columns]
        expected = tree_unflatten(treedef, stacked)
        assert_allclose(batched, expected, atol=atol, rtol=rtol, err_msg=msg)
    if not check_empty:
        return
    empty_args = [tree_map(lambda leaf, ax=ax: _take_empty(leaf, ax), a) if ax is not None else a
                  for a, ax in zip(args, axes)]
    example_structs = [tree_map(lambda leaf, ax=ax: _example_struct(leaf, ax), a) for a, ax in zip(args, axes)]
    one = api.eval_shape(f, *example_structs)
    out = api.vmap(f, in_axes=tuple(axes), out_axes=out_axes)(*empty_args)
    if tree_structure(out) != tree_structure(one):
        raise AssertionError(f"{msg} (empty batch): output structure {tree_structure(out)} != {tree_structure(one)}")
    for o, s in zip(tree_leaves(out), tree_leaves(one)):
        shape = list(s.shape)
        ax = out_axes % (len(shape) + 1)
        shape.insert(ax, 0)
        got = (tuple(np.shape(to_numpy(o))), to_numpy(o).dtype)
        if got != (tuple(shape), np.dtype(s.dtype)):
            raise AssertionError(f"{msg} (empty batch): got shape/dtype {got}, expected {(tuple(shape), s.dtype)}")


def stack_examples(examples: Sequence[Sequence[Any]], in_axes: Sequence[int | None]) -> list:
    """Builds batched arguments from per-example argument lists.

    Argument `j` of every example is stacked along axis `in_axes[j]` (NumPy arrays in, NumPy arrays out); for
    `in_axes[j] is None` the argument is unmapped and the first example's value is used.
    """
    out = []
    for j, ax in enumerate(in_axes):
        if ax is None:
            out.append(examples[0][j])
        else:
            out.append(np.stack([to_numpy(e[j]) for e in examples], axis=ax))
    return out


def _take_empty(leaf: Any, ax: int) -> Any:
    xn = to_numpy(leaf)
    idx = [slice(None)] * xn.ndim
    idx[ax] = slice(0, 0)
    return core.to_array(xn[tuple(idx)])


def _example_struct(leaf: Any, ax: int | None) -> Any:
    a = core.get_aval(api_util.as_value(leaf))
    if ax is None:
        return api.ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
    shape = list(a.shape)
    del shape[ax]
    return api.ShapeDtypeStruct(tuple(shape), a.dtype, a.weak_type)


# --------------------------------------------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------------------------------------------

def _rand_direction(rng: np.random.Generator, like: Any) -> np.ndarray:
    x = to_numpy(like)
    d = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        d = d + 1j * rng.standard_normal(x.shape)
    return np.asarray(d).astype(x.dtype)


def _inner(xs: Sequence[Any], ys: Sequence[Any]) -> float:
    """The real bilinear pairing sum(Re(x * y)) over matching leaves (JAX's VJP convention for complex values)."""
    total = 0.0
    for x, y in zip(xs, ys):
        total += float(np.real(np.sum(_comparable(to_numpy(x)) * _comparable(to_numpy(y)))))
    return total


def _inexact_leaves(out: Any) -> list:
    return [x for x in tree_leaves(out) if _is_inexact(to_numpy(x).dtype)]


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], eps: float | None = None) -> list:
    """Central finite difference (f(x + eps t) - f(x - eps t)) / (2 eps) for each inexact output leaf (float64)."""
    if eps is None:
        eps = min((DEFAULT_EPS.get(to_numpy(p).dtype, 1e-3) for p in primals), default=1e-3)
    plus, minus = [], []
    for p, t in zip(primals, tangents):
        pn = _comparable(to_numpy(p))
        tn = _comparable(to_numpy(t))
        plus.append(core.to_array((pn + eps * tn).astype(to_numpy(p).dtype)))
        minus.append(core.to_array((pn - eps * tn).astype(to_numpy(p).dtype)))
    f_plus = _inexact_leaves(f(*plus))
    f_minus = _inexact_leaves(f(*minus))
    return [(_comparable(to_numpy(a)) - _comparable(to_numpy(b))) / (2 * eps) for a, b in zip(f_plus, f_minus)]


def check_jvp(f: Callable, primals: Sequence[Any], *, rng: np.random.Generator, atol=None, rtol=None,
              eps: float | None = None, err_msg: str = "") -> None:
    """Asserts `fluxion.jvp(f, primals, t)` matches finite differences along a random `t` (and the primal output)."""
    tangents = [core.to_array(_rand_direction(rng, p)) for p in primals]
    out, out_t = api.jvp(f, tuple(primals), tuple(tangents))
    msg = err_msg or "jvp vs finite differences"
    assert_allclose(out, f(*primals), atol=atol, rtol=rtol, err_msg=msg + " (primal output)")
    for o, t in zip(tree_leaves(out), tree_leaves(out_t)):
        if _is_inexact(to_numpy(o).dtype) and to_numpy(t).dtype != to_numpy(o).dtype:
            raise AssertionError(f"{msg}: tangent dtype {to_numpy(t).dtype} != output dtype {to_numpy(o).dtype}")
    expected = numerical_jvp(f, primals, tangents, eps)
    actual = [_comparable(to_numpy(t)) for o, t in zip(tree_leaves(out), tree_leaves(out_t))
              if _is_inexact(to_numpy(o).dtype)]
    dt = to_numpy(primals[0]).dtype
    gt = tolerance(dt, atol, DEFAULT_GRAD_TOLERANCE)
    gr = tolerance(dt, rtol, DEFAULT_GRAD_TOLERANCE)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, atol=gt, rtol=gr, equal_nan=True, err_msg=f"{msg} (output leaf {i})")


def check_vjp(f: Callable, primals: Sequence[Any], *, rng: np.random.Generator, atol=None, rtol=None,
              eps: float | None = None, err_msg: str = "") -> None:
    """Asserts `<vjp(ct), t> == <ct, J t>` for random `t` and `ct`, with `J t` by finite differences.

    Also checks that the cotangents have the primals' shapes and dtypes.
    """
    out, f_vjp = api.vjp(f, *primals)
    msg = err_msg or "vjp inner-product identity"
    out_leaves, out_tree = tree_flatten(out)
    cts = [core.to_array(_rand_direction(rng, o)) if _is_inexact(to_numpy(o).dtype)
           else core.to_array(np.zeros(np.shape(to_numpy(o)), to_numpy(o).dtype)) for o in out_leaves]
    ct_in = f_vjp(tree_unflatten(out_tree, cts))
    ct_in = list(ct_in)
    if len(ct_in) != len(primals):
        raise AssertionError(f"{msg}: vjp returned {len(ct_in)} cotangents for {len(primals)} primals")
    for c, p in zip(ct_in, primals):
        cs, ps = to_numpy(c), to_numpy(p)
        if cs.shape != ps.shape or cs.dtype != ps.dtype:
            raise AssertionError(f"{msg}: cotangent {cs.dtype}{list(cs.shape)} does not match primal "
                                 f"{ps.dtype}{list(ps.shape)}")
    tangents = [core.to_array(_rand_direction(rng, p)) for p in primals]
    lhs = _inner(ct_in, tangents)
    fd = numerical_jvp(f, primals, tangents, eps)
    rhs = _inner([c for c, o in zip(cts, out_leaves) if _is_inexact(to_numpy(o).dtype)], fd)
    dt = to_numpy(primals[0]).dtype
    gt = tolerance(dt, atol, DEFAULT_GRAD_TOLERANCE)
    gr = tolerance(dt, rtol, DEFAULT_GRAD_TOLERANCE)
    scale = max(1.0, sum(np.size(to_numpy(p)) for p in primals) ** 0.5)
    if not abs(lhs - rhs) <= gt * scale + gr * max(abs(lhs), abs(rhs)):
        raise AssertionError(f"{msg}: <vjp(ct), t> = {lhs!r} but <ct, J t> (finite differences) = {rhs!r}")


def check_grads(f: Callable, args: Sequence[Any], order: int = 1, modes: Sequence[str] = ("fwd", "rev"), *,
                atol: float | dict | None = None, rtol: float | dict | None = None, eps: float | None = None,
                rng: np.random.Generator | None = None, err_msg: str = "") -> None:
    """Checks `f`'s derivatives up to `order` against finite differences.

    Only the inexact (floating/complex) leaves of `args` are differentiated; integer and bool leaves are held
    fixed. Forward mode (`"fwd"`) compares `fluxion.jvp` with a central difference along a random direction;
    reverse mode (`"rev"`) checks `<vjp(ct), t> == <ct, J t>` with `J t` from finite differences. For
    `order > 1` the same checks are applied recursively to `x -> jvp(f, x, t)[1]` and `x -> vjp(f, x)[1](ct)`
    for fixed random `t`, `ct` (so order 2 covers forward-over-forward, reverse-over-forward, forward-over-reverse
    and reverse-over-reverse).

    Args:
      f: function of positional pytree arguments, returning a pytree.
      args: the point at which to differentiate (NumPy or fluxion arrays).
      order: highest derivative order to check (>= 1).
      modes: a subset of ("fwd", "rev").
      atol, rtol: tolerances (number or dtype dict); default from `DEFAULT_GRAD_TOLERANCE`.
      eps: finite-difference step; default from `DEFAULT_EPS` for the smallest precision among the inputs.
      rng: source of random directions (default: seed 0).

    Raises:
      AssertionError: describing the failing mode and order.
      ValueError: bad `order` or `modes`.
    """
    if order < 1:
        raise ValueError(f"check_grads: order must be >= 1, got {order}")
    bad = set(modes) - {"fwd", "rev"}
    if bad or not modes:
        raise ValueError(f"check_grads: modes must be a non-empty subset of ('fwd', 'rev'), got {modes}")
    rng = np.random.default_rng(0) if rng is None else rng
    flat, tree = tree_flatten(tuple(args))
    flat = [core.to_array(to_numpy(x)) if not isinstance(x, core.Array) else x for x in flat]
    diff_idx = [i for i, x in enumerate(flat) if _is_inexact(to_numpy(x).dtype)]
    if not diff_idx:
        raise ValueError("check_grads: no floating-point or complex arguments to differentiate")

    def g(*diff_leaves):
        leaves = list(flat)
        for i, v in zip(diff_idx, diff_leaves):
            leaves[i] = v
        return f(*tree_unflatten(tree, leaves))

    _check_grads_rec(g, [flat[i] for i in diff_idx], order, tuple(modes), atol, rtol, eps, rng,
                     err_msg or getattr(f, "__name__", "f"))


def _check_grads_rec(g, xs, order, modes, atol, rtol, eps, rng, label):
    if "fwd" in modes:
        check_jvp(g, xs, rng=rng, atol=atol, rtol=rtol, eps=eps, err_msg=f"{label}: jvp (order {order} left)")
        if order > 1:
            ts = [core.to_array(_rand_direction(rng, x)) for x in xs]

            def g_jvp(*ys, _ts=ts):
                return api.jvp(g, tuple(ys), tuple(_ts))[1]

            _check_grads_rec(g_jvp, xs, order - 1, modes, atol, rtol, eps, rng, f"{label} -> jvp")
    if "rev" in modes:
        check_vjp(g, xs, rng=rng, atol=atol, rtol=rtol, eps=eps, err_msg=f"{label}: vjp (order {order} left)")
        if order > 1:
            out = g(*xs)
            out_leaves, out_tree = tree_flatten(out)
            cts = [core.to_array(_rand_direction(rng, o)) if _is_inexact(to_numpy(o).dtype)
                   else core.to_array(np.zeros(np.shape(to_numpy(o)), to_numpy(o).dtype)) for o in out_leaves]

            def g_vjp(*ys, _cts=cts):
                return list(api.vjp(g, *ys)[1](tree_unflatten(out_tree, _cts)))

            _check_grads_rec(g_vjp, xs, order - 1, modes, atol, rtol, eps, rng, f"{label} -> vjp")


# --------------------------------------------------------------------------------------------------------------
# 64-bit mode
# --------------------------------------------------------------------------------------------------------------

class enable_x64:  # (lower case: used like a function, `with enable_x64(): ...`)
    """Context manager: 64-bit mode (`jax_enable_x64`) on, in fluxion and in any other given config objects.

    Inside the block float64/int64 values keep their dtype; on exit every config gets back its previous value,
    even if the block raises. Pass real JAX's `jax.config` to switch an oracle along with fluxion.

    Args:
      *other_configs: objects with JAX's `update(name, value)` / attribute-read interface (e.g. `jax.config`).
    """

    def __init__(self, *other_configs: Any):
        # Imported here rather than at the top so that this section stays an appendix to the module.
        from . import config as _config
        self._configs = (_config.config,) + other_configs
        self._saved: list = []

    def __enter__(self) -> None:
        self._saved = [bool(c.jax_enable_x64) for c in self._configs]
        for c in self._configs:
            c.update("jax_enable_x64", True)

    def __exit__(self, *exc) -> None:
        for c, old in zip(self._configs, self._saved):
            c.update("jax_enable_x64", old)
