"""`fluxion.numpy.fft`: NumPy's discrete Fourier transforms on the `fft` primitive (mirrors `jax.numpy.fft`).

Every transform moves the transformed axes to the end, zero-pads or truncates them to the requested sizes, binds
`lax.fft` (at most three axes per primitive; more are transformed in groups, the real transform on the last group)
and applies the normalization. Results follow JAX's dtypes: integer, bool and real inputs become complex64 (complex128
only for float64 inputs with x64 enabled); `irfft*`/`hfft` return the matching real dtype.

Normalization (`norm`), as in NumPy: "backward" (the default, `None`) leaves the forward transform unscaled and scales
the inverse by `1/n`; "ortho" scales both by `1/sqrt(n)`; "forward" scales the forward transform by `1/n`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import core, dtypes
from ..lax import elementwise as ew
from ..lax import structural as st
from ..lax.fft import FftType
from ..lax.fft import fft as lax_fft
from .shape import roll
from .util import arraylike_arg, canonicalize_axis

_NORMS = (None, "backward", "ortho", "forward")


def _check_norm(norm) -> None:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _to_inexact(a: Any, fname: str, kind: FftType) -> Any:
    a = arraylike_arg(a, f"jax.numpy.fft.{fname}")
    dt = core.get_aval(a).dtype
    if kind in (FftType.FFT, FftType.IFFT, FftType.IRFFT):
        want = dt if dtypes.is_complex(dt) else (np.dtype(np.complex128) if dt == np.float64
                                                 else np.dtype(np.complex64))
    else:
        if dtypes.is_complex(dt):
            raise TypeError(f"jax.numpy.fft.{fname} takes a real input, got {dt.name}")
        want = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    return a if dt == want else ew.convert_element_type(a, want)


def _resize(a: Any, axis: int, size: int) -> Any:
    """Zero-pads or truncates `a` along `axis` to `size`."""
    n = a.shape[axis]
    if size == n:
        return a
    if size < n:
        start = [0] * a.ndim
        limit = list(a.shape)
        limit[axis] = size
        return st.slice(a, start, limit)
    config = [(0, 0, 0)] * a.ndim
    config[axis] = (0, size - n, 0)
    return st.pad(a, np.zeros((), a.dtype), config)


def _scale(x: Any, n: int, norm, inverse: bool) -> Any:
    """Applies `norm` on top of the primitive's own scaling (none forward, `1/n` inverse, i.e. "backward")."""
    if norm in (None, "backward"):
        return x
    if norm == "ortho":
        factor = math.sqrt(n) if inverse else 1.0 / math.sqrt(n)
    else:  # "forward"
        factor = float(n) if inverse else 1.0 / n
    return ew.mul(x, ew.convert_element_type(core.Array(np.asarray(factor)), core.get_aval(x).dtype))


