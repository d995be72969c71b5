"""Matrix-vector products with broadcasting (`matvec`, `vecmat`) and `einsum_path`."""

from __future__ import annotations

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..lax import structural as st
from .util import arraylike_arg


@staged_as_call("matvec")
def matvec(x1, x2, /):
    """Batched matrix-vector product: `x1` (..., m, n) times `x2` (..., n) gives (..., m), broadcasting the batch.

    Raises:
      ValueError: `x1` has fewer than 2 or `x2` fewer than 1 dimensions, or the contracted sizes differ.
    """
    from .linear import matmul
    x1, x2 = arraylike_arg(x1, "matvec"), arraylike_arg(x2, "matvec", 1)
    if core.get_aval(x1).ndim < 2 or core.get_aval(x2).ndim < 1:
        raise ValueError(f"matvec: x1 must be at least 2-d and x2 at least 1-d, got shapes "
                         f"{core.get_aval(x1).shape} and {core.get_aval(x2).shape}")
    out = matmul(x1, st.expand_dims(x2, (core.get_aval(x2).ndim,)))
    return st.squeeze(out, (core.get_aval(out).ndim - 1,))


def vecmat(x1, x2, /):
    """Batched vector-matrix product: conj(`x1`) (..., m) times `x2` (..., m, n) gives (..., n).

    Raises:
      ValueError: `x1` has fewer than 1 or `x2` fewer than 2 dimensions, or the contracted sizes differ.
    """
    from .linear import matmul
    from .ufuncs import conj
    x1, x2 = arraylike_arg(x1, "vecmat"), arraylike_arg(x2, "vecmat", 1)
    if core.get_aval(x1).ndim < 1 or core.get_aval(x2).ndim < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-d and x2 at least 2-d, got shapes "
                         f"{core.get_aval(x1).shape} and {core.get_aval(x2).shape}")
    x1 = conj(x1)
    out = matmul(st.expand_dims(x1, (core.get_aval(x1).ndim - 1,)), x2)
    return st.squeeze(out, (core.get_aval(out).ndim - 2,))


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The pairwise contraction order NumPy's optimizer picks for `einsum(subscripts, *operands)`.

    Returns `(path, report)`: `path` is a list of tuples of operand positions to contract in turn (JAX's format,
    without NumPy's leading 'einsum_path' marker) and `report` NumPy's printable description (JAX returns
    opt_einsum's PathInfo object there). Only shapes and dtypes of `operands` matter, so they may be traced.
    `fluxion.numpy.einsum` contracts left to right and does not follow this path.
    """
    dummies = []
    for op in operands:
        aval = core.get_aval(op) if not isinstance(op, np.ndarray) else op
        dt = aval.dtype if aval.dtype != dtypes.bfloat16 else np.float32
        dummies.append(np.zeros(aval.shape, dt))
    opt = "greedy" if optimize is True else optimize
    if opt in (False, None):
        opt = False
    path, report = np.einsum_path(subscripts, *dummies, optimize=opt)
    return [tuple(p) for p in path[1:]], report
