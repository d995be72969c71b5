"""`fluxion.scipy.signal`: convolution and correlation (mirrors `jax.scipy.signal`'s convolve family).

Direct convolution binds `lax.conv_general_dilated` once, with the arrays as a single-batch, single-channel
N-d image and kernel; `fftconvolve` multiplies discrete Fourier transforms (`fluxion.numpy.fft`). Modes follow
SciPy: "full" (every overlap), "same" (centred, the size of `in1`) and "valid" (complete overlaps only).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..numpy.util import broadcast_shapes, canonicalize_axes

_MODES = ("full", "same", "valid")
_SPATIAL = "DHWXYZ"  # spatial dimension letters for the convolution spec (distinct from N, C, O, I)


def _inexact_pair(name: str, in1: Any, in2: Any):
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    dt = jnp.result_type(in1, in2)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float_dtype()
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality, got {in1.ndim} and {in2.ndim}")
    return in1.astype(dt), in2.astype(dt)


def _check_mode(name: str, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")


def _centred(full, shape: Sequence[int]):
    """The central `shape` part of `full` (SciPy's convention: the extra element, if any, is dropped at the end)."""
    starts = [(f - s) // 2 for f, s in zip(full.shape, shape)]
    return lax.slice(full, starts, [st + s for st, s in zip(starts, shape)])


def _swap_for_valid(name, in1, in2, mode):
    """In "valid" mode one array must be at least as large as the other in every dimension; SciPy swaps them
    when in2 is the larger one. Returns (in1, in2, swapped)."""
    if mode != "valid":
        return in1, in2, False
    if all(a >= b for a, b in zip(in1.shape, in2.shape)):
        return in1, in2, False
    if all(a <= b for a, b in zip(in1.shape, in2.shape)):
        return in2, in1, True
    raise ValueError(f"{name}: in 'valid' mode one input must be at least as large as the other in every "
                     f"dimension, got shapes {in1.shape} and {in2.shape}")


def _direct_convolve(in1, in2, mode, precision):
    """N-d convolution of two same-rank arrays by one conv_general_dilated (a correlation with the flipped
    kernel)."""
    nd = in1.ndim
    if nd == 0:
        return in1 * in2
    if nd > len(_SPATIAL):
        raise ValueError(f"convolve: at most {len(_SPATIAL)} dimensions are supported, got {nd}")
    kernel = jnp.flip(in2)  # conv_general_dilated correlates; convolution flips the kernel (and never conjugates)
    pads = [(k - 1, k - 1) for k in in2.shape] if mode != "valid" else [(0, 0)] * nd
    letters = _SPATIAL[:nd]
    dn = ("NC" + letters, "OI" + letters, "NC" + letters)
    out = lax.conv_general_dilated(in1[None, None], kernel[None, None], (1,) * nd, pads, dimension_numbers=dn,
                                   precision=precision)[0, 0]
    if mode == "same":
        out = _centred(out, in1.shape)
    return out


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None) -> Any:
    """The N-d convolution of `in1` and `in2` (same number of dimensions) in `mode` "full", "same" or "valid".

    `method` "direct" and "auto" use the direct convolution; "fft" uses `fftconvolve`. Integer inputs give the
    default float dtype (as JAX).

    Raises:
      ValueError: for an unknown mode or method, different ranks, or "valid" shapes where neither input
      contains the other.
    """
    _check_mode("convolve", mode)
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"convolve: method must be 'auto', 'direct' or 'fft', got {method!r}")
    in1, in2 = _inexact_pair("convolve", in1, in2)
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    a, b, _ = _swap_for_valid("convolve", in1, in2, mode)  # convolution commutes: no fix-up after a swap
    return _direct_convolve(a, b, mode, precision)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None) -> Any:
    """The N-d cross-correlation z[k] = sum_l in1[l] conj(in2[l - k + (len(in2) - 1)]) (SciPy's definition), in
    `mode` "full", "same" or "valid"; see `convolve` for the arguments."""
    _check_mode("correlate", mode)
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"correlate: method must be 'auto', 'direct' or 'fft', got {method!r}")
    in1, in2 = _inexact_pair("correlate", in1, in2)
    a, b, swapped = _swap_for_valid("correlate", in1, in2, mode)
    kernel = jnp.conj(jnp.flip(b))
    out = fftconvolve(a, kernel, mode=mode) if method == "fft" else _direct_convolve(a, kernel, mode, precision)
    if swapped:  # correlate(b, a) is the reversed conjugate of correlate(a, b)
        out = jnp.conj(jnp.flip(out))
    return out


