"""Counting distributions (mirrors `jax.random`): poisson, binomial, multinomial.

The samplers follow JAX's recipes and stream layout, so the same key gives JAX's draws except where an acceptance
test falls within an ulp of its threshold (XLA's `log` differs from NumPy's in the last bit; see `gamma.py`):

* poisson: for lam < 10, Knuth's multiplication method (D. E. Knuth, TAOCP vol. 2, 3.4.1): count uniforms until
  their product drops below e^-lam, all elements stepping together with one key split per round; otherwise the
  transformed rejection method PTRS of W. Hormann, "The transformed rejection method for generating Poisson random
  variables", Insurance: Mathematics and Economics 12(1), 1993.
* binomial: for n q <= 10 (q = min(p, 1 - p)), inversion by summing geometric waiting times; otherwise BTRS of
  W. Hormann, "The generation of binomial random variates", J. Statist. Comput. Simul. 46, 1993, with the
  Stirling-series tail correction. NaN for p outside [0, 1] or NaN, or a negative or NaN n; inf for infinite n.
* multinomial: a scan over the categories drawing binomial(remaining count, p_i / remaining mass) with one split
  key per category.

All loops are `lax.while_loop`/`lax.scan`, so the samplers trace under jit and batch under vmap (a batched loop
runs until every element is done). The draws are not differentiable (integer-valued).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import numpy as jnp
from .. import core, dtypes
from ..lax import control_flow as cf
from ..lax import elementwise as ew
from . import distributions as ds
from . import prng
from .prng import canonical_shape, check_key


def _split3(data):
    keys = prng.split_data(data, (3,))
    return keys[0], keys[1], keys[2]


# --------------------------------------------------------------------------------------------------------------
# Poisson
# --------------------------------------------------------------------------------------------------------------

def _poisson_knuth(data, lam, shape, dt, max_iters):
    def body(carry):
        i, k, key, log_prod = carry
        key, sub = ds._split2(key)
        k = jnp.where(log_prod > -lam, k + 1, k)
        u = ds._uniform(sub, shape, np.dtype(np.float32), 0.0, 1.0)
        return i + 1, k, key, log_prod + jnp.log(u)

    def cond(carry):
        i, _, _, log_prod = carry
        return jnp.any(log_prod > -lam) & (i < max_iters)

    init = (jnp.asarray(0, np.int32), jnp.zeros(shape, dt), data, jnp.zeros(shape, np.float32))
    k = cf.while_loop(cond, body, init)[1]
    return (k - 1).astype(dt)


def _poisson_rejection(data, lam, shape, dt, max_iters):
    log_lam = jnp.log(lam)
    b = 0.931 + 2.53 * jnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = _split3(key)
        u = ds._uniform(sub0, shape, lam.dtype, 0.0, 1.0) - 0.5
        v = ds._uniform(sub1, shape, lam.dtype, 0.0, 1.0)
        us = 0.5 - jnp.abs(u)
        k = jnp.floor((2 * a / us + b) * u + lam + 0.43)
        s = jnp.log(v * inv_alpha / (a / (us * us) + b))
        t = -lam + k * log_lam - ew.lgamma(k + 1)
        accept1 = (us >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((us < 0.013) & (v > us))
        accept = accept1 | (~reject & (s <= t))
        return i + 1, jnp.where(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < max_iters)

    init = (jnp.asarray(0, np.int32), jnp.full(shape, -1, lam.dtype), jnp.zeros(shape, bool), data)
    return cf.while_loop(cond, body, init)[1].astype(dt)


def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Poisson(lam) draws (Knuth's method for lam < 10, Hormann's PTRS otherwise; 0 where lam = 0).

    Args:
      key: a single PRNG key.
      lam: rates >= 0, broadcast to `shape`; computed in float32 (as JAX does).
      shape: the sample shape (default lam's shape).
      dtype: an integer dtype (default int32).

    Raises:
      TypeError: a non-integer dtype. ValueError: `lam`'s shape does not broadcast to `shape`.
    """
    data, _ = check_key("poisson", key)
    dt = ds._int_dtype("poisson", dtype)
    lam = ds._asarray(lam)
    shape = tuple(core.get_aval(lam).shape) if shape is None else canonical_shape("poisson", shape)
    lam = jnp.broadcast_to(lam, shape).astype(np.float32)
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = jnp.where(use_knuth, lam, 0.0)
    lam_rejection = jnp.where(use_knuth, 1e5, lam)  # a rate at which rejection accepts quickly
    max_iters = np.iinfo(dt).max
    draws = jnp.where(use_knuth, _poisson_knuth(data, lam_knuth, shape, dt, max_iters),
                      _poisson_rejection(data, lam_rejection, shape, dt, max_iters))
    return jnp.where(lam == 0, jnp.zeros_like(draws), draws)


# --------------------------------------------------------------------------------------------------------------
# Binomial and multinomial
# --------------------------------------------------------------------------------------------------------------

# log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2], k = 0..9 (the Stirling-series remainder).
_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                           0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                           0.00925546218271273, 0.00833056343336287])


