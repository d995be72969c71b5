"""`fluxion.scipy.signal`'s spectral analysis: `stft`, `istft`, `csd` and `welch` (mirrors `jax.scipy.signal`).

A signal is cut into segments of `nperseg` samples advancing by nperseg - noverlap (one gather), each segment is
detrended and multiplied by the window, and transformed by an FFT of length `nfft` (`fluxion.numpy.fft`). The STFT
keeps the transforms; the cross spectral density averages conj(X) Y over the segments (Welch's method: P. D.
Welch, "The use of fast Fourier transform for the estimation of power spectra", IEEE Trans. Audio
Electroacoust. 15(2), 1967); `istft` inverts the STFT by windowed overlap-add (D. W. Griffin and J. S. Lim, IEEE
Trans. ASSP 32(2), 1984). The conventions (scalings, boundary extensions, padding, frequencies and times) are
SciPy's. Window names are turned into sample values by SciPy's `get_window` at trace time (as JAX does); the
computation itself is differentiable, jittable and vmappable.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ... import numpy as jnp
from .. import dtypes
from ..numpy.util import canonicalize_axis
from .signal import detrend as _detrend


def _static_int(name: str, fn: str, value: Any) -> int:
    try:
        return int(value)
    except Exception as e:  # a traced value
        raise TypeError(f"{fn}: {name} must be a static integer, got {value!r}") from e


def _window(fn: str, window: Any, nperseg: int | None, input_length: int, dtype) -> tuple[Any, int]:
    """The window's samples and the segment length (SciPy's rules: a named window defaults to 256 samples and is
    shortened to the signal; an array window fixes the length)."""
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        if nperseg > input_length:
            warnings.warn(f"{fn}: nperseg = {nperseg} is greater than input length = {input_length}, using "
                          f"nperseg = {input_length}", stacklevel=3)
            nperseg = input_length
        import scipy.signal  # a dependency of fluxion; only the window's samples come from it
        return jnp.asarray(scipy.signal.get_window(window, nperseg)).astype(dtype), nperseg
    win = jnp.asarray(window)
    if win.ndim != 1:
        raise ValueError(f"{fn}: window must be 1-D, got shape {win.shape}")
    if input_length < win.shape[0]:
        raise ValueError(f"{fn}: window is longer than the input ({win.shape[0]} > {input_length})")
    if nperseg is None:
        nperseg = win.shape[0]
    elif nperseg != win.shape[0]:
        raise ValueError(f"{fn}: the window's length {win.shape[0]} must equal nperseg = {nperseg}")
    return win.astype(np.result_type(win.dtype, dtype)), nperseg


def _odd_extension(x, n: int):
    """Point reflection about each end sample: 2 x[0] - x[n:0:-1] | x | 2 x[-1] - x[-2:-n-2:-1]."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"the odd extension needs n = {n} <= x.shape[-1] - 1 = {x.shape[-1] - 1}")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -n - 1:-1], -1)
    return jnp.concatenate([left, x, right], axis=-1)


def _pad_last(mode: str, **kw) -> Callable:
    def pad(x, n):
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **kw)
    return pad


_BOUNDARIES: dict[Any, Callable] = {
    "even": _pad_last("reflect"),
    "odd": _odd_extension,
    "constant": _pad_last("edge"),
    "zeros": _pad_last("constant"),
    None: lambda x, n: x,
}


def _segments(x, nperseg: int, step: int):
    """x[..., L] -> [..., nseg, nperseg], the segments starting at 0, step, 2 step, ... that fit."""
    starts = np.arange(0, x.shape[-1] - nperseg + 1, step)
    return x[..., starts[:, None] + np.arange(nperseg)[None, :]]


def _detrender(fn: str, detrend: Any) -> Callable:
    if isinstance(detrend, str):
        return lambda d: _detrend(d, axis=-1, type=detrend)
    if callable(detrend):
        return detrend
    if not detrend:
        return lambda d: d
    raise ValueError(f"{fn}: detrend must be a trend type, a function or False, got {detrend!r}")


