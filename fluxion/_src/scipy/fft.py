"""`fluxion.scipy.fft`: the type-II discrete cosine transform and its inverse (mirrors `jax.scipy.fft`).

The DCT-II of a length-N signal x is y[k] = 2 sum_n x[n] cos(pi k (2n + 1) / (2N)) (SciPy's unnormalized
definition). It is computed from one real FFT of the even extension u = [x, reverse(x)] of length 2N: the FFT of u
is exp(i pi k / (2N)) y[k], so y[k] = Re(exp(-i pi k / (2N)) rfft(u)[k]) for k < N. The inverse runs the same
identity backwards: the half spectrum exp(i pi k / (2N)) y[k] (with a zero at k = N) is transformed back by one
inverse real FFT of length 2N, whose first N samples are x. Both are O(N log N), linear, and differentiable
through `fluxion.numpy.fft`.

Reference: J. Makhoul, "A fast cosine transform in one and two dimensions", IEEE Trans. ASSP 28(1), 1980.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..numpy.util import canonicalize_axis

_NORMS = (None, "backward", "ortho")


def _check(name: str, type: int, norm: Any) -> None:  # noqa: A002
    if type != 2:
        raise NotImplementedError(f"{name}: only the type-2 DCT is implemented, got type={type!r}")
    if norm not in _NORMS:
        raise ValueError(f"{name}: norm must be None, 'backward' or 'ortho', got {norm!r}")


def _as_inexact(x: Any):
    x = jnp.asarray(x)
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(dtypes.default_float_dtype())
    return x


def _resize(x, n: int | None, axis: int, name: str):
    """Truncates or zero-pads `x` to `n` points along `axis` (SciPy's `n` argument)."""
    if n is None or n == x.shape[axis]:
        return x
    if n < 1:
        raise ValueError(f"{name}: the transform length must be positive, got n={n}")
    if n < x.shape[axis]:
        return jnp.take(x, jnp.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - x.shape[axis])
    return jnp.pad(x, pad)


def _ortho_scale(n: int, dtype) -> np.ndarray:
    """The per-frequency factors that make the DCT-II orthonormal: sqrt(1/(4N)) at k = 0, sqrt(1/(2N)) after."""
    f = np.full(n, np.sqrt(1.0 / (2 * n)))
    f[0] = np.sqrt(1.0 / (4 * n))
    return f.astype(dtype)


def _complex_of(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _along_last(fn, x, axis: int):
    return jnp.moveaxis(fn(jnp.moveaxis(x, axis, -1)), -1, axis)


def _dct_last(x, norm):
    n = x.shape[-1]
    spectrum = jnp.fft.rfft(jnp.concatenate([x, jnp.flip(x, -1)], axis=-1), axis=-1)[..., :n]
    k = np.arange(n)
    twiddle = np.exp(-1j * np.pi * k / (2 * n)).astype(_complex_of(x.dtype))
    out = jnp.real(spectrum * twiddle).astype(x.dtype)
    if norm == "ortho":
        out = out * _ortho_scale(n, x.dtype)
    return out


def _idct_last(y, norm):
    n = y.shape[-1]
    if norm == "ortho":
        y = y / _ortho_scale(n, y.dtype)
    k = np.arange(n)
    twiddle = np.exp(1j * np.pi * k / (2 * n)).astype(_complex_of(y.dtype))
    half = jnp.concatenate([y * twiddle, jnp.zeros(y.shape[:-1] + (1,), twiddle.dtype)], axis=-1)
    return jnp.fft.irfft(half, 2 * n, axis=-1)[..., :n].astype(y.dtype)


def _per_part(fn, x):
    """The DCT has real coefficients: a complex input is transformed as its real and imaginary parts."""
    if dtypes.is_complex(x.dtype):
        return lax.complex(fn(jnp.real(x)), fn(jnp.imag(x)))
    return fn(x)


def _one_axis(name: str, last_fn, x: Any, n: int | None, axis: int, norm: Any):
    x = _as_inexact(x)
    axis = canonicalize_axis(axis, x.ndim)
    x = _resize(x, n, axis, name)
    return _per_part(lambda part: _along_last(lambda v: last_fn(v, norm), part, axis), x)


def _many_axes(name: str, last_fn, x: Any, s: Sequence[int] | None, axes: Sequence[int] | None, norm: Any):
    x = _as_inexact(x)
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = [canonicalize_axis(a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: axes must be distinct, got {tuple(axes)}")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{name}: s and axes must have the same length, got {len(s)} and {len(axes)}")
    sizes = [None] * len(axes) if s is None else list(s)
    for axis, size in zip(axes, sizes):
        x = _resize(x, size, axis, name)

    def transform(part):
        for axis in axes:  # the N-d transform is separable: one 1-D transform per axis
            part = _along_last(lambda v: last_fn(v, norm), part, axis)
        return part
    return _per_part(transform, x)


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:  # noqa: A002
    """The type-II discrete cosine transform of `x` along `axis`: y[k] = 2 sum_n x[n] cos(pi k (2n+1) / (2N)).

    `n` truncates or zero-pads `x` to n points along `axis` first. `norm` "ortho" scales y[0] by sqrt(1/(4N)) and
    the others by sqrt(1/(2N)) (an orthonormal transform); None and "backward" leave it unscaled. Integer inputs give
    the default float dtype; complex inputs transform their real and imaginary parts.

    Raises:
      NotImplementedError: for `type` other than 2 (as JAX). ValueError: for an unknown `norm` or n < 1.
    """
    _check("dct", type, norm)
    return _one_axis("dct", _dct_last, x, n, axis, norm)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:  # noqa: A002
    """The inverse of `dct` along `axis` (a scaled type-III transform): idct(dct(x, norm=m), norm=m) == x for every
    `norm`. `n`, `norm` and dtypes as for `dct`.

    Raises:
      NotImplementedError: for `type` other than 2. ValueError: for an unknown `norm` or n < 1.
    """
    _check("idct", type, norm)
    return _one_axis("idct", _idct_last, x, n, axis, norm)


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,  # noqa: A002
         norm: str | None = None) -> Any:
    """The N-d type-II DCT: `dct` applied along each of `axes` (default: all, or the last len(s)); `s` gives the
    length along each of them (truncation or zero padding).

    Raises:
      NotImplementedError: for `type` other than 2. ValueError: for an unknown `norm`, repeated axes, or `s` and
      `axes` of different lengths.
    """
    _check("dctn", type, norm)
    return _many_axes("dctn", _dct_last, x, s, axes, norm)


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,  # noqa: A002
          norm: str | None = None) -> Any:
    """The inverse of `dctn`: `idct` along each of `axes`; arguments and errors as for `dctn`."""
    _check("idctn", type, norm)
    return _many_axes("idctn", _idct_last, x, s, axes, norm)
