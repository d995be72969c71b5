"""NumPy implementation of the `fft` primitive (NumPy's pocketfft, which keeps single precision since NumPy 2)."""

from __future__ import annotations

import numpy as np

from ...lax.fft import FftType, fft_p
from . import register_impl


def fft(x, *, fft_type, fft_lengths):
    x = np.asarray(x)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    if fft_type == FftType.FFT:
        out, dtype = np.fft.fftn(x, axes=axes), x.dtype
    elif fft_type == FftType.IFFT:
        out, dtype = np.fft.ifftn(x, axes=axes), x.dtype
    elif fft_type == FftType.RFFT:
        out, dtype = np.fft.rfftn(x, axes=axes), np.result_type(x.dtype, np.complex64)
    else:
        out, dtype = np.fft.irfftn(x, s=fft_lengths, axes=axes), np.finfo(x.dtype).dtype
    # NumPy < 2 computes in double precision; the result dtype is the primitive's, as in JAX.
    return np.asarray(out, dtype=dtype)


register_impl(fft_p, fft)
