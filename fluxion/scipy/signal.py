"""`fluxion.scipy.signal`: convolution, correlation, detrending and spectral analysis (mirrors `jax.scipy.signal`)."""

from .._src.scipy.signal import (
    convolve as convolve, convolve2d as convolve2d, correlate as correlate, correlate2d as correlate2d,
    detrend as detrend, fftconvolve as fftconvolve)
from .._src.scipy.spectral import csd as csd, istft as istft, stft as stft, welch as welch
