"""The Schur and Hessenberg decompositions of `fluxion.scipy.linalg`, as two primitives evaluated by LAPACK.

JAX's `schur` and `hessenberg` bind `lax.linalg` primitives that only the CPU backend implements (LAPACK's gees
and gehrd) and that have no derivative rules. fluxion mirrors that: `schur_p` and `hessenberg_p` are primitives
whose NumPy implementation calls `scipy.linalg.schur` / `scipy.linalg.hessenberg` (the same LAPACK routines, so the
factors agree with JAX's to rounding, including the order of the eigenvalues on the diagonal), they batch over
leading dimensions, stage under jit, and are declared non-differentiable, so differentiating through them raises
the same `NotImplementedError` JAX raises.

The primitives are defined in `lax/linalg.py` (implementations in `backends/eager/linalg.py`); this module holds the
`jax.scipy.linalg` functions that bind them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from .. import dtypes
from ..lax import linalg as la


def _check_square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a (stack of) square matrices, got shape {a.shape}")


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
    _check_square("schur", a)
    t, z = la.schur_p.bind(a)
    return t, z


# --- hessenberg -----------------------------------------------------------------------------------------------------

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
    _check_square("hessenberg", a)
    h, q = la.hessenberg_p.bind(a)
    return (h, q) if calc_q else h
