"""The Schur and Hessenberg decompositions of `fluxion.scipy.linalg`, as two primitives evaluated by LAPACK.

JAX's `schur` and `hessenberg` bind `lax.linalg` primitives that only the CPU backend implements (LAPACK's gees
and gehrd) and that have no derivative rules. fluxion mirrors that: `schur_p` and `hessenberg_p` are primitives
whose NumPy implementation calls `scipy.linalg.schur` / `scipy.linalg.hessenberg` (the same LAPACK routines, so the
factors agree with JAX's to rounding, including the order of the eigenvalues on the diagonal), they batch over
leading dimensions, stage under jit, and are declared non-differentiable, so differentiating through them raises
the same `NotImplementedError` JAX raises.

The primitives live here rather than in `lax` because `jax.lax.linalg` exposes them only as an implementation detail
of `jax.scipy.linalg`; their implementation registers with the eager backend from this module for the same reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from ... import numpy as jnp
from .. import core, dtypes
from ..backends.eager import register_impl
from ..core import ShapedArray
from ..interpreters import ad, batching
from ..lax.utils import standard_primitive


def _each_matrix(fn, a, n_out):
    """Applies `fn(matrix) -> n_out matrices` to every matrix of the stack `a` (..., n, n)."""
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    outs = [np.empty(flat.shape, a.dtype) for _ in range(n_out)]
    for i in range(flat.shape[0]):
        for o, r in zip(outs, fn(flat[i])):
            o[i] = r
    return [o.reshape(batch + a.shape[-2:]) for o in outs]


def _check_square(name, aval):
    if aval.ndim < 2 or aval.shape[-1] != aval.shape[-2]:
        raise ValueError(f"{name}: expected a (stack of) square matrices, got shape {aval.shape}")
    if not dtypes.is_inexact(aval.dtype):
        raise TypeError(f"{name}: expected a floating or complex matrix, got dtype {aval.dtype.name}")


def _same_shape_pair(name):
    def rule(a):
        _check_square(name, a)
        return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape, a.dtype)]
    return rule


def _leading_batch_rule(prim):
    def rule(vals, dims):
        (a,), (d,) = vals, dims
        size = core.get_aval(a).shape[d]
        out = prim.bind(batching.moveaxis(a, d, 0, size))
        return out, [0, 0]
    return rule


def _as_compute(a):
    """float16/bfloat16 are not LAPACK types: compute in float32 and round back."""
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype.kind == "f" and a.dtype.itemsize < 4 else a


# --- schur ----------------------------------------------------------------------------------------------------------

schur_p = standard_primitive("schur", _same_shape_pair("schur"), multiple_results=True, weak_type="never")
ad.defnondifferentiable(schur_p)
batching.primitive_batchers[schur_p] = _leading_batch_rule(schur_p)


def _schur_impl(a):
    x = _as_compute(a)
    # A real matrix gets the real (quasi-triangular) form, a complex one the triangular form, as LAPACK's gees.
    output = "complex" if np.iscomplexobj(x) else "real"
    t, z = _each_matrix(lambda m: scipy.linalg.schur(m, output=output), x, 2)
    return [t.astype(a.dtype), z.astype(a.dtype)]


register_impl(schur_p, _schur_impl)


def schur(a: Any, output: str = "real") -> tuple:
    """The Schur decomposition a = Z T Z^H: (T, Z) with Z unitary and T upper triangular ("complex") or
    quasi-upper-triangular with 2x2 diagonal blocks for complex-conjugate eigenvalue pairs ("real", the default
    for a real matrix; a complex matrix always gives the triangular form). `a` is (..., n, n); integer input is
    promoted to the default float type. Computed by LAPACK (gees, through SciPy); not differentiable (as JAX).

    Raises:
      ValueError: for an `output` other than "real"/"complex", or a non-square input.
    """
    if output not in ("real", "complex"):
        raise ValueError(f"schur: expected 'output' to be either 'real' or 'complex', got {output!r}")
    a = jnp.asarray(a)
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float_dtype())
    if output == "complex":
        a = a.astype(jnp.result_type(a.dtype, np.complex64))
    t, z = schur_p.bind(a)
    return t, z


# --- hessenberg -----------------------------------------------------------------------------------------------------

hessenberg_p = standard_primitive("hessenberg", _same_shape_pair("hessenberg"), multiple_results=True,
                                  weak_type="never")
ad.defnondifferentiable(hessenberg_p)
batching.primitive_batchers[hessenberg_p] = _leading_batch_rule(hessenberg_p)


def _hessenberg_impl(a):
    x = _as_compute(a)
    h, q = _each_matrix(lambda m: scipy.linalg.hessenberg(m, calc_q=True), x, 2)
    return [h.astype(a.dtype), q.astype(a.dtype)]


register_impl(hessenberg_p, _hessenberg_impl)


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The Hessenberg form a = Q H Q^H: H is zero below the first subdiagonal and Q unitary. Returns H, or (H, Q)
    with `calc_q`. `a` is (..., n, n). Computed by LAPACK (gehrd/orghr, through SciPy), so H and Q match JAX's
    CPU results to rounding; not differentiable (as JAX). `overwrite_a` and `check_finite` are ignored.

    Raises:
      ValueError: for a non-square input.
    """
    a = jnp.asarray(a)
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float_dtype())
    if a.ndim >= 2 and a.shape[-1] == 0 and a.shape[-2] == 0:
        return (a, a) if calc_q else a
    h, q = hessenberg_p.bind(a)
    return (h, q) if calc_q else h
