"""Parameter initializers (`hk.initializers`): callables `init(shape, dtype) -> array`.

Random initializers draw their key with `hk.next_rng_key()` and use the same `random` calls as Haiku, so a given
key produces the same values. Constants and formulas are those documented by Haiku:
`VarianceScaling` with a truncated normal divides the standard deviation by 0.87962566103423978 (the standard
deviation of a unit normal truncated to [-2, 2]); fans are computed as in Haiku (`_compute_fans` below).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax, random

from ._base import next_rng_key

__all__ = ["Initializer", "Constant", "RandomNormal", "TruncatedNormal", "RandomUniform", "VarianceScaling",
           "UniformScaling", "Orthogonal", "Identity"]

Initializer = Callable[[Sequence[int], Any], Any]

# Standard deviation of a unit normal truncated to [-2, 2].
_TRUNCATED_STDDEV = .87962566103423978


def _compute_fans(shape: Sequence[int], fan_in_axes: Sequence[int] | None = None) -> tuple[float, float]:
    """(fan_in, fan_out): the last two axes are (in, out), earlier axes form the receptive field."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    if fan_in_axes is not None:
        fan_in = np.prod([shape[i] for i in fan_in_axes])
        fan_out = np.prod([s for i, s in enumerate(shape) if i not in fan_in_axes])
        return fan_in, fan_out
    receptive_field = np.prod(shape[:-2])
    return shape[-2] * receptive_field, shape[-1] * receptive_field


class Constant:
    """Fills with `constant` (broadcast to the shape, cast to the dtype)."""

    def __init__(self, constant: Any):
        self.constant = constant

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        return jnp.broadcast_to(jnp.asarray(self.constant), tuple(shape)).astype(dtype)


class RandomNormal:
    """`mean + stddev * N(0, 1)` samples."""

    def __init__(self, stddev: float = 1., mean: float = 0.):
        self.stddev = stddev
        self.mean = mean

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        m = lax.convert_element_type(self.mean, dtype)
        s = lax.convert_element_type(self.stddev, dtype)
        return m + s * random.normal(next_rng_key(), tuple(shape), dtype)


class TruncatedNormal:
    """`mean + stddev * x` with `x` a unit normal truncated to `[lower, upper]` (default [-2, 2])."""

    def __init__(self, stddev: float = 1., mean: float = 0., lower: float = -2., upper: float = 2.):
        self.stddev = stddev
        self.mean = mean
        self.lower = lower
        self.upper = upper

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        real_dtype = jnp.finfo(dtype).dtype
        m = lax.convert_element_type(self.mean, dtype)
        s = lax.convert_element_type(self.stddev, real_dtype)
        is_complex = jnp.issubdtype(dtype, jnp.complexfloating)
        shape = tuple(shape)
        if is_complex:
            shape = (2,) + shape
        unscaled = random.truncated_normal(next_rng_key(), self.lower, self.upper, shape, real_dtype)
        if is_complex:
            unscaled = unscaled[0] + 1j * unscaled[1]
        return s * unscaled + m


class RandomUniform:
    """Uniform samples in `[minval, maxval)`."""

    def __init__(self, minval: float = 0., maxval: float = 1.):
        self.minval = minval
        self.maxval = maxval

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        return random.uniform(next_rng_key(), tuple(shape), dtype, self.minval, self.maxval)


class VarianceScaling:
    """Samples with variance `scale / n`, `n` the fan-in, fan-out or their mean (`mode`).

    Args:
        scale: positive scale.
        mode: "fan_in", "fan_out" or "fan_avg".
        distribution: "truncated_normal", "normal" or "uniform".
        fan_in_axes: axes counted as fan-in (default: all but the last).

    Raises:
        ValueError: negative `scale`, unknown `mode` or `distribution`.
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 fan_in_axes: Sequence[int] | None = None):
        if scale < 0.0:
            raise ValueError("`scale` must be a positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Invalid `mode` argument: {mode!r}")
        distribution = distribution.lower()
        if distribution not in {"normal", "truncated_normal", "uniform"}:
            raise ValueError(f"Invalid `distribution` argument: {distribution!r}")
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.fan_in_axes = fan_in_axes

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        scale = self.scale
        fan_in, fan_out = _compute_fans(shape, self.fan_in_axes)
        if self.mode == "fan_in":
            scale /= max(1.0, fan_in)
        elif self.mode == "fan_out":
            scale /= max(1.0, fan_out)
        else:
            scale /= max(1.0, (fan_in + fan_out) / 2.0)
        if self.distribution == "truncated_normal":
            # Dividing by a dtype-typed constant reproduces Haiku's rounding of the stddev exactly.
            stddev = np.sqrt(scale) / np.asarray(_TRUNCATED_STDDEV, dtype=np.dtype(dtype))
            return TruncatedNormal(stddev=stddev)(shape, dtype)
        if self.distribution == "normal":
            return RandomNormal(stddev=np.sqrt(scale))(shape, dtype)
        limit = np.sqrt(3.0 * scale)
        return RandomUniform(minval=-limit, maxval=limit)(shape, dtype)


class UniformScaling:
    """Uniform in `[-m, m]`, `m = scale * sqrt(3 / input_size)`, input_size the product of all but the last axis."""

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        input_size = np.prod(shape[:-1])
        max_val = np.sqrt(3 / input_size) * self.scale
        return RandomUniform(-max_val, max_val)(shape, dtype)


class Orthogonal:
    """A (semi-)orthogonal matrix along `axis` times `scale`, from the QR decomposition of a normal sample
    (signs fixed by the diagonal of R, as in Saxe et al. 2014 / Haiku).

    Raises:
        ValueError: shapes of rank < 2.
    """

    def __init__(self, scale: float = 1.0, axis: int = -1):
        self.scale = scale
        self.axis = axis

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        if len(shape) < 2:
            raise ValueError("Orthogonal initializer requires at least a 2D shape.")
        n_rows = shape[self.axis]
        n_cols = int(np.prod(shape)) // n_rows
        matrix_shape = (n_rows, n_cols) if n_rows > n_cols else (n_cols, n_rows)
        sample = random.normal(next_rng_key(), matrix_shape, dtype)
        q, r = jnp.linalg.qr(sample)
        q = q * jnp.sign(jnp.diag(r))
        if n_rows < n_cols:
            q = q.T
        q = jnp.reshape(q, (n_rows,) + tuple(np.delete(np.asarray(shape), self.axis)))
        q = jnp.moveaxis(q, 0, self.axis)
        return lax.convert_element_type(self.scale, dtype) * q


class Identity:
    """`gain` times the identity on the last two axes (broadcast over leading axes).

    Raises:
        ValueError: shapes of rank < 2.
    """

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def __call__(self, shape: Sequence[int], dtype: Any) -> Any:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("Identity initializer requires at least a 2D shape.")
        eye = jnp.eye(shape[-2], shape[-1], dtype=dtype)
        if eye.shape != shape:
            eye = jnp.broadcast_to(eye, shape)
        return lax.convert_element_type(self.gain, dtype) * eye
