"""The discrete Fourier transform primitive, `fft` (mirrors `jax.lax.fft`).

One primitive covers the four transforms over the trailing `len(fft_lengths)` (1 to 3) axes, chosen by `fft_type`:

* `FFT`: complex -> complex, `X[k] = sum_n x[n] exp(-2 pi i k n / N)` (unnormalized, as NumPy's `fft`);
* `IFFT`: complex -> complex, the inverse, scaled by `1 / N`;
* `RFFT`: real -> complex, the non-negative frequencies of the FFT of a real signal (last axis `N // 2 + 1`);
* `IRFFT`: complex -> real, the inverse of `RFFT` for a Hermitian-symmetric spectrum given by its non-negative half.

Every transform is linear, so the JVP applies the transform to the tangent and reverse mode needs only transposes:

* FFT and IFFT: the DFT matrix `W[j, k] = w^(jk)` is symmetric, so each is its own transpose.
* RFFT = (keep the first `N // 2 + 1` outputs) . FFT . (embed reals as complex). Transposing each factor in reverse
  order: zero-pad the cotangent back to `N`, apply the FFT, keep the real part (the transpose of the real-to-complex
  embedding under JAX's convention for complex cotangents).
* IRFFT: the output is `(1/N) sum_k c_k Re(z_k w^(-jk))` over the stored half-spectrum, where `c_k` is 1 for the
  frequencies that occur once in the full spectrum (zero, and Nyquist when N is even) and 2 for those standing for a
  conjugate pair. Its transpose is therefore `conj(c * RFFT(ct) / N)`, with the conjugate from JAX's convention.
  These agree with `jax.lax.fft`'s rules (checked against JAX and finite differences in tests/lax/test_fft.py).
"""

from __future__ import annotations

import enum
import math
from typing import Sequence

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import elementwise as ew
from . import structural as st
from .utils import standard_primitive


class FftType(enum.IntEnum):
    """Which transform `lax.fft` computes (the values are JAX's, and jaxprs print them as integers)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_TYPE_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT, "irfft": FftType.IRFFT}

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


def _fft_type(fft_type) -> FftType:
    if isinstance(fft_type, str):
        try:
            return _TYPE_NAMES[fft_type.lower()]
        except KeyError:
            raise ValueError(f"lax.fft: unknown fft_type {fft_type!r}; expected one of "
                             f"{sorted(_TYPE_NAMES)} or a lax.FftType") from None
    try:
        return FftType(int(fft_type))
    except (TypeError, ValueError):
        raise ValueError(f"lax.fft: unknown fft_type {fft_type!r}") from None


# --------------------------------------------------------------------------------------------------------------
# fft
# --------------------------------------------------------------------------------------------------------------

fft_p = standard_primitive("fft", weak_type="never")


def fft(x, fft_type, fft_lengths: Sequence[int]):
    """The DFT of `x` over its trailing `len(fft_lengths)` axes (1 to 3), like `jax.lax.fft`.

    Args:
      x: complex for FFT/IFFT/IRFFT, real floating for RFFT. For FFT and IFFT a real or integer `x` is first
        converted to the matching complex dtype, as JAX does.
      fft_type: a `FftType` or one of "fft", "ifft", "rfft", "irfft".
      fft_lengths: the transform's size along each trailing axis; the trailing axes of `x` must equal it (for IRFFT
        the last one must be `fft_lengths[-1] // 2 + 1`).

    Returns:
      complex64/complex128 for FFT, IFFT and RFFT (RFFT's last axis is `fft_lengths[-1] // 2 + 1`); the real dtype
      for IRFFT, with trailing axes `fft_lengths`. No normalization beyond IFFT's and IRFFT's `1 / prod(lengths)`.

    Raises:
      ValueError: bad `fft_type`, more than 3 or more lengths than axes, or trailing axes that do not match.
      TypeError: an operand dtype the transform does not take (e.g. complex input to RFFT).
    """
    kind = _fft_type(fft_type)
    x = st._as_array(x)
    dt = core.get_aval(x).dtype
    if kind in (FftType.FFT, FftType.IFFT) and not dtypes.is_complex(dt):
        target = np.dtype(np.complex128) if dt == np.float64 else np.dtype(np.complex64)
        x = ew.convert_element_type(x, target)
    if isinstance(fft_lengths, int):
        fft_lengths = (fft_lengths,)
    fft_lengths = tuple(int(n) for n in fft_lengths)
    # Eager binds skip abstract evaluation; validate here so every mode raises the same error.
    _fft_abstract_eval(core.get_aval(x), fft_type=kind, fft_lengths=fft_lengths)
    return fft_p.bind(x, fft_type=kind, fft_lengths=fft_lengths)


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    name = FftType(fft_type).name
    if not 1 <= k <= 3:
        raise ValueError(f"{name}: fft_lengths must have 1 to 3 entries, got {fft_lengths}")
    if x.ndim < k:
        raise ValueError(f"{name} input shape {x.shape} must have at least as many dimensions as fft_lengths "
                         f"{fft_lengths}")
    lead, minor = x.shape[:x.ndim - k], x.shape[x.ndim - k:]
    if fft_type == FftType.RFFT:
        if x.dtype not in _COMPLEX_OF:
            raise TypeError(f"RFFT takes float32 or float64 input, got {x.dtype.name}")
        if minor != tuple(fft_lengths):
            raise ValueError(f"RFFT input shape {x.shape}: its trailing dimensions must equal fft_lengths "
                             f"{fft_lengths}")
        return ShapedArray(lead + tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,), _COMPLEX_OF[x.dtype])
    if x.dtype not in _REAL_OF:
        raise TypeError(f"{name} takes complex64 or complex128 input, got {x.dtype.name}")
    if fft_type == FftType.IRFFT:
        want = tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
        if minor != want:
            raise ValueError(f"IRFFT input shape {x.shape}: its trailing dimensions must be {want} for fft_lengths "
                             f"{fft_lengths} (the last one is fft_lengths[-1] // 2 + 1)")
        return ShapedArray(lead + tuple(fft_lengths), _REAL_OF[x.dtype])
    if minor != tuple(fft_lengths):
        raise ValueError(f"{name} input shape {x.shape}: its trailing dimensions must equal fft_lengths "
                         f"{fft_lengths}")
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[fft_p] = _fft_abstract_eval


def _rfft_transpose(ct, fft_lengths):
    # Zero-pad the half spectrum back to N, FFT (self-transpose), real part.
    n = fft_lengths[-1]
    pad = [(0, 0, 0)] * (ct.ndim - 1) + [(0, n - ct.shape[-1], 0)]
    full = st.pad(ct, np.zeros((), ct.dtype), pad)
    return ew.real(fft_p.bind(full, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    spec = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    m, n = spec.shape[-1], fft_lengths[-1]
    weights = np.full(m, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0  # the Nyquist frequency appears once in the full spectrum
    weights = (weights / math.prod(fft_lengths)).astype(_REAL_OF[spec.dtype])
    weights = st.broadcast_in_dim(ew.convert_element_type(core.Array(weights), spec.dtype), spec.shape,
                                  (spec.ndim - 1,))
    scaled = ew.mul(spec, weights)
    return ew.conj(scaled)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [None]
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


ad.deflinear(fft_p, _fft_transpose)


def _fft_batch_rule(vals, dims, *, fft_type, fft_lengths):
    (x,), (d,) = vals, dims
    # The transform acts on trailing axes; keep the batch axis in front of them.
    x = batching.moveaxis(x, d, 0, core.get_aval(x).shape[d])
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


batching.primitive_batchers[fft_p] = _fft_batch_rule
