"""Samplers: turn a key's random bits into draws from common distributions (mirrors `jax.random`).

Every sampler follows the recipe JAX uses, operation for operation, so that the same key gives the same values
bit for bit (in both counter layouts, see `prng.py`). The recipes are facts about JAX's output, re-derived and
checked against it:

* uniform floats: the top `nmant` bits of a draw become the mantissa of a float in [1, 2) (exponent of 1.0),
  minus 1, scaled by `maxval - minval` (one fused multiply-add), plus `minval`, floored at `minval`. 16-bit
  floats draw 16 bits (float16) or 8 bits (bfloat16: fewer than 8 mantissa bits).
* normal: sqrt(2) * erf_inv(u), u uniform in [nextafter(-1, 0), 1).
* randint: two draws of the dtype's width, combined modulo the span as (hi mod s) * (2^n mod s) + (lo mod s).
* permutation: stable sorts by fresh 32-bit keys, ceil(3 ln(n) / ln(2^32 - 1)) rounds.

Only `fluxion.lax`/`fluxion.numpy` operations are used, so every sampler traces under jit and batches under vmap.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from ... import numpy as jnp
from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from . import prng
from ..lax.mul_add import mul_add
from .prng import canonical_shape, check_key

_UINT_BY_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


# --------------------------------------------------------------------------------------------------------------
# Argument helpers
# --------------------------------------------------------------------------------------------------------------

def _float_dtype(name: str, dtype: Any, allow_complex: bool = False) -> np.dtype:
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if not (dtypes.is_float(dt) or (allow_complex and dtypes.is_complex(dt))):
        kind = "a float or complex" if allow_complex else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {kind} dtype, got {dt.name}")
    return dt


def _int_dtype(name: str, dtype: Any) -> np.dtype:
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if not dtypes.is_integer(dt):
        raise TypeError(f"{name} only accepts integer dtypes, got {dt.name}")
    return dt


def _asarray(x: Any) -> Any:
    return x if isinstance(x, (Array, Tracer)) else jnp.asarray(x)


def _const(value: Any, dtype: Any) -> Array:
    return core.Array(np.asarray(value, dtype))


def _broadcast_param(name: str, x: Any, shape: tuple) -> Any:
    """Broadcasts a distribution parameter to the sample `shape`.

    Raises:
      ValueError: the parameter's shape does not broadcast to `shape` (naming both).
    """
    xs = tuple(core.get_aval(x).shape)
    if xs == shape or not xs:
        return x  # elementwise primitives broadcast scalars themselves
    try:
        out = np.broadcast_shapes(xs, shape)
    except ValueError:
        out = None
    if out != shape:
        raise ValueError(f"{name}: parameter shape {xs} must be broadcast-compatible with the sample shape {shape}"
                         f" (broadcasting them must give exactly {shape})")
    return jnp.broadcast_to(x, shape)


def _shape_or_params(name: str, shape: Any, *params: Any) -> tuple:
    """The sample shape: `shape` if given (checked against the parameters' shapes), else their broadcast."""
    pshapes = [tuple(core.get_aval(p).shape) for p in params]
    if shape is None:
        return tuple(np.broadcast_shapes(*pshapes)) if pshapes else ()
    shape = canonical_shape(name, shape)
    for ps in pshapes:
        try:
            ok = np.broadcast_shapes(shape, ps) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name}: parameter shape {ps} must be broadcast-compatible with shape {shape}, and "
                             f"broadcasting them must give exactly {shape}")
    return shape


# --------------------------------------------------------------------------------------------------------------
# Raw bits and uniform floats
# --------------------------------------------------------------------------------------------------------------