def _fftn(fname: str, kind: FftType, a: Any, s, axes, norm) -> Any:
    _check_norm(norm)
    a = _to_inexact(a, fname, kind)
    nd = a.ndim
    if axes is None:
        axes = tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    axes = tuple(canonicalize_axis(int(ax), nd) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.numpy.fft.{fname} does not support repeated axes. Got axes {axes}.")
    if s is None:
        s = [a.shape[ax] for ax in axes]
        if kind == FftType.IRFFT and axes:
            s[-1] = 2 * (a.shape[axes[-1]] - 1)
    s = [int(n) for n in s]
    if len(s) != len(axes):
        raise ValueError(f"jax.numpy.fft.{fname}: shape s={tuple(s)} and axes={axes} must have the same length")
    if any(n < 1 for n in s):
        raise ValueError(f"jax.numpy.fft.{fname}: every transform length must be positive, got s={tuple(s)}")
    if not axes:
        return a
    # The transformed axes go last, in the order given.
    perm = [i for i in range(nd) if i not in axes] + list(axes)
    x = st.transpose(a, perm) if perm != list(range(nd)) else a
    k = len(axes)
    for j, n in enumerate(s):
        want = n // 2 + 1 if (kind == FftType.IRFFT and j == k - 1) else n
        x = _resize(x, nd - k + j, want)
    x = _apply(x, kind, s)
    x = _scale(x, math.prod(s), norm, inverse=kind in (FftType.IFFT, FftType.IRFFT))
    inv = np.argsort(perm).tolist()
    return st.transpose(x, inv) if inv != list(range(nd)) else x


def _apply(x: Any, kind: FftType, s: Sequence[int]) -> Any:
    """Binds the primitive on the trailing `len(s)` axes: the requested transform on the last (up to) three, complex
    transforms in groups of three on any axes before them (the DFT is separable, so the order only matters for the
    real transforms: RFFT first, IRFFT last)."""
    nd, k = x.ndim, len(s)
    last = min(3, k)
    lead = [(nd - k + i, s[i:min(i + 3, k - last)]) for i in range(0, k - last, 3)]
    if kind == FftType.IRFFT:
        for first, lengths in lead:
            x = _on_axes(x, FftType.IFFT, lengths, first)
        return lax_fft(x, FftType.IRFFT, s[k - last:])
    x = lax_fft(x, kind, s[k - last:])
    inner = FftType.FFT if kind == FftType.RFFT else kind
    for first, lengths in lead:
        x = _on_axes(x, inner, lengths, first)
    return x


def _on_axes(x: Any, kind: FftType, lengths: Sequence[int], first: int) -> Any:
    """A complex transform over axes `first .. first+len(lengths)-1` (moved to the end and back)."""
    nd, k = x.ndim, len(lengths)
    moved = list(range(first, first + k))
    perm = [i for i in range(nd) if i not in moved] + moved
    y = lax_fft(st.transpose(x, perm), kind, lengths)
    return st.transpose(y, np.argsort(perm).tolist())


def _fft1(fname: str, kind: FftType, a, n, axis: int, norm) -> Any:
    if n is not None and int(n) < 1:
        raise ValueError(f"jax.numpy.fft.{fname}: n must be positive, got {n}")
    a = arraylike_arg(a, f"jax.numpy.fft.{fname}")
    if a.ndim == 0:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    canonicalize_axis(axis, a.ndim)
    return _fftn(fname, kind, a, None if n is None else (n,), (axis,), norm)


def fft(a, n=None, axis: int = -1, norm=None):
    """The one-dimensional DFT along `axis` (zero-padded or truncated to `n`). Complex result; see the module doc."""
    return _fft1("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
    """The one-dimensional inverse DFT along `axis`."""
    return _fft1("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
    """The DFT of a real input along `axis`: the `n // 2 + 1` non-negative frequencies. Raises TypeError for complex
    input (NumPy discards the imaginary part with a warning; JAX refuses)."""
    return _fft1("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
    """The inverse of `rfft`: `n` real outputs (default `2 * (m - 1)` for `m` inputs) along `axis`."""
    return _fft1("irfft", FftType.IRFFT, a, n, axis, norm)


def _swap(norm):
    return {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def hfft(a, n=None, axis: int = -1, norm=None):
    """The DFT of a signal with Hermitian symmetry given by its first half: real output of length `n` (default
    `2 * (m - 1)`). Equals `irfft(conj(a), n)` with the normalization directions swapped, as in NumPy."""
    _check_norm(norm)
    a = _to_inexact(a, "hfft", FftType.IRFFT)
    return _fft1("hfft", FftType.IRFFT, ew.conj(a), n, axis, _swap(norm))


def ihfft(a, n=None, axis: int = -1, norm=None):
    """The inverse of `hfft`: `conj(rfft(a, n))` with the normalization directions swapped."""
    _check_norm(norm)
    return ew.conj(_fft1("ihfft", FftType.RFFT, a, n, axis, _swap(norm)))


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT over `axes` (default: all, or the last `len(s)`), each resized to `s`."""
    return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse DFT."""
    return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT of a real input; the last transformed axis keeps `s[-1] // 2 + 1` frequencies."""
    return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of `rfftn` (the last axis's output length defaults to `2 * (m - 1)`)."""
    return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """`fftn` over two axes (default the last two)."""
    return _fftn("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """`ifftn` over two axes (default the last two)."""
    return _fftn("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """`rfftn` over two axes (default the last two)."""
    return _fftn("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """`irfftn` over two axes (default the last two)."""
    return _fftn("irfft2", FftType.IRFFT, a, s, axes, norm)


def _freq_dtype(dtype):
    return dtypes.canonicalize_dtype(dtypes.default_float_dtype() if dtype is None else dtype)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """The sample frequencies of an `n`-point DFT with sample spacing `d`: `[0, 1, ..., -1] / (d * n)`.

    `n` must be a concrete int; `d` may be traced. dtype defaults to the default float type."""
    return _freqs(np.fft.fftfreq(int(n)) * int(n), n, d, dtype)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of an `n`-point real DFT: `[0, 1, ..., n // 2] / (d * n)`."""
    return _freqs(np.arange(int(n) // 2 + 1), n, d, dtype)


def _freqs(k: np.ndarray, n: int, d, dtype):
    if int(n) < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    dt = _freq_dtype(dtype)
    k = core.Array(np.asarray(k, dt))
    d = arraylike_arg(d, "fftfreq")
    scale = ew.mul(ew.convert_element_type(d, dt), ew.convert_element_type(core.Array(np.asarray(n)), dt))
    return ew.div(k, scale)


def _roll_axes(x, axes, sign: int):
    x = arraylike_arg(x, "fftshift")
    if axes is None:
        axes = tuple(range(x.ndim))
        shifts = [sign * (n // 2) for n in x.shape]
    else:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        shifts = [sign * (x.shape[ax] // 2) for ax in axes]
    return roll(x, tuple(shifts), axes)


def fftshift(x, axes=None):
    """Moves the zero frequency to the centre: rolls each of `axes` (default all) by `n // 2`."""
    return _roll_axes(x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of `fftshift`: rolls each of `axes` by `-(n // 2)`."""
    return _roll_axes(x, axes, -1)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2",
           "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
