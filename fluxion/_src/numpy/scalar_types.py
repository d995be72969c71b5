"""`jnp.float32` and friends: callable scalar types that build arrays, usable as dtypes (`np.dtype(jnp.float32)`)."""

from __future__ import annotations

import numpy as np

from .. import dtypes


class _ScalarMeta(type):
    def __eq__(cls, other):
        try:
            return np.dtype(cls.dtype) == np.dtype(other)
        except TypeError:
            return False

    def __ne__(cls, other):
        return not cls.__eq__(other)

    def __hash__(cls):
        return hash(cls.dtype)

    def __call__(cls, x):
        from .creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'fluxion.numpy.{cls.__name__}'>"


def _make(name: str, dtype) -> type:
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(dtype)})


bool_ = _make("bool_", np.bool_)
int8 = _make("int8", np.int8)
int16 = _make("int16", np.int16)
int32 = _make("int32", np.int32)
int64 = _make("int64", np.int64)
uint8 = _make("uint8", np.uint8)
uint16 = _make("uint16", np.uint16)
uint32 = _make("uint32", np.uint32)
uint64 = _make("uint64", np.uint64)
bfloat16 = _make("bfloat16", dtypes.bfloat16)
float16 = _make("float16", np.float16)
float32 = _make("float32", np.float32)
float64 = _make("float64", np.float64)
complex64 = _make("complex64", np.complex64)
complex128 = _make("complex128", np.complex128)
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
single, double = float32, float64
csingle, cdouble = complex64, complex128
half = float16
