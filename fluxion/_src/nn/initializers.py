"""Parameter initializers (mirrors `jax.nn.initializers`).

An initializer is a function `init(key, shape, dtype=None) -> array`. The factories below build them; the
values for a given key are JAX's bit for bit, because each one draws with `fluxion.random` and then scales with
the same separately rounded operations JAX performs (e.g. the variance is `scale / fan` rounded to `dtype`,
its square root divided by the standard deviation of a standard normal truncated to [-2, 2]).
"""

from __future__ import annotations

import math
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

import numpy as np

from ... import numpy as jnp
from ... import random
from .. import dtypes

# Standard deviation of a standard normal truncated to (-2, 2) (real case), and of the modulus construction used
# for complex dtypes: dividing by it makes the truncated draws have unit variance.
_TRUNC_STD_REAL = .87962566103423978
_TRUNC_STD_COMPLEX = .95311164380491208


@runtime_checkable
class Initializer(Protocol):
    """The type of initializers: `init(key, shape, dtype=None) -> Array`."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
        raise NotImplementedError


def _dtype(dtype: Any) -> np.dtype:
    return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)


def _shape(shape: Any) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"initializer shape must be a sequence of integers, got {shape!r}") from None


def zeros(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    """An array of zeros (the key is ignored)."""
    return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    """An array of ones (the key is ignored)."""
    return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """An initializer returning arrays filled with `value`."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return jnp.full(_shape(shape), value, dtype=_dtype(dtype))
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer drawing uniformly from [0, scale)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dt = _dtype(dtype)
        return random.uniform(key, _shape(shape), dt) * jnp.array(scale, dt)
    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer drawing from N(0, stddev^2)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dt = _dtype(dtype)
        return random.normal(key, _shape(shape), dt) * jnp.array(stddev, dt)
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0, upper: Any = 2.0) -> Initializer:
    """An initializer drawing stddev * (standard normal truncated to (lower, upper))."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dt) * jnp.array(stddev, dt)
    return init


def _axis_sizes(shape: tuple, axes: int | Sequence[int]) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def compute_fans(shape: Sequence[int], in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
    """(fan_in, fan_out) of a weight shape: in/out sizes times the receptive field (the remaining dims).

    Raises:
      ValueError: a shape of rank < 2 with the default `in_axis`.
    """
    shape = tuple(shape)
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with "
                         "default in_axis. Must be at least 2D or specify in_axis explicitly.")
    in_size = _axis_sizes(shape, in_axis)
    out_size = _axis_sizes(shape, out_axis)
    batch_size = _axis_sizes(shape, batch_axis)
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


def _complex_uniform(key: Any, shape: tuple, dt: np.dtype) -> Any:
    """Uniform on the unit disk: radius sqrt(2 u) (unit variance), uniform angle."""
    key_r, key_theta = random.split(key)
    real_dt = np.array(0, dt).real.dtype
    r = jnp.sqrt(2 * random.uniform(key_r, shape, real_dt)).astype(dt)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dt).astype(dt)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: Any, shape: tuple, dt: np.dtype) -> Any:
    """Complex normal with modulus truncated to `upper`, via the inverse CDF of the modulus."""
    key_r, key_theta = random.split(key)
    real_dt = np.array(0, dt).real.dtype
    t = (1 - jnp.exp(jnp.array(-(upper ** 2), dt))) * random.uniform(key_r, shape, real_dt).astype(dt)
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dt).astype(dt)
    return r * jnp.exp(1j * theta)


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale: Any,
                     mode: Literal["fan_in", "fan_out", "fan_avg", "fan_geo_avg"],
                     distribution: Literal["truncated_normal", "normal", "uniform"],
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """An initializer whose draws have variance `scale / n`, n chosen by `mode` from the weight's fans.

    Args:
      scale: the variance scale.
      mode: "fan_in", "fan_out", "fan_avg" ((in + out) / 2) or "fan_geo_avg" (sqrt(in * out)).
      distribution: "truncated_normal" (in (-2, 2) before scaling, rescaled to the variance), "normal" or
        "uniform" (on (-a, a) with a = sqrt(3 variance)).
      in_axis, out_axis: axes (or sequences of axes) of the input and output dimensions. Default -2 and -1.
      batch_axis: axes excluded from the fans. Default ().
      dtype: default dtype of the initializer.

    Returns:
      An initializer `init(key, shape, dtype=dtype)`.

    Raises:
      ValueError: unknown `mode` or `distribution` (when the initializer is called, as in JAX).
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape(shape)
        dt = _dtype(dtype)
        fan_in, fan_out = compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode!r} (expected one of {_MODES})")
        variance = jnp.array(scale / denominator, dtype=dt)
        if distribution == "truncated_normal":
            if dtypes.is_float(dt):
                stddev = jnp.sqrt(variance) / jnp.array(_TRUNC_STD_REAL, dt)
                return random.truncated_normal(key, -2, 2, shape, dt) * stddev
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNC_STD_COMPLEX, dt)
            return _complex_truncated_normal(key, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(variance)
        if distribution == "uniform":
            if dtypes.is_float(dt):
                return random.uniform(key, shape, dt, -1) * jnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dt) * jnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution!r} (expected one "
                         f"of {_DISTRIBUTIONS})")
    return init


def glorot_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                   batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_avg", "uniform") (Glorot & Bengio 2010)."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_avg", "truncated_normal") (Glorot & Bengio 2010)."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_in", "uniform") (LeCun et al. 1998)."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_in", "truncated_normal") (LeCun et al. 1998)."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
               batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """variance_scaling(2.0, "fan_in", "uniform") (He et al. 2015)."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
              batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """variance_scaling(2.0, "fan_in", "truncated_normal") (He et al. 2015)."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """An initializer of (scaled) matrices with orthonormal columns or rows, reshaped to the weight's shape.

    The weight is viewed as a (prod(other dims), shape[column_axis]) matrix drawn with `random.orthogonal`.

    Raises:
      ValueError: a shape of rank < 2 (when called).
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2D shape, got {shape}")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dtype=dt)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        q = jnp.reshape(q, tuple(np.delete(np.array(shape), column_axis)) + (n_cols,))
        q = jnp.moveaxis(q, -1, column_axis)
        return jnp.array(scale, dt) * q
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """An initializer for 3-5D convolution kernels: zero except an orthogonal matrix at the spatial center
    (Xiao et al. 2018, "Dynamical isometry and a mean field theory of CNNs").

    Raises:
      ValueError: rank not in 3..5, or fewer output than input channels (when called).
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"`fan_in` must be less or equal than `fan_out`, got shape {shape}")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        center = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype=dt).at[center + (Ellipsis,)].set(ortho)
    return init
