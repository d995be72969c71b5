"""Index helpers: `mgrid`, `ogrid`, `r_`, `c_`, `indices`, `mask_indices` (`s_` and `index_exp` are NumPy's own
index-expression builders, which JAX re-exports too).

In the slice syntax of `mgrid`, `ogrid`, `r_` and `c_`, `start:stop:step` means `arange(start, stop, step)` and an
imaginary step `start:stop:nj` means `linspace(start, stop, n)` (both ends included), as in NumPy.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import core, dtypes
from ..lax import structural as st
from .util import asarray_arg

s_ = np.s_
index_exp = np.index_exp


def _slice_to_array(k: slice):
    from .creation import arange, linspace
    start = 0 if k.start is None else k.start
    step = 1 if k.step is None else k.step
    stop = k.stop
    if isinstance(step, complex) or np.iscomplexobj(step):
        return linspace(start, stop, num=int(abs(step)))
    if stop is None:
        raise ValueError("mgrid/ogrid/r_: a slice needs a stop value")
    return arange(start, stop, step)


class _Grid:
    def __init__(self, sparse: bool, name: str):
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key):
        from .creation import meshgrid
        from .shape import stack
        from .util import promote_dtypes
        if isinstance(key, slice):
            return _slice_to_array(key)
        if not isinstance(key, tuple) or not all(isinstance(k, slice) for k in key):
            raise IndexError(f"jnp.{self.name}: only slices are accepted as indices, got {key!r}")
        arrays = promote_dtypes(*[_slice_to_array(k) for k in key])
        if not arrays:
            return st.full((0,), 0, dtypes.default_int_dtype())
        grids = meshgrid(*arrays, indexing="ij", sparse=self.sparse)
        return grids if self.sparse else stack(grids, 0)

    def __repr__(self):
        return f"fluxion.numpy.{self.name}"


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


class _Concatenator:
    """`r_` / `c_`: concatenation of slices, scalars and arrays along `axis`, after giving every piece at least
    `ndmin` dimensions (a 1-d piece's axis placed at `trans1d`); a leading string "axis[,ndmin[,trans1d]]", or 'r'/'c'
    for a 2-d row/column result, overrides these defaults."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        from .creation import array
        from .shape import concatenate
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        matrix = None
        pieces = []
        for i, k in enumerate(key):
            if isinstance(k, str):
                if i != 0:
                    raise ValueError(f"jnp.{self.name}: a directive string must come first, got {k!r} at position {i}")
                if k in ("r", "c"):
                    matrix = k
                    continue
                try:
                    vec = [int(v) for v in k.split(",")]
                except ValueError:
                    raise ValueError(f"jnp.{self.name}: could not understand directive {k!r}") from None
                if len(vec) > 3:
                    raise ValueError(f"jnp.{self.name}: directive {k!r} has more than 3 integers")
                axis = vec[0]
                if len(vec) > 1:
                    ndmin = vec[1]
                if len(vec) > 2:
                    trans1d = vec[2]
                continue
            if isinstance(k, slice):
                item = _slice_to_array(k)
            else:
                item = asarray_arg(k, self.name)
            item_ndim = core.get_aval(item).ndim
            obj = array(item, ndmin=ndmin)
            if trans1d != -1 and ndmin > item_ndim:
                k2 = ndmin - item_ndim
                k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                axes = list(range(ndmin))
                obj = st.transpose(obj, tuple(axes[:k1] + axes[k2:] + axes[k1:k2]))
            pieces.append(obj)
        if not pieces:
            return st.full((0,), 0, dtypes.default_float_dtype())
        out = concatenate(pieces, axis=axis)
        if matrix is not None:
            nd = core.get_aval(out).ndim
            if nd == 1:
                out = st.reshape(out, (1,) + core.get_aval(out).shape)
                if matrix == "c":
                    out = st.transpose(out, (1, 0))
        return out

    def __len__(self):
        return 0

    def __repr__(self):
        return f"fluxion.numpy.{self.name}"


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")


def indices(dimensions, dtype=None, sparse: bool = False):
    """The index grid of `dimensions`: an array of shape (len(dimensions), *dimensions) whose i-th entry holds the
    i-th index (default int dtype), or with `sparse` a tuple of arrays with unit dimensions that broadcast to it."""
    dims = tuple(operator.index(d) for d in dimensions)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_int_dtype()
    nd = len(dims)
    if sparse:
        return tuple(st.reshape(st.iota(dt, d), tuple(d if j == i else 1 for j in range(nd)))
                     for i, d in enumerate(dims))
    grids = [st.expand_dims(st.broadcasted_iota(dt, dims, i), (0,)) for i in range(nd)]
    return st.concatenate(grids, 0) if grids else st.full((0,), 0, dt)


def mask_indices(n: int, mask_func, k: int = 0, *, size: int | None = None):
    """Row and column indices of the nonzero entries of `mask_func(ones((n, n)), k)` (e.g. `triu`), optionally padded
    to a static `size` (see `nonzero`)."""
    from .creation import ones
    from .sorting import nonzero
    i, j = nonzero(mask_func(ones((n, n)), k), size=size)
    return i, j
