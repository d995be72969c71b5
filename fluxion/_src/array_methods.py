"""Operators and NumPy-style methods shared by `Array` and every `Tracer`.

Each method is written out and forwards to the public `fluxion.numpy` function of the same meaning, so the
arithmetic of concrete arrays and of tracers is one code path. The NumPy namespace is bound late (by
`fluxion._src.numpy` when it is imported) because it is built on top of the core that defines these classes.

`Array` overrides `+ - * /` and the comparisons with an eager shortcut for two Arrays of one dtype
(`core.fast_binary_operator`, installed by `fluxion._src.numpy.ufuncs`); it falls back to the methods here.
"""

from __future__ import annotations

from typing import Any

jnp: Any = None  # set by fluxion._src.numpy.__init__ via install_numpy_namespace


def install_numpy_namespace(module: Any) -> None:
    global jnp
    jnp = module


class ArrayOps:
    __slots__ = ()

    # -- arithmetic operators ------------------------------------------------------------------------------------
    def __add__(self, other): return jnp.add(self, other)
    def __radd__(self, other): return jnp.add(other, self)
    def __sub__(self, other): return jnp.subtract(self, other)
    def __rsub__(self, other): return jnp.subtract(other, self)
    def __mul__(self, other): return jnp.multiply(self, other)
    def __rmul__(self, other): return jnp.multiply(other, self)
    def __truediv__(self, other): return jnp.true_divide(self, other)
    def __rtruediv__(self, other): return jnp.true_divide(other, self)
    def __floordiv__(self, other): return jnp.floor_divide(self, other)
    def __rfloordiv__(self, other): return jnp.floor_divide(other, self)
    def __mod__(self, other): return jnp.remainder(self, other)
    def __rmod__(self, other): return jnp.remainder(other, self)
    def __divmod__(self, other): return jnp.divmod(self, other)
    def __rdivmod__(self, other): return jnp.divmod(other, self)
    def __pow__(self, other): return jnp.power(self, other)
    def __rpow__(self, other): return jnp.power(other, self)
    def __matmul__(self, other): return jnp.matmul(self, other)
    def __rmatmul__(self, other): return jnp.matmul(other, self)
    def __neg__(self): return jnp.negative(self)
    def __pos__(self): return jnp.positive(self)
    def __abs__(self): return jnp.abs(self)
    def __invert__(self): return jnp.invert(self)
    def __and__(self, other): return jnp.bitwise_and(self, other)
    def __rand__(self, other): return jnp.bitwise_and(other, self)
    def __or__(self, other): return jnp.bitwise_or(self, other)
    def __ror__(self, other): return jnp.bitwise_or(other, self)
    def __xor__(self, other): return jnp.bitwise_xor(self, other)
    def __rxor__(self, other): return jnp.bitwise_xor(other, self)
    def __lshift__(self, other): return jnp.left_shift(self, other)
    def __rlshift__(self, other): return jnp.left_shift(other, self)
    def __rshift__(self, other): return jnp.right_shift(self, other)
    def __rrshift__(self, other): return jnp.right_shift(other, self)

    # -- comparisons ---------------------------------------------------------------------------------------------
    def __eq__(self, other): return jnp.equal(self, other)
    def __ne__(self, other): return jnp.not_equal(self, other)
    def __lt__(self, other): return jnp.less(self, other)
    def __le__(self, other): return jnp.less_equal(self, other)
    def __gt__(self, other): return jnp.greater(self, other)
    def __ge__(self, other): return jnp.greater_equal(self, other)

    # -- indexing ------------------------------------------------------------------------------------------------
    def __getitem__(self, idx): return jnp._getitem(self, idx)

    def __setitem__(self, idx, value):
        raise TypeError(
            f"'{type(self).__name__}' object does not support item assignment: fluxion arrays are immutable. "
            "Use x = x.at[idx].set(value) (or .add, .multiply, .min, .max) to get an updated copy.")

    @property
    def at(self): return jnp._IndexUpdateHelper(self)

    # -- shape and type ------------------------------------------------------------------------------------------
    @property
    def T(self): return jnp.transpose(self)

    @property
    def mT(self): return jnp.matrix_transpose(self)

    @property
    def real(self): return jnp.real(self)

    @property
    def imag(self): return jnp.imag(self)

    def astype(self, dtype, copy=False, device=None): return jnp.astype(self, dtype, copy=copy, device=device)

    # The Array API's placement attribute and method (JAX's names and behaviour).
    @property
    def device(self): return jnp._device_of(self)
    def to_device(self, device, *, stream=None): return jnp._to_device(self, device, stream)
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int) and shape[0] is not None:
            shape = shape[0]
        return jnp.reshape(self, shape, order=order)
    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return jnp.transpose(self, axes or None)
    def swapaxes(self, axis1, axis2): return jnp.swapaxes(self, axis1, axis2)
    def squeeze(self, axis=None): return jnp.squeeze(self, axis)
    def flatten(self, order="C"): return jnp.ravel(self, order)
    def ravel(self, order="C"): return jnp.ravel(self, order)
    def view(self, dtype=None): return self if dtype is None else jnp._bitcast_view(self, dtype)
    def conj(self): return jnp.conjugate(self)
    def conjugate(self): return jnp.conjugate(self)
    def copy(self): return jnp.array(self, copy=True)
    def repeat(self, repeats, axis=None, total_repeat_length=None): return jnp.repeat(self, repeats, axis)
    def clip(self, min=None, max=None): return jnp.clip(self, min, max)
    def round(self, decimals=0): return jnp.round(self, decimals)
    def dot(self, other): return jnp.dot(self, other)
    def diagonal(self, offset=0, axis1=0, axis2=1): return jnp.diagonal(self, offset, axis1, axis2)
    def trace(self, offset=0, axis1=0, axis2=1, dtype=None): return jnp.trace(self, offset, axis1, axis2, dtype)
    def take(self, indices, axis=None, mode=None): return jnp.take(self, indices, axis=axis, mode=mode)
    def searchsorted(self, v, side="left"): return jnp.searchsorted(self, v, side=side)
    def sort(self, axis=-1): return jnp.sort(self, axis)
    def argsort(self, axis=-1): return jnp.argsort(self, axis)
    def nonzero(self, size=None, fill_value=None): return jnp.nonzero(self, size=size, fill_value=fill_value)
    def __array_namespace__(self, *, api_version=None):
        # As JAX: only the implemented standard version (or None) is accepted.
        if api_version is not None and api_version != jnp.__array_api_version__:
            raise ValueError(f"api_version={api_version!r} is not available; available versions are: "
                             f"[{jnp.__array_api_version__!r}]")
        return jnp

    # -- reductions ----------------------------------------------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return jnp.sum(self, axis=axis, out=out, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return jnp.prod(self, axis=axis, out=out, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
    def mean(self, axis=None, dtype=None, out=None, keepdims=False, where=None):
        return jnp.mean(self, axis=axis, out=out, dtype=dtype, keepdims=keepdims, where=where)
    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
        return jnp.var(self, axis=axis, out=out, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
        return jnp.std(self, axis=axis, out=out, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    def max(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return jnp.max(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
    def min(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return jnp.min(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
    def argmax(self, axis=None, out=None, keepdims=None): return jnp.argmax(self, axis=axis, out=out, keepdims=keepdims)
    def argmin(self, axis=None, out=None, keepdims=None): return jnp.argmin(self, axis=axis, out=out, keepdims=keepdims)
    def any(self, axis=None, out=None, keepdims=False, where=None):
        return jnp.any(self, axis=axis, out=out, keepdims=keepdims, where=where)
    def all(self, axis=None, out=None, keepdims=False, where=None):
        return jnp.all(self, axis=axis, out=out, keepdims=keepdims, where=where)
    def cumsum(self, axis=None, dtype=None): return jnp.cumsum(self, axis=axis, dtype=dtype)
    def cumprod(self, axis=None, dtype=None): return jnp.cumprod(self, axis=axis, dtype=dtype)
