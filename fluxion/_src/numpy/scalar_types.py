"""`jnp.float32` and friends: callable scalar types that build arrays, usable as dtypes (`np.dtype(jnp.float32)`)."""

from __future__ import annotations

import numpy as np

from .. import dtypes


class _ScalarMeta(type):
    def __eq__(cls, other):
        # As JAX's scalar types: equal to itself, to the NumPy scalar type and to a dtype object of the same
        # kind; anything else (strings, dicts, None, other objects) compares unequal without being converted
        # by np.dtype, which raises for many of them (the Array API test suite compares dtypes with dicts).
        if other is cls:
            return True
        if isinstance(other, _ScalarMeta):
            return cls.dtype == other.dtype
        if isinstance(other, np.dtype) or (isinstance(other, type) and issubclass(other, np.generic)):
            return cls.dtype == np.dtype(other)
        return NotImplemented

    def __ne__(cls, other):
        eq = type(cls).__eq__(cls, other)
        return eq if eq is NotImplemented else not eq

    def __hash__(cls):
        return hash(cls.dtype)

    def __call__(cls, x):
        from .creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'fluxion.numpy.{cls.__name__}'>"


def _make(name: str, dtype, example: str, shown: str) -> type:
    dt = np.dtype(dtype)
    doc = f"""The {dt.name} scalar type, as `jnp.{name}`.

    Calling it converts its argument (a scalar or array-like) to a {dt.name} Array with `jnp.asarray(x, dtype)`;
    the type itself is accepted wherever a dtype is (`np.dtype(jnp.{name})` is {dt.name}), and `isinstance(x,
    jnp.{name})` is true for NumPy {dt.name} scalars. Differs from NumPy: the call returns a 0-d (or n-d) fluxion
    Array, not a NumPy scalar, as in JAX; without x64 mode, 64-bit types give their 32-bit counterparts' arrays.

    >>> import fluxion.numpy as jnp
    {example}
    {shown}
    """
    return _ScalarMeta(name, (object,), {"dtype": dt, "__doc__": doc})


bool_ = _make("bool_", np.bool_, ">>> jnp.bool_(2)", "Array(True, dtype=bool)")
int8 = _make("int8", np.int8, ">>> jnp.int8(-3)", "Array(-3, dtype=int8)")
int16 = _make("int16", np.int16, ">>> jnp.int16([1, 2])", "Array([1, 2], dtype=int16)")
int32 = _make("int32", np.int32, ">>> jnp.int32(7.9)", "Array(7, dtype=int32)")
int64 = _make("int64", np.int64, ">>> jnp.int64(7)", "Array(7, dtype=int32)")
uint8 = _make("uint8", np.uint8, ">>> jnp.uint8([0, 255])", "Array([  0, 255], dtype=uint8)")
uint16 = _make("uint16", np.uint16, ">>> jnp.uint16(9)", "Array(9, dtype=uint16)")
uint32 = _make("uint32", np.uint32, ">>> jnp.uint32(9)", "Array(9, dtype=uint32)")
uint64 = _make("uint64", np.uint64, ">>> jnp.uint64(9)", "Array(9, dtype=uint32)")
bfloat16 = _make("bfloat16", dtypes.bfloat16, ">>> jnp.bfloat16(1.5)", "Array(1.5, dtype=bfloat16)")
float16 = _make("float16", np.float16, ">>> jnp.float16([0.5, 2.0])", "Array([0.5, 2. ], dtype=float16)")
float32 = _make("float32", np.float32, ">>> jnp.float32(1.5)", "Array(1.5, dtype=float32)")
float64 = _make("float64", np.float64, ">>> jnp.float64(0.25)", "Array(0.25, dtype=float32)")
complex64 = _make("complex64", np.complex64, ">>> jnp.complex64(1 + 2j)", "Array(1.+2.j, dtype=complex64)")
complex128 = _make("complex128", np.complex128, ">>> jnp.complex128(1j)", "Array(0.+1.j, dtype=complex64)")
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
single, double = float32, float64
csingle, cdouble = complex64, complex128
half = float16
