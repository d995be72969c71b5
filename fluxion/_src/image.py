"""`fluxion.image` (mirrors `jax.image`): `resize` and `scale_and_translate` by separable resampling kernels.

Each resized dimension is a contraction with a weight matrix (output samples x input samples), so the result is
differentiable in the image and batches like any `dot`. Output sample `j` sits at input coordinate
`(j + 0.5 - translation) / scale - 0.5` (pixel centres at half-integers); a kernel centred there weighs the input
samples. With `antialias` and `scale < 1` the kernel is widened by `1 / scale` (a low-pass filter before
subsampling). Each output's weights are normalised to sum to 1, and outputs sampling outside the input get 0.
This is the scheme of TensorFlow's `ScaleAndTranslate` op, which `jax.image` follows.

Kernels: linear (triangle), cubic (Keys 1981, "Cubic convolution interpolation for digital image processing",
a = -0.5), Lanczos with 3 or 5 lobes (`sinc(x) sinc(x / a)`). `nearest` picks input sample
`floor((j + 0.5) * in / out)` instead of weighting. JAX's `cubic-pytorch` and `area` methods are not implemented
(they raise `NotImplementedError`).
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Sequence

import numpy as np

from . import core, dtypes
from .lax import elementwise as ew
from .numpy.indexing import take
from .numpy.linear import tensordot
from .numpy.shape import moveaxis
from .numpy.util import asarray_arg


class ResizeMethod(enum.Enum):
    """Resampling methods (the values are JAX's)."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5  # named for compatibility; resampling with it raises NotImplementedError
    AREA = 6  # likewise

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        try:
            return _NAMES[s.lower()]
        except KeyError:
            raise ValueError(f'Unknown resize method "{s}"') from None


_NAMES = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR, "bilinear": ResizeMethod.LINEAR,
          "trilinear": ResizeMethod.LINEAR, "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
          "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC, "bicubic": ResizeMethod.CUBIC,
          "tricubic": ResizeMethod.CUBIC, "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
          "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(x))


def _keys_cubic(a: float) -> Callable[[np.ndarray], np.ndarray]:
    def kernel(x):
        x = np.abs(x)
        near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return np.where(x <= 1.0, near, np.where(x < 2.0, far, 0.0))
    return kernel


def _lanczos(lobes: int) -> Callable[[np.ndarray], np.ndarray]:
    def kernel(x):
        return np.where(np.abs(x) < lobes, np.sinc(x) * np.sinc(x / lobes), 0.0)
    return kernel


_KERNELS = {ResizeMethod.LINEAR: _triangle, ResizeMethod.CUBIC: _keys_cubic(-0.5),
            ResizeMethod.LANCZOS3: _lanczos(3), ResizeMethod.LANCZOS5: _lanczos(5)}


def _weights(in_size: int, out_size: int, scale: float, translation: float, kernel, antialias: bool,
             dtype) -> np.ndarray:
    """The (in_size, out_size) resampling matrix of one dimension, computed in float64 on the host."""
    inv_scale = 1.0 / scale
    widen = max(inv_scale, 1.0) if antialias else 1.0
    sample = (np.arange(out_size) + 0.5 - translation) * inv_scale - 0.5
    w = kernel(np.abs(sample[None, :] - np.arange(in_size)[:, None]) / widen)
    total = w.sum(axis=0, keepdims=True)
    w = np.where(np.abs(total) > 1000.0 * np.finfo(np.float32).eps, w / np.where(total != 0, total, 1.0), 0.0)
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return np.where(inside[None, :], w, 0.0).astype(dtype)


def _check(image, shape, name: str):
    image = asarray_arg(image, f"jax.image.{name}")
    shape = tuple(int(d) for d in shape)
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have length equal to the number of dimensions of x;  {shape} vs {image.shape}")
    return image, shape


def _method(method) -> ResizeMethod:
    if isinstance(method, ResizeMethod):
        return method
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    raise TypeError(f"method must be a ResizeMethod or its name, got {method!r}")


def _compute_dtype(image) -> np.dtype:
    dt = core.get_aval(image).dtype
    return dt if dtypes.is_inexact(dt) else dtypes.canonicalize_dtype(dtypes.default_float_dtype())


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int], scale: Any, translation: Any,
                        method="linear", antialias: bool = True, precision=None) -> Any:
    """Resamples `image` along `spatial_dims` to `shape`: output sample `j` of dimension `d` sits at input coordinate
    `(j + 0.5 - translation[d]) / scale[d] - 0.5` (see the module docstring).

    `scale` and `translation` must be concrete (the weight matrices are built on the host). `precision` is accepted
    for compatibility (fluxion contracts at the input's precision). `nearest` is not a kernel method here, as in JAX.

    Raises:
      ValueError: `shape` of the wrong length; unknown or unsupported method; non-positive scale.
    """
    image, shape = _check(image, shape, "scale_and_translate")
    kind = _method(method)
    if kind in (ResizeMethod.CUBIC_PYTORCH, ResizeMethod.AREA):
        raise NotImplementedError(f"fluxion.image does not implement the {kind.name} method (see the README's "
                                  "table of missing names)")
    if kind not in _KERNELS:
        raise ValueError(f"scale_and_translate does not support method {kind.name}")
    spatial_dims = [int(d) % image.ndim for d in spatial_dims]
    scale = np.asarray(core.concrete_value(asarray_arg(scale)), np.float64).reshape(-1)
    translation = np.asarray(core.concrete_value(asarray_arg(translation)), np.float64).reshape(-1)
    if np.any(scale <= 0):
        raise ValueError(f"scale_and_translate: scale must be positive, got {scale}")
    dt = _compute_dtype(image)
    out = image if core.get_aval(image).dtype == dt else ew.convert_element_type(image, dt)
    for d, s, t in zip(spatial_dims, scale, translation):
        w = _weights(image.shape[d], shape[d], float(s), float(t), _KERNELS[kind], antialias, dt)
        out = tensordot(out, core.Array(w), axes=((d,), (0,)))
        out = moveaxis(out, -1, d)
    return out


def resize(image: Any, shape: Sequence[int], method="linear", antialias: bool = True, precision=None) -> Any:
    """`image` resampled to `shape` (mirrors `jax.image.resize`): every dimension whose size changes is resampled
    with `method` (`ResizeMethod` or its name: nearest, linear/bilinear/trilinear, cubic/bicubic/tricubic,
    lanczos3, lanczos5). Integer images are resampled in the default float type.

    Raises:
      ValueError: `shape` has the wrong length, or the method is unknown.
      NotImplementedError: `cubic-pytorch` and `area`.
    """
    image, shape = _check(image, shape, "resize")
    kind = _method(method)
    if kind is ResizeMethod.NEAREST:
        out = image
        for d, (n, m) in enumerate(zip(image.shape, shape)):
            if n != m:
                idx = np.floor((np.arange(m) + 0.5) * (n / m)).astype(np.int32)
                out = take(out, core.Array(np.minimum(idx, n - 1)), axis=d)
        return out
    dims = [d for d, (n, m) in enumerate(zip(image.shape, shape)) if n != m]
    if not dims:
        return image if dtypes.is_inexact(core.get_aval(image).dtype) else \
            ew.convert_element_type(image, _compute_dtype(image))
    scale = [shape[d] / image.shape[d] for d in dims]
    return scale_and_translate(image, shape, dims, scale, [0.0] * len(dims), kind, antialias, precision)


__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