def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers.

    Args:
      key: a single PRNG key.
      shape: the sample shape. Default ().
      dtype: an unsigned integer dtype (default uint32, or uint64 with x64 enabled).

    Returns:
      An array of `shape` and `dtype`.

    Raises:
      ValueError: `dtype` is not an unsigned integer dtype.
    """
    if dtype is None:
        dt = dtypes.canonicalize_dtype(np.uint64)
    else:
        dt = dtypes.canonicalize_dtype(dtype)
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt.name}")
    shape = canonical_shape("bits", shape)
    return prng.bits_for(key, "bits", dt.itemsize * 8, shape)


def _one_to_two(data: Any, shape: tuple, dt: np.dtype) -> Any:
    """Floats in [1, 2) of dtype `dt`: random mantissa bits under the exponent of 1.0."""
    finfo = dtypes.finfo(dt)
    nbits, nmant = finfo.bits, finfo.nmant
    # Fewer than 8 mantissa bits (bfloat16): 8 random bits suffice.
    rng_bits = 8 if nmant < 8 else nbits
    uint_dt = _UINT_BY_BITS[nbits]
    raw = prng.random_bits(data, rng_bits, shape)
    if rng_bits != nbits:
        raw = ew.convert_element_type(raw, uint_dt)
    mantissa = ew.shift_right_logical(raw, _const(rng_bits - nmant, uint_dt))
    one_bits = np.array(1.0, dt).view(uint_dt)
    return ew.bitcast_convert_type(ew.bitwise_or(mantissa, _const(one_bits, uint_dt)), dt)


def _uniform(data: Any, shape: tuple, dt: np.dtype, minval: Any, maxval: Any) -> Any:
    minval = _broadcast_param("uniform", ew.convert_element_type(_asarray(minval), dt), shape)
    maxval = _broadcast_param("uniform", ew.convert_element_type(_asarray(maxval), dt), shape)
    unit = ew.sub(_one_to_two(data, shape, dt), _const(1.0, dt))
    # XLA contracts `unit * span + minval` into one fused multiply-add; `mul_add` rounds the same way.
    return ew.max(minval, mul_add(unit, ew.sub(maxval, minval), minval))


def _uniform_const(data: Any, shape: tuple, dt: np.dtype, minval: float, maxval: float) -> Any:
    """`_uniform` with constant bounds, reproducing XLA's algebraic simplification of constant expressions.

    When `maxval - minval` rounds to exactly 1 in `dt` (e.g. [tiny, 1)), XLA drops the multiplication and folds
    the constants of `(bits - 1) + minval` into `bits + (minval - 1)`, which changes the rounding of 16-bit floats.
    """
    lo, hi = np.array(minval, dt), np.array(maxval, dt)
    if np.array(hi - lo, dt) != 1:
        return _uniform(data, shape, dt, _const(lo, dt), _const(hi, dt))
    floats = _one_to_two(data, shape, dt)
    return ew.max(_const(lo, dt), ew.add(floats, _const(np.array(lo - np.array(1, dt), dt), dt)))


def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval).

    Args:
      key: a single PRNG key.
      shape: the sample shape. Default ().
      dtype: a float dtype (default float32, float64 with x64).
      minval, maxval: bounds, scalars or arrays broadcastable to `shape`.

    Returns:
      An array of `shape` and `dtype`.

    Raises:
      ValueError: `dtype` is not a float dtype, or the bounds do not broadcast to `shape`.
    """
    data, _ = check_key("uniform", key)
    dt = _float_dtype("uniform", dtype)
    shape = canonical_shape("uniform", shape)
    return _uniform(data, shape, dt, minval, maxval)


# --------------------------------------------------------------------------------------------------------------
# Normal family
# --------------------------------------------------------------------------------------------------------------