def _check_2d(name, in1, in2, boundary, fillvalue):
    if in1.ndim != 2 or in2.ndim != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs, got shapes {in1.shape} and {in2.shape}")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0,
               precision: Any = None) -> Any:
    """The 2-D convolution of two matrices (`convolve` restricted to 2-D).

    Raises:
      ValueError: for inputs that are not 2-D. NotImplementedError: for a boundary other than zero fill (as JAX).
    """
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode=mode, precision=precision)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0,
                precision: Any = None) -> Any:
    """The 2-D cross-correlation of two matrices (`correlate` restricted to 2-D); see `convolve2d`."""
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    return correlate(in1, in2, mode=mode, precision=precision)


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """The N-d convolution by FFT: the transforms of both inputs, zero-padded to the full output size along
    `axes` (default all), are multiplied and transformed back. Non-convolved axes broadcast. Real inputs use the
    real transforms and give a real result.

    Raises:
      ValueError: for an unknown mode, different ranks, or "valid" shapes where neither input contains the other
      along `axes`.
    """
    _check_mode("fftconvolve", mode)
    in1, in2 = _inexact_pair("fftconvolve", in1, in2)
    nd = in1.ndim
    if nd == 0:
        return in1 * in2
    axes = canonicalize_axes(axes, nd)
    other = [i for i in range(nd) if i not in axes]
    batch = broadcast_shapes(tuple(in1.shape[i] for i in other), tuple(in2.shape[i] for i in other))
    full_shape1, full_shape2 = list(in1.shape), list(in2.shape)
    for i, b in zip(other, batch):
        full_shape1[i] = full_shape2[i] = b
    in1, in2 = jnp.broadcast_to(in1, tuple(full_shape1)), jnp.broadcast_to(in2, tuple(full_shape2))
    if mode == "valid":
        bigger = all(in1.shape[i] >= in2.shape[i] for i in axes)
        smaller = all(in1.shape[i] <= in2.shape[i] for i in axes)
        if not (bigger or smaller):
            raise ValueError(f"fftconvolve: in 'valid' mode one input must be at least as large as the other along "
                             f"the convolved axes, got shapes {in1.shape} and {in2.shape}")
        if not bigger:
            in1, in2 = in2, in1
    sizes = [in1.shape[i] + in2.shape[i] - 1 for i in axes]
    if dtypes.is_complex(in1.dtype):
        prod = jnp.fft.fftn(in1, sizes, axes) * jnp.fft.fftn(in2, sizes, axes)
        full = jnp.fft.ifftn(prod, sizes, axes)
    else:
        prod = jnp.fft.rfftn(in1, sizes, axes) * jnp.fft.rfftn(in2, sizes, axes)
        full = jnp.fft.irfftn(prod, sizes, axes).astype(in1.dtype)
    if mode == "full":
        return full
    if mode == "same":
        target = [in1.shape[i] if i in axes else full.shape[i] for i in range(nd)]
    else:
        target = [in1.shape[i] - in2.shape[i] + 1 if i in axes else full.shape[i] for i in range(nd)]
    return _centred(full, target)


def detrend(data: Any, axis: int = -1, type: str = "linear", bp: Any = 0,  # noqa: A002
            overwrite_data: Any = None) -> Any:
    """Removes the mean ("constant") or the least-squares line ("linear") along `axis`; for "linear", each piece
    between the breakpoints `bp` (static indices along `axis`) gets its own line.

    Integer data gives the default float dtype.

    Raises:
      ValueError: for an unknown `type`, or a breakpoint outside [0, n].
    """
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError(f"detrend: trend type must be 'linear' or 'constant', got {type!r}")
    data = jnp.asarray(data)
    if not dtypes.is_inexact(data.dtype):
        data = data.astype(dtypes.default_float_dtype())
    if type in ("constant", "c"):
        return data - jnp.mean(data, axis=axis, keepdims=True)
    moved = jnp.moveaxis(data, axis, -1)
    n = moved.shape[-1]
    points = sorted({0, n, *[int(b) for b in np.atleast_1d(np.asarray(bp)).tolist()]})
    if points[0] < 0 or points[-1] > n:
        raise ValueError(f"detrend: breakpoints must lie in [0, {n}], got {bp!r}")
    pieces = []
    for lo, hi in zip(points[:-1], points[1:]):
        seg = moved[..., lo:hi]
        t = jnp.arange(hi - lo, dtype=seg.dtype)
        t_centred = t - jnp.mean(t)
        y_mean = jnp.mean(seg, axis=-1, keepdims=True)
        denom = jnp.sum(t_centred * t_centred)
        # A one-point piece has no slope: only its mean is removed.
        slope = jnp.sum(t_centred * (seg - y_mean), axis=-1, keepdims=True) / jnp.where(denom > 0, denom, 1)
        pieces.append(seg - y_mean - slope * t_centred)
    return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)