def _stirling_tail(k):
    table = jnp.asarray(_STIRLING_TAIL.astype(k.dtype))
    small = k <= 9
    k = jnp.clip(k, 0.0, 9.0)
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return jnp.where(small, table[jnp.floor(k).astype(np.int32)], approx)


def _binomial_inversion(data, count, prob, shape, max_iters):
    log1mp = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        sub, key = ds._split2(key)
        num_geom = jnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = ds._uniform(sub, shape, prob.dtype, 0.0, 1.0)
        geom_sum = geom_sum + jnp.ceil(jnp.log(u) / log1mp)
        return i + 1, num_geom, geom_sum, key

    def cond(carry):
        i, _, geom_sum, _ = carry
        return jnp.any(geom_sum <= count) & (i < max_iters)

    init = (jnp.asarray(0, np.int32), jnp.zeros(shape, prob.dtype), jnp.zeros(shape, prob.dtype), data)
    return cf.while_loop(cond, body, init)[1] - 1


def _btrs(data, count, prob, shape, max_iters):
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = _split3(key)
        u = ds._uniform(sub0, shape, prob.dtype, 0.0, 1.0) - 0.5
        v = ds._uniform(sub1, shape, prob.dtype, 0.0, 1.0)
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        accept = accept1 | (~reject & (v <= bound))
        return i + 1, jnp.where(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < max_iters)

    init = (jnp.asarray(0, np.int32), jnp.full(shape, -1, prob.dtype), jnp.zeros(shape, bool), data)
    return cf.while_loop(cond, body, init)[1]


def binomial(key: Any, n: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Binomial(n, p) draws as floats (inversion for n min(p, 1-p) <= 10, Hormann's BTRS otherwise).

    Args:
      key: a single PRNG key.
      n: numbers of trials (floored; NaN result for negative or NaN n, inf for infinite n).
      p: success probabilities in [0, 1] (NaN result outside).
      shape: the sample shape (default the broadcast of n's and p's shapes).
      dtype: a float dtype for the result (default float32).

    Raises:
      ValueError: a non-float dtype, or parameter shapes that do not broadcast to `shape`.
    """
    # An infinite count makes the unused BTRS branch compute inf - inf (NaN, discarded by the selects below); XLA
    # does so silently, and so does this (NumPy would warn on every eager step).
    with np.errstate(invalid="ignore"):
        return _binomial(key, n, p, shape, dtype)


def _binomial(key, n, p, shape, dtype):
    data, _ = check_key("binomial", key)
    dt = ds._float_dtype("binomial", dtype)
    n, p = ds._asarray(n), ds._asarray(p)
    shape = ds._shape_or_params("binomial", shape, n, p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float_dtype())
    count = jnp.broadcast_to(n.astype(p.dtype), shape)
    prob = jnp.broadcast_to(p, shape)
    p_lt_half = prob < 0.5
    q = jnp.where(p_lt_half, prob, 1.0 - prob)
    count_bad = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_nan, q_neg = jnp.isnan(q), q < 0.0
    q = jnp.where(q_nan | q_neg, 0.01, q)
    use_inversion = count_bad | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = jnp.where(use_inversion, count, 0.0)
    count_btrs = jnp.where(use_inversion, 1e4, count)
    q_btrs = jnp.where(use_inversion, 0.5, q)
    max_iters = np.finfo(dt).max
    draws = jnp.where(use_inversion, _binomial_inversion(data, count_inv, q, shape, max_iters).astype(dt),
                      _btrs(data, count_btrs, q_btrs, shape, max_iters).astype(dt))
    invalid = q_neg | q_nan | count_bad
    draws = jnp.where(invalid, jnp.full_like(draws, np.nan), draws)
    draws = jnp.where(count_inf & ~invalid, jnp.full_like(draws, np.inf), draws)
    return jnp.where(p_lt_half | count_bad | q_nan | count_inf, draws, count.astype(dt) - draws)


def multinomial(key: Any, n: Any, p: Any, *, shape: Sequence[int] | None = None, dtype: Any = None,
                unroll: int | bool = 1) -> Any:
    """Multinomial(n, p) counts over the last axis of `p` (float counts summing to n).

    Args:
      key: a single PRNG key.
      n: numbers of trials, broadcast to `shape[:-1]`.
      p: category probabilities (..., k), summing to 1 over the last axis.
      shape: the full result shape including the category axis (default p's shape), as JAX's code uses it.
      dtype: the result dtype (default: the promoted inexact dtype of n and p).
      unroll: accepted for compatibility (the scan over categories is not unrolled).

    Raises:
      ValueError: shapes that do not broadcast.
    """
    data, _ = check_key("multinomial", key)
    n, p = ds._asarray(n), ds._asarray(p)
    dt = dtypes.result_type(n, p, 1.0)
    n, p = n.astype(dt), p.astype(dt)
    shape = tuple(p.shape) if shape is None else canonical_shape("multinomial", shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), 0), 0)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = prng.split_data(data, (ratios.shape[0],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = binomial(k, remainder, jnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count

    _, counts = cf.scan(step, n, (ratios, keys))
    out = jnp.moveaxis(counts, 0, -1)
    return out if dtype is None else out.astype(dtype)