def _spectral(fn: str, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, mode,
              boundary=None, padded=False):
    """SciPy's `_spectral_helper`: (frequencies, segment times, per-segment result with the segments last)."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"{fn}: unknown boundary option {boundary!r}; the options are "
                         f"{[b for b in _BOUNDARIES]}")
    x = jnp.asarray(x)
    if y is None:
        arrays = [x]
    else:
        y = jnp.asarray(y)
        if x.ndim != y.ndim:
            raise ValueError(f"{fn}: x and y must have the same rank, got shapes {x.shape} and {y.shape}")
        arrays = [x, y]
    dt = jnp.result_type(*arrays)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float_dtype()
    arrays = [a.astype(dt) for a in arrays]
    out_dtype = np.result_type(dt, np.complex64)
    freq_dtype = np.finfo(out_dtype).dtype
    axis = canonicalize_axis(_static_int("axis", fn, axis), arrays[0].ndim)
    arrays = [jnp.moveaxis(a, axis, -1) for a in arrays]
    if len(arrays) == 2 and arrays[0].shape[-1] != arrays[1].shape[-1]:  # the shorter one is zero-padded
        n = max(a.shape[-1] for a in arrays)
        arrays = [jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, n - a.shape[-1])]) for a in arrays]
    if nperseg is not None:
        nperseg = _static_int("nperseg", fn, nperseg)
        if nperseg < 1:
            raise ValueError(f"{fn}: nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _window(fn, window, nperseg, arrays[0].shape[-1], dt)
    noverlap = nperseg // 2 if noverlap is None else _static_int("noverlap", fn, noverlap)
    nfft = nperseg if nfft is None else _static_int("nfft", fn, nfft)
    if nfft < nperseg:
        raise ValueError(f"{fn}: nfft must be at least nperseg, got nfft = {nfft} and nperseg = {nperseg}")
    if noverlap >= nperseg:
        raise ValueError(f"{fn}: noverlap must be less than nperseg, got {noverlap} and {nperseg}")
    step = nperseg - noverlap
    arrays = [_BOUNDARIES[boundary](a, nperseg // 2) for a in arrays]
    if padded:  # zero-pad so the segments cover the whole signal
        extra = (-(arrays[0].shape[-1] - nperseg) % step) % nperseg
        arrays = [jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, extra)]) for a in arrays]
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / jnp.sum(win) ** 2
    else:
        raise ValueError(f"{fn}: scaling must be 'density' or 'spectrum', got {scaling!r}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    onesided = return_onesided
    if onesided and any(dtypes.is_complex(a.dtype) for a in arrays):
        warnings.warn(f"{fn}: the input is complex, switching to return_onesided=False", stacklevel=3)
        onesided = False
    trend = _detrender(fn, detrend)

    def transform(a):
        segs = trend(_segments(a, nperseg, step)) * win
        if onesided:
            return jnp.fft.rfft(jnp.real(segs), n=nfft)
        return jnp.fft.fft(segs, n=nfft)

    spectra = [transform(a) for a in arrays]
    if len(spectra) == 2:
        result = jnp.conj(spectra[0]) * spectra[1]
    elif mode == "psd":
        result = jnp.conj(spectra[0]) * spectra[0]
    else:
        result = spectra[0]
    result = result * scale
    if onesided and mode == "psd":  # fold the negative frequencies onto the positive ones (not DC or Nyquist)
        stop = nfft // 2 + (nfft % 2)
        result = jnp.concatenate([result[..., :1], 2 * result[..., 1:stop], result[..., stop:]], axis=-1)
    freqs = (jnp.fft.rfftfreq(nfft, 1 / fs) if onesided else jnp.fft.fftfreq(nfft, 1 / fs)).astype(freq_dtype)
    length = arrays[0].shape[-1]
    time = jnp.arange(nperseg / 2, length - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(out_dtype)
    if y is None and mode != "stft":
        result = jnp.real(result)
    # [..., nseg, nfreq] -> frequencies where `axis` was, segments last (SciPy's layout).
    result = jnp.moveaxis(jnp.swapaxes(result, -1, -2), -2, axis) if result.ndim > 1 else result
    return freqs, time, result


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend: Any = False, return_onesided: bool = True, boundary: str | None = "zeros",
         padded: bool = True, axis: int = -1) -> tuple[Any, Any, Any]:
    """The short-time Fourier transform of `x` along `axis`.

    Segments of `nperseg` samples overlapping by `noverlap` (default nperseg // 2) are windowed (a window name for
    SciPy's `get_window`, or the samples) and transformed with `nfft` points (default nperseg), scaled by
    1 / sum(window). `boundary` extends the signal by nperseg // 2 samples at both ends ("zeros", "even", "odd",
    "constant" or None) and `padded` zero-pads the end to a whole number of segments.

    Returns:
      (f, t, Zxx): the frequencies (nfft // 2 + 1 of them, or nfft when two-sided), the segment centre times, and
      the complex transform with `axis` replaced by the frequencies and the segments as a new last axis.

    Raises:
      ValueError: for nperseg < 1, noverlap >= nperseg, nfft < nperseg, an unknown boundary or a bad window.
      TypeError: for traced segment parameters.
    """
    return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, "spectrum",
                     axis, "stft", boundary, padded)


def _median_bias(n: int) -> float:
    """The ratio of the median to the mean of n chi-squared(2) periodogram values (SciPy's `_median_bias`)."""
    k = 2 * np.arange(1, (n - 1) // 2 + 1)
    return 1 + float(np.sum(1.0 / (k + 1) - 1.0 / k))


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """The cross power spectral density P_xy of `x` and `y` by Welch's method: the average over segments of
    conj(X) Y, with the segments as in `stft` (default nperseg 256, shortened to the signal) but detrended
    (`detrend`: "constant", "linear", a function or False) and scaled as a "density" (per unit frequency, by
    1 / (fs sum(w^2))) or a "spectrum" (1 / sum(w)^2); one-sided results double the folded frequencies.

    `y=None` gives the power spectral density of `x` (real). `average` is "mean" or "median" (bias-corrected, real
    and imaginary parts separately). Returns (f, Pxy), with `axis` replaced by the frequencies.

    Raises:
      ValueError: for x and y of different ranks, an unknown scaling or average, and the `stft` errors.
    """
    if average not in ("mean", "median"):
        raise ValueError(f"csd: average must be 'mean' or 'median', got {average!r}")
    freqs, _, pxy = _spectral("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
                              axis, "psd")
    if y is not None:
        pxy = pxy.astype(np.result_type(pxy.dtype, np.complex64))
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1])
                if dtypes.is_complex(pxy.dtype):
                    med = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy), axis=-1)
                else:
                    med = jnp.median(pxy, axis=-1)
                pxy = (med / bias).astype(pxy.dtype)
            else:
                pxy = jnp.mean(pxy, axis=-1)
        else:
            pxy = pxy[..., 0]
    return freqs, pxy


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, detrend: Any = "constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean") -> tuple[Any, Any]:
    """The power spectral density of `x` by Welch's method: `csd(x, None, ...)`, real. Returns (f, Pxx)."""
    return csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend,
               return_onesided=return_onesided, scaling=scaling, axis=axis, average=average)


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2) -> tuple[Any, Any]:
    """The inverse of `stft` by windowed overlap-add: each segment's inverse FFT (scaled back by sum(window)) is
    multiplied by the window and added at its place, and the sum is divided by the overlap-added squared window
    (where that exceeds 1e-10). With `boundary` the nperseg // 2 samples `stft`'s extension added are removed.
    `input_onesided` says Zxx holds a real transform's nonnegative frequencies (the result is then real).

    Returns:
      (t, x): the sample times and the signal, with the frequency and time axes of Zxx replaced by one time axis.
      As in SciPy and JAX, `t` has x.shape[0] entries, which for a batched signal with time last is the batch size.

    Raises:
      ValueError: for Zxx below 2-D, equal time and frequency axes, nperseg < 1, noverlap >= nperseg,
      nfft < nperseg, or a window of the wrong length.
    """
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"istft: Zxx must be at least 2-D, got shape {Zxx.shape}")
    time_axis = canonicalize_axis(time_axis, Zxx.ndim)
    freq_axis = canonicalize_axis(freq_axis, Zxx.ndim)
    if time_axis == freq_axis:
        raise ValueError("istft: time_axis and freq_axis must differ")
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    if nperseg is None:
        nperseg = n_default
    nperseg = _static_int("nperseg", "istft", nperseg)
    if nperseg < 1:
        raise ValueError(f"istft: nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = nperseg if (input_onesided and nperseg == n_default + 1) else n_default
    nfft = _static_int("nfft", "istft", nfft)
    if nfft < nperseg:
        raise ValueError(f"istft: nfft must be at least nperseg, got nfft = {nfft} and nperseg = {nperseg}")
    noverlap = nperseg // 2 if noverlap is None else _static_int("noverlap", "istft", noverlap)
    if noverlap >= nperseg:
        raise ValueError(f"istft: noverlap must be less than nperseg, got {noverlap} and {nperseg}")
    step = nperseg - noverlap
    if not dtypes.is_complex(Zxx.dtype):
        Zxx = Zxx.astype(np.result_type(Zxx.dtype if dtypes.is_inexact(Zxx.dtype) else
                                        dtypes.default_float_dtype(), np.complex64))
    real_dtype = np.finfo(Zxx.dtype).dtype
    # [..., freq, time] -> [..., time (segments), freq]
    Zxx = jnp.moveaxis(Zxx, (freq_axis, time_axis), (-1, -2))
    frames = (jnp.fft.irfft(Zxx, n=nfft) if input_onesided else jnp.fft.ifft(Zxx, n=nfft))[..., :nperseg]
    if isinstance(window, (str, tuple)):
        import scipy.signal
        win = jnp.asarray(scipy.signal.get_window(window, nperseg)).astype(real_dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1 or win.shape[0] != nperseg:
            raise ValueError(f"istft: window must be 1-D of length nperseg = {nperseg}, got shape {win.shape}")
    frames = frames * jnp.sum(win) * win
    nseg = frames.shape[-2]
    length = nperseg + (nseg - 1) * step
    index = np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]
    x = jnp.zeros(frames.shape[:-2] + (length,), frames.dtype).at[..., index].add(frames)
    norm = jnp.zeros((length,), win.dtype).at[index].add(jnp.broadcast_to(win * jnp.conj(win), index.shape))
    x = x / jnp.where(jnp.abs(norm) > 1e-10, norm, 1.0)
    if boundary and nperseg // 2 > 0:
        x = x[..., nperseg // 2:length - nperseg // 2]
    if input_onesided:
        x = jnp.real(x)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:  # the time axis goes where SciPy puts it
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    # SciPy and JAX count the times along the result's first axis, which is the time axis only for a 1-D
    # signal or a leading time axis; kept for identical results.
    t = jnp.arange(x.shape[0], dtype=real_dtype) / fs
    return t, x
