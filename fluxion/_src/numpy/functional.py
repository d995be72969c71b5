"""Applying Python functions over arrays: `vectorize`, `apply_along_axis`, `apply_over_axes`, `piecewise`,
`fromfunction`.

As in JAX, the functions are traced, not looped over: `vectorize`, `apply_along_axis` and `fromfunction` nest
`vmap`, so the function sees one element (or one core slice) at a time and must be traceable.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from .. import core
from ..api import vmap
from ..lax import structural as st
from .util import arraylike_arg, asarray_arg, broadcast_shapes, broadcast_to_shape, canonicalize_axis

_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature: str):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")
    parse = lambda s: [tuple(re.findall(_DIM, a)) for a in re.findall(_CORE, s)]  # noqa: E731
    return parse(ins), parse(outs)


class vectorize:  # noqa: N801  (lower case, as numpy.vectorize / jax.numpy.vectorize)
    """Turns a function of scalars (or, with a `signature` like "(m,n),(n)->(m)", of core arrays) into one that
    broadcasts over leading dimensions, by nesting `vmap` once per broadcast dimension.

    `excluded`: positions or keyword names passed through unvectorized. Other keyword arguments are vectorized
    like positional ones, as NumPy does (JAX 0.10 silently calls the function with their defaults instead).

    Raises:
      ValueError: a malformed signature, the wrong number of arguments for it, too few dimensions for an
        argument's core dimensions, or inconsistent sizes of a named core dimension.
    """

    def __init__(self, pyfunc, *, excluded=frozenset(), signature: str | None = None):
        self.pyfunc = pyfunc
        self.excluded = frozenset(excluded)
        self.signature = signature
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args, **kwargs):
        excluded = self.excluded
        pos_excl = sorted(i for i in excluded if isinstance(i, int))
        if any(i >= len(args) or i < 0 for i in pos_excl):
            raise ValueError(f"excluded positions {pos_excl} out of range for {len(args)} arguments")
        fixed_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
        vec_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
        fixed = {i: args[i] for i in pos_excl}
        names = list(vec_kwargs)
        vargs = [a for i, a in enumerate(args) if i not in fixed] + [vec_kwargs[k] for k in names]
        vargs = [asarray_arg(a, "vectorize") for a in vargs]
        n_pos = len(vargs) - len(names)

        def call(*xs):
            full, it = [], iter(xs[:n_pos])
            for i in range(len(args)):
                full.append(fixed[i] if i in fixed else next(it))
            kw = dict(fixed_kwargs)
            kw.update(zip(names, xs[n_pos:]))
            return self.pyfunc(*full, **kw)

        if self.signature is None:
            cores = [()] * len(vargs)
        else:
            in_cores, _ = _parse_signature(self.signature)
            if len(in_cores) != len(vargs):
                raise ValueError(f"wrong number of positional arguments: expected {len(in_cores)}, got {len(vargs)}")
            cores = in_cores
        sizes: dict = {}
        batch_shapes = []
        for a, cd in zip(vargs, cores):
            shape = core.get_aval(a).shape
            if len(cd) > len(shape):
                raise ValueError(f"input with shape {shape} does not have enough dimensions for its core dimensions "
                                 f"{cd} in signature {self.signature}")
            for name, d in zip(cd, shape[len(shape) - len(cd):]):
                if sizes.setdefault(name, d) != d:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: {sizes[name]} vs {d}")
            batch_shapes.append(shape[:len(shape) - len(cd)])
        batch = broadcast_shapes(*batch_shapes) if batch_shapes else ()
        vargs = [broadcast_to_shape(a, batch + core.get_aval(a).shape[len(bs):]) if bs != batch else a
                 for a, bs in zip(vargs, batch_shapes)]
        f = call
        for _ in batch:
            f = vmap(f)
        return f(*vargs)


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """`func1d` applied to every 1-d slice of `arr` along `axis` (the slices' results replace that axis)."""
    arr = arraylike_arg(arr, "apply_along_axis", 2)
    nd = core.get_aval(arr).ndim
    axis = canonicalize_axis(axis, nd)

    def func(x):
        return func1d(x, *args, **kwargs)
    for i in range(1, nd - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """Applies `func(a, axis)` for each axis in turn; a result with one dimension fewer gets it back as size 1.

    Raises:
      ValueError: `func` returns an array of another rank.
    """
    from .shape import expand_dims
    a = arraylike_arg(a, "apply_over_axes", 1)
    for axis in ([axes] if isinstance(axes, (int, np.integer)) else axes):
        b = func(a, axis)
        nb, na = core.get_aval(b).ndim, core.get_aval(a).ndim
        if nb == na:
            a = b
        elif nb == na - 1:
            a = expand_dims(b, canonicalize_axis(axis, na))
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


def piecewise(x, condlist, funclist, *args, **kw):
    """Piecewise-defined function: where condition i holds, `funclist[i]` (a callable of `x` and `args`, or a
    constant); a condition listed later wins where several hold; elsewhere the extra last function or 0.

    Every function is evaluated on all of `x` and the results are selected, so they must be traceable and
    defined everywhere. Results are cast to `x`'s dtype.

    Raises:
      ValueError: neither len(condlist) nor len(condlist) + 1 functions.
    """
    from .ufuncs import where
    x = arraylike_arg(x, "piecewise")
    xa = core.get_aval(x)
    if isinstance(condlist, (list, tuple)):
        conds = [broadcast_to_shape(asarray_arg(c, "piecewise"), xa.shape) for c in condlist]
    else:
        c = asarray_arg(condlist, "piecewise")
        if core.get_aval(c).shape == xa.shape or core.get_aval(c).ndim == xa.ndim:
            conds = [c]
        else:
            conds = [st.index_in_dim(c, i, 0, False) for i in range(core.get_aval(c).shape[0])]
    nc, nf = len(conds), len(funclist)
    if nf == nc + 1:
        default, funcs = funclist[-1], list(funclist[:-1])
    elif nf == nc:
        default, funcs = 0, list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {nf}")

    def value(f):
        from .creation import full
        v = f(x, *args, **kw) if callable(f) else f
        v = asarray_arg(v, "piecewise")
        from ..lax import elementwise as ew
        v = ew.convert_element_type(v, xa.dtype)
        return v if core.get_aval(v).shape == xa.shape else broadcast_to_shape(v, xa.shape) if core.get_aval(
            v).ndim else full(xa.shape, v, xa.dtype)
    out = value(default)
    for c, f in zip(conds, funcs):
        c = c if core.get_aval(c).dtype == np.bool_ else c.astype(bool)
        out = where(c, value(f), out)
    return out


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function(i0, i1, ...)` evaluated at every index of `shape` (indices of `dtype`), vectorized with nested
    `vmap`: the function receives scalars and must be traceable."""
    from .creation import arange
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    f = functools.partial(function, **kwargs) if kwargs else function
    nd = len(shape)
    for i in reversed(range(nd)):
        f = vmap(f, in_axes=tuple(0 if j == i else None for j in range(nd)))
    return f(*[arange(n, dtype=dtype) for n in shape])
