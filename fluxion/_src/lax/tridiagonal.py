"""`linalg.tridiagonal_solve`: solves tridiagonal systems by the Thomas algorithm (Gaussian elimination without
pivoting, specialized to three diagonals: L. H. Thomas, 1949; see e.g. Golub & Van Loan, "Matrix Computations",
4th ed., 4.3).

Both sweeps are `lax.scan`s over the rows, so the solver is differentiable (reverse mode transposes the scans),
batchable and traceable; it is built from other primitives and has no rules of its own. Without pivoting it is
stable for diagonally dominant or symmetric positive definite systems (JAX's CPU path calls LAPACK's gtsv, which
pivots, so results can differ in the last bits, or more for systems that need pivoting).
"""

from __future__ import annotations

from .. import core, dtypes
from . import elementwise as ew
from . import structural as st
from .control_flow import scan


def _move_rows_first(x, axis: int):
    nd = core.get_aval(x).ndim
    perm = (axis,) + tuple(i for i in range(nd) if i != axis)
    return st.transpose(x, perm)


def _rows_back(x, axis: int):
    nd = core.get_aval(x).ndim
    inv = list(range(1, nd))
    inv.insert(axis, 0)
    return st.transpose(x, tuple(inv))


def tridiagonal_solve(dl, d, du, b):
    """Solves A X = B for tridiagonal A given by its diagonals.

    Args:
      dl: (..., m) sub-diagonal; dl[..., 0] is ignored (it lies outside A).
      d: (..., m) diagonal.
      du: (..., m) super-diagonal; du[..., m - 1] is ignored.
      b: (..., m, n) right-hand sides.

    Returns:
      X, shaped like `b`.

    Raises:
      ValueError: the diagonals' shapes differ or do not match b's leading (..., m).
      TypeError: the operands do not share one inexact dtype.
    """
    dl, d, du, b = (st._as_array(v) for v in (dl, d, du, b))
    avals = [core.get_aval(v) for v in (dl, d, du, b)]
    if not (avals[0].shape == avals[1].shape == avals[2].shape):
        raise ValueError(f"tridiagonal_solve: dl, d and du must have the same shape, got {avals[0].shape}, "
                         f"{avals[1].shape} and {avals[2].shape}")
    if avals[3].ndim < 2 or avals[3].shape[:-1] != avals[1].shape:
        raise ValueError(f"tridiagonal_solve: b must have shape {avals[1].shape + ('n',)}, got {avals[3].shape}")
    if len({a.dtype for a in avals}) != 1 or not dtypes.is_inexact(avals[0].dtype):
        raise TypeError("tridiagonal_solve: dl, d, du and b must share one floating or complex dtype, got "
                        + ", ".join(a.dtype.name for a in avals))
    m = avals[1].shape[-1]
    if m == 0:
        return b
    row = avals[1].ndim - 1
    lo, di, up = (_move_rows_first(v, row) for v in (dl, d, du))  # (m, ...)
    rhs = _move_rows_first(b, row)  # (m, ..., n)

    n_shape = core.get_aval(rhs).shape[1:]

    def expand(v):  # a (...) row coefficient broadcast against an (..., n) right-hand-side row
        return st.broadcast_in_dim(v, n_shape, tuple(range(core.get_aval(v).ndim)))

    def forward(carry, xs):
        c_prev, y_prev = carry
        l_i, d_i, u_i, b_i = xs
        denom = ew.sub(d_i, ew.mul(l_i, c_prev))
        c_i = ew.div(u_i, denom)
        y_i = ew.div(ew.sub(b_i, ew.mul(expand(l_i), y_prev)), expand(denom))
        return (c_i, y_i), (c_i, y_i)

    zero_c = st.full(core.get_aval(di).shape[1:], 0, avals[1].dtype)
    zero_y = st.full(core.get_aval(rhs).shape[1:], 0, avals[3].dtype)
    # Row 0 has no sub-diagonal entry: zero it so the first step starts from c = y = 0.
    lo = st.concatenate([st.expand_dims(zero_c, (0,)), st.slice_in_dim(lo, 1, m)], 0)
    up = st.concatenate([st.slice_in_dim(up, 0, m - 1), st.expand_dims(zero_c, (0,))], 0)  # du[m-1] likewise
    _, (c, y) = scan(forward, (zero_c, zero_y), (lo, di, up, rhs))

    def backward(x_next, cs_y):
        c_i, y_i = cs_y
        x_i = ew.sub(y_i, ew.mul(expand(c_i), x_next))
        return x_i, x_i

    _, x = scan(backward, zero_y, (c, y), reverse=True)
    return _rows_back(x, row)
