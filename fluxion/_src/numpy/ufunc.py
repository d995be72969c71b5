"""`ufunc` (JAX's `jnp.ufunc` class) and `frompyfunc`: a scalar Python function turned into a broadcasting function
with NumPy's ufunc methods `reduce`, `accumulate`, `outer`, `at` and `reduceat`.

The scalar function is vectorized with `vectorize` (nested vmap), and the methods of binary ufuncs fold it along an
axis with `lax.scan`, so everything traces; `at` applies the updates one index at a time (unbuffered, so repeated
indices compound, as in NumPy), and `reduceat` needs concrete indices.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import core
from ..core import Tracer
from ..lax import control_flow as cf
from ..lax import elementwise as ew
from ..lax import structural as st
from .functional import vectorize
from .util import arraylike_arg, asarray_arg, broadcast_to_shape, canonicalize_axis


class ufunc:  # noqa: N801  (JAX's class name)
    """A function of `nin` scalars returning `nout` scalars, applied elementwise with broadcasting.

    Args:
      func: the scalar function (traceable).
      nin, nout: numbers of inputs and outputs.
      name: the display name (default `func.__name__`).
      identity: the value `reduce` starts from for empty reductions and masked (`where`) reductions.
      call, reduce, accumulate, at, reduceat: optional faster implementations replacing the generic ones.
    """

    def __init__(self, func, /, nin: int, nout: int, *, name: str | None = None, nargs: int | None = None,
                 identity=None, call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        self._func = func
        self._call = vectorize(func) if call is None else call
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else operator.index(nargs)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._reduce, self._accumulate, self._at, self._reduceat = reduce, accumulate, at, reduceat

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional argument(s) but {len(args)} were given")
        return self._call(*args)

    def _binary_only(self, method):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} only supported for binary ufuncs with a single output (nin=2, nout=1); "
                             f"{self} has nin={self.nin}, nout={self.nout}")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
        """Folds the function over `axis` (a tuple folds over each in turn; None: all), starting from `initial`,
        else from `identity`, else from the first element (as JAX does).

        Raises:
          ValueError: not a binary ufunc; `where` without `initial` or `identity`; an empty reduction without
            either.
        """
        self._binary_only("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if self._reduce is not None and where is None and initial is None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims)
        a = arraylike_arg(a, f"{self.__name__}.reduce")
        if dtype is not None:
            a = ew.convert_element_type(a, dtype)
        nd = core.get_aval(a).ndim
        if where is not None:
            where = broadcast_to_shape(asarray_arg(where), core.get_aval(a).shape)
            if initial is None and self.identity is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, so to use a "
                                 "where mask one has to specify 'initial'.")
        if axis is None or isinstance(axis, tuple):
            # Several axes fold as one: moved to the front and merged in C order.
            axes = tuple(range(nd)) if axis is None else tuple(canonicalize_axis(x, nd) for x in axis)
            rest = tuple(i for i in range(nd) if i not in axes)
            shape = core.get_aval(a).shape
            merged = (int(np.prod([shape[i] for i in axes], dtype=np.int64)),) + tuple(shape[i] for i in rest)
            a2 = st.reshape(st.transpose(a, axes + rest), merged)
            w2 = None if where is None else st.reshape(st.transpose(where, axes + rest), merged)
            result = self._reduce_one(a2, 0, initial, w2)
            if keepdims:
                result = st.reshape(result, tuple(1 if i in axes else d for i, d in enumerate(shape)))
            return result
        ax = canonicalize_axis(axis, nd)
        result = self._reduce_one(a, ax, initial, where)
        if keepdims:
            result = st.expand_dims(result, (ax,))
        return result

    def _reduce_one(self, a, axis, initial, where, from_first: bool = False):
        from .shape import moveaxis
        a = moveaxis(a, axis, 0)
        n = core.get_aval(a).shape[0]
        start = initial if initial is not None else (None if from_first else self.identity)
        if start is None:
            if n == 0:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which has no identity")
            else:
                carry0, rest = st.index_in_dim(a, 0, 0, False), st.slice_in_dim(a, 1, n, 1, 0)
                return self._fold(carry0, rest, None if where is None else st.slice_in_dim(
                    moveaxis(where, axis, 0), 1, n, 1, 0))[0]
        shape = core.get_aval(a).shape[1:]
        carry0 = broadcast_to_shape(ew.convert_element_type(asarray_arg(start), core.get_aval(a).dtype), shape)
        return self._fold(carry0, a, None if where is None else moveaxis(where, axis, 0))[0]

    def _fold(self, carry0, xs, mask):
        """(final carry, stacked carries) of carry = f(carry, x) over the leading axis of `xs`."""
        dt = core.get_aval(carry0).dtype

        def step(carry, inp):
            x, m = inp
            new = ew.convert_element_type(asarray_arg(self._call(carry, x)), dt)
            if m is not None:
                from .ufuncs import where as jwhere
                new = jwhere(m, new, carry)
            return new, new
        if mask is None:
            return cf.scan(lambda c, x: step(c, (x, None)), carry0, xs)
        return cf.scan(step, carry0, (xs, mask))

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """Running fold along `axis`: out[0] = a[0], out[i] = f(out[i-1], a[i]).

        Raises:
          ValueError: not a binary ufunc.
        """
        from .shape import concatenate, moveaxis
        self._binary_only("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        a = arraylike_arg(a, f"{self.__name__}.accumulate")
        if dtype is not None:
            a = ew.convert_element_type(a, dtype)
        ax = canonicalize_axis(axis, core.get_aval(a).ndim)
        a = moveaxis(a, ax, 0)
        n = core.get_aval(a).shape[0]
        if n == 0:
            return moveaxis(a, 0, ax)
        first = st.slice_in_dim(a, 0, 1, 1, 0)
        _, rest = self._fold(st.index_in_dim(a, 0, 0, False), st.slice_in_dim(a, 1, n, 1, 0), None)
        return moveaxis(concatenate([first, rest], 0), 0, ax)

    def outer(self, A, B, /):
        """f(A[i...], B[j...]) for every pair: the result has shape A.shape + B.shape.

        Raises:
          ValueError: not a binary ufunc.
        """
        self._binary_only("outer")
        A, B = arraylike_arg(A, f"{self.__name__}.outer"), arraylike_arg(B, f"{self.__name__}.outer", 1)
        sa, sb = core.get_aval(A).shape, core.get_aval(B).shape
        shape = sa + sb
        A = st.broadcast_in_dim(A, shape, tuple(range(len(sa))))
        B = st.broadcast_in_dim(B, shape, tuple(range(len(sa), len(shape))))
        return self._call(A, B)

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """Copy of `a` with a[i] = f(a[i], b) (or f(a[i]) for unary ufuncs) applied for each index in turn, so a
        repeated index is updated repeatedly (NumPy's unbuffered semantics).

        Raises:
          ValueError: inplace=True (arrays are immutable).
        """
        if inplace:
            raise ValueError(f"{self.__name__}.at cannot modify arrays in-place, because JAX arrays are immutable. "
                             "Pass inplace=False to instead return an updated array.")
        if self._at is not None:
            return self._at(a, indices, b)
        a = arraylike_arg(a, f"{self.__name__}.at")
        idx = asarray_arg(indices, f"{self.__name__}.at")
        if not isinstance(indices, (core.Array, Tracer, np.ndarray, list, int, np.integer)):
            raise NotImplementedError(f"{self.__name__}.at supports integer index arrays along the first axis")
        idx_flat = st.reshape(idx, (core.get_aval(idx).size,))
        m = core.get_aval(idx_flat).shape[0]
        dt = core.get_aval(a).dtype
        if self.nin == 2:
            if b is None:
                raise ValueError(f"{self.__name__}.at needs a second operand b")
            bb = asarray_arg(b)
            item_shape = (m,) + core.get_aval(a).shape[1:]
            bb = broadcast_to_shape(bb, core.get_aval(idx).shape + core.get_aval(a).shape[1:])
            bb = st.reshape(bb, item_shape)
        else:
            bb = st.full((m,), 0, dt)

        def body(i, arr):
            j = st.dynamic_slice_clamped(idx_flat, (i,), (1,))
            j = st.reshape(j, ())
            cur = arr[j]
            new = self._call(cur, bb[i]) if self.nin == 2 else self._call(cur)
            return arr.at[j].set(ew.convert_element_type(asarray_arg(new), dt))
        return cf.fori_loop(0, m, body, a)

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions of the slices a[indices[i]:indices[i+1]] along `axis` (the last one runs to the end; where
        indices[i] >= indices[i+1], the element a[indices[i]] itself), with concrete `indices`.

        Raises:
          ValueError: not a binary ufunc. ConcretizationTypeError: traced indices.
        """
        from .indexing import _concrete_or_error
        from .shape import stack
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        a = arraylike_arg(a, f"{self.__name__}.reduceat")
        if dtype is not None:
            a = ew.convert_element_type(a, dtype)
        ind = _concrete_or_error(asarray_arg(indices), f"{self.__name__}.reduceat",
                                 "The indices decide the slices, so they must be concrete.").ravel()
        ax = canonicalize_axis(axis, core.get_aval(a).ndim)
        n = core.get_aval(a).shape[ax]
        pieces = []
        for k, start in enumerate(ind):
            start = int(start)
            stop = int(ind[k + 1]) if k + 1 < len(ind) else n
            if stop <= start:
                pieces.append(st.index_in_dim(a, start, ax, False))
            else:
                # Each slice folds from its first element (not from `identity`), as in JAX.
                pieces.append(self._reduce_one(st.slice_in_dim(a, start, stop, 1, ax), ax, None, None, True))
        return stack(pieces, ax)


def frompyfunc(func, /, nin: int, nout: int, *, identity=None) -> ufunc:
    """A `ufunc` from the scalar function `func` of `nin` inputs and `nout` outputs (see `ufunc`)."""
    return ufunc(func, nin, nout, identity=identity)