def _normal_real(data: Any, shape: tuple, dt: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    u = _uniform(data, shape, dt, _const(lo, dt), _const(1.0, dt))
    return ew.mul(_const(np.sqrt(2), dt), ew.erf_inv(u))


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal draws (complex dtypes: real and imaginary parts each of variance 1/2).

    Args:
      key: a single PRNG key.
      shape: the sample shape. Default ().
      dtype: a float or complex dtype (default float32).

    Returns:
      An array of `shape` and `dtype`.

    Raises:
      ValueError: `dtype` is not a float or complex dtype.
    """
    data, _ = check_key("normal", key)
    dt = _float_dtype("normal", dtype, allow_complex=True)
    shape = canonical_shape("normal", shape)
    if dtypes.is_complex(dt):
        real_dt = np.dtype(np.float64) if dt == np.complex128 else np.dtype(np.float32)
        k_re, k_im = _split2(data)
        re = ew.convert_element_type(_normal_real(k_re, shape, real_dt), dt)
        im = ew.convert_element_type(_normal_real(k_im, shape, real_dt), dt)
        z = ew.add(re, ew.mul(_const(1j, dt), im))
        # JAX divides by the constant sqrt(2); XLA rewrites a division by a constant into a product with its
        # reciprocal (rounded in `dt`), which is what gives JAX's bits (a true complex division differs by an ulp).
        return ew.mul(z, _const(np.asarray(1, dt) / np.asarray(np.sqrt(2), dt), dt))
    return _normal_real(data, shape, dt)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = None) -> Any:
    """Standard normal draws truncated to the open interval (lower, upper).

    Args:
      key: a single PRNG key.
      lower, upper: bounds, scalars or arrays.
      shape: the sample shape (default: the broadcast shape of `lower` and `upper`).
      dtype: a float dtype (default float32).

    Returns:
      An array of the sample shape and `dtype`, strictly inside (lower, upper).

    Raises:
      ValueError: `dtype` is not a float dtype, or the bounds do not broadcast to `shape`.
    """
    data, _ = check_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    lower, upper = _asarray(lower), _asarray(upper)
    shape = _shape_or_params("truncated_normal", shape, lower, upper)
    sqrt2 = _const(np.sqrt(2), dt)
    # XLA rewrites `x / sqrt(2)` into `x * (1 / sqrt(2))` (reciprocal rounded in `dt`); do the same.
    inv_sqrt2 = _const(np.array(1, dt) / np.array(np.sqrt(2), dt), dt)
    lower = ew.convert_element_type(lower, dt)
    upper = ew.convert_element_type(upper, dt)
    a = ew.erf(jnp.multiply(lower, inv_sqrt2))
    b = ew.erf(jnp.multiply(upper, inv_sqrt2))
    u = _uniform(data, shape, dt, a, b)
    out = ew.mul(sqrt2, ew.erf_inv(u))
    # Rounding (or drawing exactly `a`) could land on a bound: clamp into the open interval.
    from ... import lax
    lo = ew.nextafter(lax.stop_gradient(lower), _const(np.inf, dt))
    hi = ew.nextafter(lax.stop_gradient(upper), _const(-np.inf, dt))
    return jnp.clip(out, lo, hi)


def lognormal(key: Any, sigma: Any = 1.0, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """exp(sigma * N(0, 1)) draws.

    Raises:
      ValueError: `dtype` is not a float dtype, or `sigma` does not broadcast to `shape`.
    """
    data, _ = check_key("lognormal", key)
    dt = _float_dtype("lognormal", dtype)
    sigma = _asarray(sigma)
    shape = _shape_or_params("lognormal", shape, sigma)
    z = _normal_real(data, shape, dt)
    return ew.exp(jnp.multiply(z, ew.convert_element_type(sigma, dt)))


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None, dtype: Any = None,
                        method: str = "cholesky") -> Any:
    """Multivariate normal draws: mean + factor @ z with factor a square root of `cov` (cholesky/eigh/svd).

    Args:
      key: a single PRNG key.
      mean: array of shape (..., n).
      cov: array of shape (..., n, n), positive (semi-)definite.
      shape: batch shape of the result (default: the broadcast of the batch shapes of mean and cov).
      dtype: a float dtype (default float32).
      method: "cholesky", "eigh" or "svd".

    Returns:
      An array of shape `shape + (n,)`.

    Raises:
      ValueError: bad `method`, or mean/cov shapes that do not match.
    """
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"method must be one of {{'svd', 'eigh', 'cholesky'}}, got {method!r}")
    data, _ = check_key("multivariate_normal", key)
    dt = _float_dtype("multivariate_normal", dtype)
    mean = jnp.asarray(_asarray(mean), dt)
    cov = jnp.asarray(_asarray(cov), dt)
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != (mean.shape[-1], mean.shape[-1]):
        raise ValueError(f"multivariate_normal requires mean of shape (..., n) and cov of shape (..., n, n), got "
                         f"mean {mean.shape} and cov {cov.shape}")
    n = mean.shape[-1]
    if shape is None:
        shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
    else:
        shape = canonical_shape("multivariate_normal", shape)
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _normal_real(data, shape + (n,), dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


# --------------------------------------------------------------------------------------------------------------
# Integers and booleans
# --------------------------------------------------------------------------------------------------------------

def _split2(data: Any) -> tuple:
    keys = prng.split_data(data, (2,))
    return (st.reshape(st.slice(keys, (0, 0), (1, 2)), (2,)), st.reshape(st.slice(keys, (1, 0), (2, 2)), (2,)))


def _convert_and_clip_integer(val: Any, dt: np.dtype) -> Any:
    """Converts an integer array to `dt`, saturating at `dt`'s range instead of wrapping."""
    src = core.get_aval(val).dtype
    lo = max(int(dtypes.iinfo(dt).min), int(dtypes.iinfo(src).min))
    hi = min(int(dtypes.iinfo(dt).max), int(dtypes.iinfo(src).max))
    clipped = ew.clamp(st.full((), lo, src), val, st.full((), hi, src)) if core.get_aval(val).shape else \
        ew.max(ew.min(val, _const(hi, src)), _const(lo, src))
    return ew.convert_element_type(clipped, dt)


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Uniform integers in [minval, maxval) (modulo-based: slightly biased unless the span is a power of 2).

    Args:
      key: a single PRNG key.
      shape: the sample shape.
      minval, maxval: integer bounds (scalars or arrays broadcastable to `shape`); maxval <= minval gives minval.
      dtype: an integer dtype (default int32, int64 with x64).

    Returns:
      An array of `shape` and `dtype`.

    Raises:
      TypeError: `dtype` is not an integer dtype.
      ValueError: the bounds do not broadcast to `shape`.
    """
    data, _ = check_key("randint", key)
    dt = _int_dtype("randint", dtype)
    shape = canonical_shape("randint", shape)
    minval, maxval = _asarray(minval), _asarray(maxval)
    info = dtypes.iinfo(dt)
    sample_dt = dt
    if info.bits < 32:
        # Narrow dtypes are sampled in 32 bits (less modulo bias), then cast.
        sample_dt = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
    out = _randint(data, shape, minval, maxval, sample_dt)
    return ew.convert_element_type(out, dt) if sample_dt != dt else out


def _randint(data: Any, shape: tuple, minval: Any, maxval: Any, dt: np.dtype) -> Any:
    _shape_or_params("randint", shape, minval, maxval)
    if not dtypes.is_integer(core.get_aval(minval).dtype):
        minval = jnp.asarray(minval).astype(int)
    if not dtypes.is_integer(core.get_aval(maxval).dtype):
        maxval = jnp.asarray(maxval).astype(int)
    nbits = dtypes.iinfo(dt).bits
    unsigned = _UINT_BY_BITS[nbits]
    # maxval may exceed the dtype (randint(key, s, 0, 256, uint8)): then the span is one larger.
    top = _convert_and_clip_integer(_const(dtypes.iinfo(dt).max, dt), core.get_aval(maxval).dtype)
    maxval_out_of_range = jnp.greater(maxval, top)
    minval = _broadcast_param("randint", _convert_and_clip_integer(minval, dt), shape)
    maxval = _broadcast_param("randint", _convert_and_clip_integer(maxval, dt), shape)
    maxval_out_of_range = _broadcast_param("randint", maxval_out_of_range, shape)
    k1, k2 = _split2(data)
    higher = prng.random_bits(k1, nbits, shape)
    lower = prng.random_bits(k2, nbits, shape)
    span = ew.convert_element_type(ew.sub(maxval, minval), unsigned)
    one = st.full(shape, 1, unsigned)
    span = ew.select(ew.le(maxval, minval), one, span)
    span = ew.select(ew.bitwise_and(maxval_out_of_range, ew.gt(maxval, minval)), ew.add(span, one), span)
    # (hi * 2^nbits + lo) mod span, without overflow: (a * b) mod s == ((a mod s) * (b mod s)) mod s.
    multiplier = ew.rem(st.full(shape, 2 ** (nbits // 2), unsigned), span)
    multiplier = ew.rem(ew.mul(multiplier, multiplier), span)
    offset = ew.add(ew.mul(ew.rem(higher, span), multiplier), ew.rem(lower, span))
    offset = ew.rem(offset, span)
    return ew.add(minval, ew.convert_element_type(offset, dt))


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None, mode: str = "low") -> Any:
    """Boolean draws that are True with probability `p`.

    Args:
      key: a single PRNG key.
      p: a float or float array of probabilities.
      shape: the sample shape (default `p.shape`).
      mode: "low" (one uniform per draw) or "high" (two, correct for p below ~1e-7).

    Returns:
      A bool array of the sample shape.

    Raises:
      TypeError: `p` does not have a floating dtype.
      ValueError: bad `mode`, or `p` does not broadcast to `shape`.
    """
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    data, _ = check_key("bernoulli", key)
    p = _asarray(p)
    dt = core.get_aval(p).dtype
    if not dtypes.is_float(dt):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt.name}.")
    shape = _shape_or_params("bernoulli", shape, p)
    if mode == "high":
        both = _uniform(data, (2,) + shape, dt, 0.0, 1.0)
        u1 = st.reshape(st.slice_in_dim(both, 0, 1, 1, 0), shape)
        u2 = st.reshape(st.slice_in_dim(both, 1, 2, 1, 0), shape)
        # The second draw fills in the bits below the first one's resolution of 2^-nmant.
        u2 = jnp.multiply(u2, 2.0 ** -dtypes.finfo(dt).nmant)
        return jnp.less(u2, jnp.subtract(p, u1))
    return jnp.less(_uniform(data, shape, dt, 0.0, 1.0), p)


def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Draws of -1 or +1 with equal probability, as `dtype` (default int32)."""
    data, _ = check_key("rademacher", key)
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = canonical_shape("rademacher", shape)
    b = ew.convert_element_type(jnp.less(_uniform(data, shape, dtypes.default_float_dtype(), 0.0, 1.0), 0.5), dt)
    return ew.convert_element_type(jnp.subtract(jnp.multiply(2, b), 1), dt)


# --------------------------------------------------------------------------------------------------------------
# Distributions derived from uniforms
# --------------------------------------------------------------------------------------------------------------

def _finfo_const(dt: np.dtype, attr: str) -> Array:
    return _const(getattr(dtypes.finfo(dt), attr), dt)


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel draws, -log(-log(u)).

    Args:
      key: a single PRNG key.
      shape: the sample shape. Default ().
      dtype: a float dtype (default float32).
      mode: "low" (default: one uniform in [tiny, 1)) or "high" (two uniforms, finer resolution near 0).

    Raises:
      ValueError: `dtype` is not a float dtype, or bad `mode`.
    """
    data, _ = check_key("gumbel", key)
    dt = _float_dtype("gumbel", dtype)
    shape = canonical_shape("gumbel", shape)
    mode = "low" if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel ('low' or 'high'), got: {mode!r}")
    return _gumbel(data, shape, dt, mode)


def _gumbel(data: Any, shape: tuple, dt: np.dtype, mode: str) -> Any:
    if mode == "high":
        both = _uniform(data, (2,) + shape, dt, 0.0, 1.0)
        high = st.reshape(st.slice_in_dim(both, 0, 1, 1, 0), shape)
        low = st.reshape(st.slice_in_dim(both, 1, 2, 1, 0), shape)
        finfo = dtypes.finfo(dt)
        # high + 2^-nmant * low is contracted by XLA into one fused multiply-add.
        fine = ew.add(mul_add(_const(2.0 ** -finfo.nmant, dt), low, high), _finfo_const(dt, "tiny"))
        x = ew.select(ew.ge(high, _const(0.5, dt)), high, fine)
        return ew.neg(ew.log(ew.neg(ew.log1p(ew.neg(x)))))
    u = _uniform_const(data, shape, dt, dtypes.finfo(dt).tiny, 1.0)
    return ew.neg(ew.log(ew.neg(ew.log(u))))


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard exponential draws, -log1p(-u).

    Raises:
      ValueError: `dtype` is not a float dtype.
    """
    data, _ = check_key("exponential", key)
    dt = _float_dtype("exponential", dtype)
    shape = canonical_shape("exponential", shape)
    return _exponential(data, shape, dt)


def _exponential(data: Any, shape: tuple, dt: np.dtype) -> Any:
    u = _uniform(data, shape, dt, 0.0, 1.0)
    return ew.neg(ew.log1p(ew.neg(u)))


def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard Laplace draws, sign(u) log1p(-|u|) with u uniform in (-1, 1).

    Raises:
      ValueError: `dtype` is not a float dtype.
    """
    data, _ = check_key("laplace", key)
    dt = _float_dtype("laplace", dtype)
    shape = canonical_shape("laplace", shape)
    u = _uniform_const(data, shape, dt, -1.0 + dtypes.finfo(dt).epsneg, 1.0)
    return ew.mul(ew.sign(u), ew.log1p(ew.neg(ew.abs(u))))


def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard logistic draws, log(u) - log1p(-u).

    Raises:
      ValueError: `dtype` is not a float dtype.
    """
    data, _ = check_key("logistic", key)
    dt = _float_dtype("logistic", dtype)
    shape = canonical_shape("logistic", shape)
    x = _uniform_const(data, shape, dt, dtypes.finfo(dt).tiny, 1.0)
    return ew.sub(ew.log(x), ew.log1p(ew.neg(x)))


def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard Cauchy draws, tan(pi (u - 1/2)).

    Raises:
      ValueError: `dtype` is not a float dtype.
    """
    data, _ = check_key("cauchy", key)
    dt = _float_dtype("cauchy", dtype)
    shape = canonical_shape("cauchy", shape)
    u = _uniform_const(data, shape, dt, dtypes.finfo(dt).eps, 1.0)
    return ew.tan(ew.mul(_const(np.pi, dt), ew.sub(u, _const(0.5, dt))))


def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Pareto draws with shape parameter `b`, exp(E / b) for E standard exponential.

    Raises:
      ValueError: `dtype` is not a float dtype, or `b` does not broadcast to `shape`.
    """
    data, _ = check_key("pareto", key)
    dt = _float_dtype("pareto", dtype)
    b = _asarray(b)
    shape = _shape_or_params("pareto", shape, b)
    e = _exponential(data, shape, dt)
    return ew.exp(jnp.divide(e, ew.convert_element_type(b, dt)))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Weibull draws, scale * (-log1p(-u)) ** (1 / concentration).

    Raises:
      ValueError: `dtype` is not a float dtype.
    """
    data, _ = check_key("weibull_min", key)
    dt = _float_dtype("weibull_min", dtype)
    shape = canonical_shape("weibull_min", shape)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    return jnp.power(ew.neg(ew.log1p(ew.neg(u))), jnp.divide(1.0, concentration)) * scale


def rayleigh(key: Any, scale: Any = 1.0, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Rayleigh draws, scale * sqrt(-2 log u).

    Raises:
      ValueError: `dtype` is not a float dtype, or `scale` does not broadcast to `shape`.
    """
    data, _ = check_key("rayleigh", key)
    dt = _float_dtype("rayleigh", dtype)
    scale = _asarray(scale)
    shape = _shape_or_params("rayleigh", shape, scale)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    scale = jnp.broadcast_to(jnp.asarray(scale).astype(dt), shape)
    return ew.mul(scale, ew.sqrt(ew.mul(ew.log(u), _const(-2, dt))))


def maxwell(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Maxwell draws: the Euclidean norm of three standard normals.

    Raises:
      ValueError: `dtype` is not a float dtype.
    """
    data, _ = check_key("maxwell", key)
    dt = _float_dtype("maxwell", dtype)
    shape = canonical_shape("maxwell", shape)
    z = _normal_real(data, shape + (3,), dt)
    return jnp.sqrt(jnp.sum(jnp.multiply(z, z), axis=-1))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Sequence[int] | None = None,
               dtype: Any = None) -> Any:
    """Triangular draws on [left, right] with peak at `mode` (inverse CDF).

    Raises:
      ValueError: `dtype` is not a float dtype, or the parameters do not broadcast to `shape`.
    """
    data, _ = check_key("triangular", key)
    dt = _float_dtype("triangular", dtype)
    left, mode, right = _asarray(left), _asarray(mode), _asarray(right)
    shape = _shape_or_params("triangular", shape, left, mode, right)
    left, mode, right = (jnp.broadcast_to(ew.convert_element_type(v, dt), shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    out1 = left + jnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - jnp.sqrt((1 - u) * (right - left) * (right - mode))
    return jnp.where(u < fc, out1, out2)


def geometric(key: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Geometric draws (number of trials up to the first success, >= 1) with success probability `p`.

    Raises:
      TypeError: `dtype` is not an integer dtype.
      ValueError: `p` does not broadcast to `shape`.
    """
    data, _ = check_key("geometric", key)
    dt = _int_dtype("geometric", dtype)
    p = jnp.asarray(_asarray(p))
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float_dtype())
    shape = _shape_or_params("geometric", shape, p)
    u = _uniform(data, shape, p.dtype, 0.0, 1.0)
    u = jnp.where(u == 0, 1, u)
    log_one_minus_p = jnp.broadcast_to(ew.log1p(ew.neg(p)), shape)
    g = ew.floor(ew.div(ew.log(u), log_one_minus_p)) + 1
    return g.astype(dt)


# --------------------------------------------------------------------------------------------------------------
# Categorical, permutations and choices
# --------------------------------------------------------------------------------------------------------------

def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Indices drawn from categorical distributions given by unnormalized log-probabilities (Gumbel-max trick).

    Args:
      key: a single PRNG key.
      logits: float array; `axis` indexes the categories.
      axis: the category axis of `logits`. Default -1.
      shape: the sample shape; must end with the batch shape of `logits` (its shape without `axis`).
        Default: that batch shape.
      replace: sample with replacement (default) or without (Gumbel top-k).
      mode: the gumbel mode, "low" (default) or "high".

    Returns:
      int32 (int64 with x64) indices of the sample shape.

    Raises:
      ValueError: `shape` does not end with the batch shape; too many samples without replacement.
    """
    data, _ = check_key("categorical", key)
    logits = jnp.asarray(_asarray(logits))
    nd = logits.ndim
    if nd == 0:
        raise ValueError("categorical: logits must have at least one dimension (the categories)")
    ax = axis % nd if -nd <= axis < nd else None
    if ax is None:
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of shape {logits.shape}")
    batch_shape = tuple(s for i, s in enumerate(logits.shape) if i != ax)
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape_or_params("categorical", shape, jnp.zeros(batch_shape, np.int8))
    gmode = "low" if mode is None else mode
    if gmode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel ('low' or 'high'), got: {gmode!r}")
    dt = logits.dtype if dtypes.is_float(logits.dtype) else dtypes.default_float_dtype()
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        neg_axis = ax - nd
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(neg_axis % nd, logits.shape[ax])
        noise = _gumbel(data, tuple(prefix) + tuple(logits_shape), dt, gmode)
        expanded = st.expand_dims(logits, tuple(range(len(prefix)))) if prefix else logits
        return jnp.argmax(noise + expanded, axis=neg_axis)
    k = math.prod(prefix)
    if k > logits.shape[ax]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                         f"({logits.shape[ax]}).")
    perturbed = logits + _gumbel(data, logits.shape, dt, gmode)
    _, indices = _top_k(jnp.moveaxis(perturbed, ax, -1), k)
    dims = (indices.ndim - 1,) + tuple(range(indices.ndim - 1))
    return st.reshape(indices, tuple(shape), dims).astype(dtypes.default_int_dtype())


def _top_k(x: Any, k: int) -> tuple:
    from ... import lax
    top_k = getattr(lax, "top_k", None)
    if top_k is None:
        from ..lax import sorting
        top_k = sorting.top_k
    return top_k(x, k)


def _sort_key_val(keys: Any, values: Any, axis: int) -> tuple:
    from ... import lax
    fn = getattr(lax, "sort_key_val", None)
    if fn is None:
        from ..lax import sorting
        fn = sorting.sort_key_val
    return fn(keys, values, axis)


def _shuffle(data: Any, x: Any, axis: int) -> Any:
    """Shuffles `x` along `axis`: stable sorts by fresh random 32-bit keys, repeated enough times that ties
    (which would make the permutation depend on the order of equal keys) become negligible."""
    size = core.get_aval(x).size
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        data, sub = _split2(data)
        sort_keys = prng.random_bits(sub, 32, tuple(core.get_aval(x).shape))
        _, x = _sort_key_val(sort_keys, x, axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of `arange(x)` (integer `x`) or of `x` along `axis`.

    Args:
      key: a single PRNG key.
      x: a concrete non-negative integer, or an array of rank >= 1.
      axis: the axis to shuffle. Default 0.
      independent: shuffle every slice along `axis` independently (default: one permutation for all).

    Returns:
      The shuffled array.

    Raises:
      TypeError: `x` is a scalar that is not an integer.
    """
    data, _ = check_key("permutation", key)
    if isinstance(x, (int, np.integer)) or (not isinstance(x, (list, tuple)) and not np.ndim(x)
                                            and not isinstance(x, (Array, Tracer))):
        n = operator.index(x)
        return _shuffle(data, jnp.arange(n), 0)
    x = _asarray(x)
    if not core.get_aval(x).shape:
        if not dtypes.is_integer(core.get_aval(x).dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(data, jnp.arange(operator.index(x)), 0)
    nd = core.get_aval(x).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"permutation: axis {axis} is out of bounds for an array of rank {nd}")
    axis = axis % nd
    if independent or nd == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, jnp.arange(core.get_aval(x).shape[axis]), 0)
    return jnp.take(x, ind, axis=axis)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0) -> Any:
    """A random sample of `a` (an array, or `arange(a)` for an integer).

    Args:
      key: a single PRNG key.
      a: an array, or a concrete positive integer n standing for arange(n).
      shape: the sample shape. Default ().
      replace: with replacement (default) or without.
      p: optional 1-d probabilities of the entries along `axis`.
      axis: the axis of `a` to sample along. Default 0.

    Returns:
      For integer `a`: indices of `shape`; else `a` with `axis` replaced by `shape`.

    Raises:
      TypeError: `shape` is not a sequence.
      ValueError: an empty population, too many samples without replacement, or `p` of the wrong shape.
    """
    data, _ = check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of random.choice must be a sequence, got {shape!r}")
    shape = canonical_shape("choice", shape)
    arr = jnp.asarray(_asarray(a))
    if arr.ndim == 0:
        n_inputs = operator.index(a if isinstance(a, (int, np.integer)) else arr)
    else:
        if not -arr.ndim <= axis < arr.ndim:
            raise ValueError(f"choice: axis {axis} is out of bounds for an array of rank {arr.ndim}")
        axis = axis % arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when "
                         "'replace=False'")
    if p is None:
        if replace:
            ind = randint(data, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = _shuffle(data, jnp.arange(n_inputs), 0) if arr.ndim == 0 else permutation(data, arr, axis)
            result = st.slice_in_dim(perm, 0, n_draws, 1, 0 if arr.ndim == 0 else axis)
    else:
        p_arr = jnp.asarray(_asarray(p))
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(dtypes.default_float_dtype())
        if p_arr.shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - _uniform(data, shape, p_cuml.dtype, 0.0, 1.0))
            ind = jnp.searchsorted(p_cuml, r).astype(int)
        else:
            g = _gumbel(data, (n_inputs,), p_arr.dtype, "low") + jnp.log(p_arr)
            ind = _top_k(g, n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return jnp.reshape(result, out_shape)


def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None, m: int | None = None) -> Any:
    """Random matrices with orthonormal columns (Haar measure): Q of the QR decomposition of a normal matrix,
    with column signs fixed by the diagonal of R.

    Args:
      key: a single PRNG key.
      n: number of rows.
      shape: batch shape. Default ().
      dtype: a float dtype (default float32).
      m: number of columns (default n).

    Returns:
      An array of shape `shape + (n, m)`.
    """
    data, _ = check_key("orthogonal", key)
    dt = _float_dtype("orthogonal", dtype)
    shape = canonical_shape("orthogonal", shape)
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    z = _normal_real(data, shape + (max(n, m), min(n, m)), dt)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, 0, -2, -1)
    q = q * jnp.expand_dims(jnp.sign(d), -2)
    return q if n >= m else jnp.swapaxes(q, -1, -2)
