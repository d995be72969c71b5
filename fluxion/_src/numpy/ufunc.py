"""`ufunc` (JAX's `jnp.ufunc` class) and `frompyfunc`: a scalar Python function turned into a broadcasting function
with NumPy's ufunc methods `reduce`, `accumulate`, `outer`, `at` and `reduceat`.

The scalar function is vectorized with `vectorize` (nested vmap), and the methods of binary ufuncs fold it along an
axis with `lax.scan`, so everything traces; `at` applies the updates one index at a time (unbuffered, so repeated
indices compound, as in NumPy), and `reduceat` folds every position into the segments that contain it.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import core
from ..lax import control_flow as cf
from ..lax import elementwise as ew
from ..lax import structural as st
from .functional import vectorize
from .util import arraylike_arg, asarray_arg, broadcast_shapes, broadcast_to_shape, canonicalize_axis


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
        # The object stands for `func` in `fluxion.numpy` (jnp.add is one), so it shows func's documentation.
        self.__doc__ = getattr(func, "__doc__", None)
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
        for i, x in enumerate(args):
            if isinstance(x, (list, tuple)):
                # JAX's ufuncs refuse sequences: converting a long Python list on every call is a hidden cost.
                raise TypeError(f"{self.__name__} requires ndarray or scalar arguments, got {type(x)} at position {i}.")
        return self._call(*args)

    def _result_dtype(self, a):
        """The dtype f(x, x) has for elements x of `a` (the dtype reduce and accumulate fold in by default)."""
        from .. import api
        one = st.full((), 1, core.get_aval(a).dtype)
        return api.eval_shape(self._func, one, one).dtype

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
        a = arraylike_arg(a, f"{self.__name__}.reduce")
        if where is not None:
            where = asarray_arg(where)
            if initial is None and self.identity is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, so to use a "
                                 "where mask one has to specify 'initial'.")
            if core.get_aval(where).dtype != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got dtype={core.get_aval(where).dtype}")
        if self._reduce is not None:
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        a = ew.convert_element_type(a, self._result_dtype(a) if dtype is None else dtype)
        nd = core.get_aval(a).ndim
        if where is not None:
            where = broadcast_to_shape(where, core.get_aval(a).shape)
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
        a = ew.convert_element_type(a, self._result_dtype(a) if dtype is None else dtype)
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
        """Copy of `a` with a[idx] = f(a[idx], b) (or f(a[idx]) for unary ufuncs) applied for each index in turn,
        so a repeated index is updated repeatedly (NumPy's unbuffered semantics).

        `indices` is what `a[indices]` takes: an integer (array), a slice, or a tuple of them; the integer arrays
        are broadcast together and walked element by element, and `b` is broadcast to the broadcast index shape
        followed by the shape each step selects. The result has the dtype `f` gives for `a` and `b`.

        Raises:
          NotImplementedError: inplace=True (arrays are immutable), as in JAX.
          ValueError: a binary ufunc without `b`.
        """
        if inplace:
            raise NotImplementedError(
                f"{self.__name__}.at cannot modify arrays in-place, because JAX arrays are immutable. Pass "
                f"inplace=False and use the returned array: arr = jnp.{self.__name__}.at(arr, ind, val, inplace=False)")
        if self.nin == 2 and b is None:
            raise ValueError(f"{self.__name__}.at needs a second operand b")
        args = () if b is None else (b,)
        if self._at is not None:
            return self._at(a, indices, *args)
        return self._at_via_loop(a, indices, *args)

    def _at_via_loop(self, a, indices, *args):
        from .. import api
        a = arraylike_arg(a, f"{self.__name__}.at")
        args = tuple(arraylike_arg(x, f"{self.__name__}.at", 2) for x in args)
        ones = [st.full((), 1, core.get_aval(x).dtype) for x in (a, *args)]
        dt = api.eval_shape(self._func, *ones).dtype
        a = ew.convert_element_type(a, dt)
        args = tuple(ew.convert_element_type(x, dt) for x in args)
        index = indices if isinstance(indices, tuple) else (indices,)
        index = tuple(i if i is None or i is Ellipsis or isinstance(i, slice) else asarray_arg(i) for i in index)
        arrays = [core.get_aval(i).shape for i in index if not (i is None or i is Ellipsis or isinstance(i, slice))]
        shape = broadcast_shapes(*arrays) if arrays else ()
        if shape == ():
            # One selection (scalars and slices only): a single gather, apply and scatter.
            new = self._call(a.at[index].get(), *args)
            return a.at[index].set(ew.convert_element_type(asarray_arg(new), dt))
        m = int(np.prod(shape, dtype=np.int64))
        flat = tuple(i if i is None or i is Ellipsis or isinstance(i, slice)
                     else st.reshape(broadcast_to_shape(i, shape), (m,)) for i in index)
        if args:
            bshape = core.get_aval(args[0]).shape[len(shape):]
            args = (st.reshape(broadcast_to_shape(args[0], shape + bshape), (m,) + bshape),)

        def body(k, arr):
            step = tuple(i if i is None or i is Ellipsis or isinstance(i, slice) else i[k] for i in flat)
            new = self._call(arr.at[step].get(), *(x[k] for x in args))
            return arr.at[step].set(ew.convert_element_type(asarray_arg(new), dt))
        return cf.fori_loop(0, m, body, a)

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions of the slices a[indices[i]:indices[i+1]] along `axis` (the last one runs to the end; where
        indices[i] >= indices[i+1], the element a[indices[i]] itself). `indices` may be traced. `dtype` casts `a`
        first, as in NumPy (JAX 0.10 ignores it).

        Raises:
          ValueError: not a binary ufunc; `a` is 0-d; `indices` is not 1-d; `axis` is None or a tuple.
        """
        from ..lax.derived import dynamic_slice_in_dim
        from .indexing import take
        from .shape import concatenate
        from .ufuncs import greater, less, logical_and, where
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        a = arraylike_arg(a, f"{self.__name__}.reduceat")
        ind = asarray_arg(indices, f"{self.__name__}.reduceat")
        shape = core.get_aval(a).shape
        if not shape:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={shape}")
        if core.get_aval(ind).ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got indices.shape={core.get_aval(ind).shape}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        if dtype is not None:
            a = ew.convert_element_type(a, dtype)
        dt = core.get_aval(a).dtype
        ax = canonicalize_axis(axis, len(shape))
        n = shape[ax]
        result = take(a, ind, axis=ax)
        # Segment k covers positions start[k] < i < end[k] beyond its first element a[start[k]] (taken above); a
        # segment whose end is not after its start stays that single element.
        ind = ew.convert_element_type(ind, np.dtype(np.int32))
        bounds = concatenate([ind, st.full((1,), n, np.dtype(np.int32))])
        lane = tuple(-1 if d == ax else 1 for d in range(len(shape)))
        start = st.reshape(st.slice_in_dim(bounds, 0, core.get_aval(ind).shape[0], 1, 0), tuple(
            core.get_aval(ind).shape[0] if d == -1 else 1 for d in lane))
        end = st.reshape(st.slice_in_dim(bounds, 1, core.get_aval(ind).shape[0] + 1, 1, 0),
                         core.get_aval(start).shape)

        def body(i, acc):
            row = dynamic_slice_in_dim(a, i, 1, ax)
            new = ew.convert_element_type(asarray_arg(self._call(acc, row)), dt)
            return where(logical_and(greater(i, start), less(i, end)), new, acc)
        return cf.fori_loop(0, n, body, result)


def frompyfunc(func, /, nin: int, nout: int, *, identity=None) -> ufunc:
    """A `ufunc` from the scalar function `func` of `nin` inputs and `nout` outputs (see `ufunc`)."""
    return ufunc(func, nin, nout, identity=identity)
