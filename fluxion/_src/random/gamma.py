"""Gamma draws and the distributions built on them (mirrors `jax.random`): gamma, loggamma, beta, dirichlet,
chisquare, f, t, generalized_normal, ball, double_sided_maxwell, wald.

Gamma(a, 1) uses the squeeze-and-reject method of G. Marsaglia and W. W. Tsang, "A simple method for generating
gamma variables", ACM TOMS 26(3), 2000, with JAX's arrangement of the random stream, so that the same key gives
JAX's draws:

* the key is split into one key per element (row-major over the sample shape);
* per element: split once into (loop key, boost key); each rejection round splits the loop key into three, draws
  normals x from successive splits of the second key until v = 1 + c x > 0 (c = 1 / (3 sqrt(d)),
  d = a - 1/3), then one uniform U from the third; the candidate d v^3 is accepted when
  U < 1 - 0.0331 x^4 or log U < x^2 / 2 + d (1 - v^3 + log v^3);
* for a < 1 the draw for a + 1 is multiplied by (1 - u)^(1/a) (u from the boost key), or in log space (`loggamma`)
  shifted by -e / a with e an exponential draw from the boost key.

Where the draws are not bit-identical to JAX's: XLA rewrites (1/3) / sqrt(d) as (1/3) * rsqrt(d) and evaluates
rsqrt with the processor's approximate reciprocal square root (so JAX's own draws depend on the CPU), and its
`log` and `pow` are polynomial expansions that can differ from NumPy's correctly rounded ones in the last bit.
fluxion computes c = (1/3) / sqrt(d) correctly rounded, so a fraction of the draws (about 10% for some a, none for
others) differs from JAX's by an ulp or two; `loggamma` and the a < 1 boost differ likewise. The draws are the
same random variables: the key splitting, candidate sequence and acceptance decisions are JAX's (an acceptance
test would have to fall within an ulp of its threshold to go the other way).

Derivatives with respect to `a` are implicit reparameterization gradients (M. Figurnov, S. Mohamed, A. Mnih,
"Implicit Reparameterization Gradients", NeurIPS 2018): d sample / d a = -(dP/da) / p(sample) at fixed key, via
`lax.random_gamma_grad`, as in JAX.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ... import numpy as jnp
from .. import core
from ..custom_derivatives import custom_jvp
from ..interpreters import ad, batching
from ..lax import control_flow as cf
from ..lax import elementwise as ew
from ..lax import special as sf
from ..nn.functions import softmax
from . import distributions as ds
from . import prng
from ..lax.mul_add import mul_add
from .prng import canonical_shape, check_key


def _c(value, dt):
    return ds._const(value, dt)


# --------------------------------------------------------------------------------------------------------------
# One Gamma(alpha, 1) draw from raw key data (Marsaglia & Tsang 2000)
# --------------------------------------------------------------------------------------------------------------

def _gamma_one(data, alpha, log_space: bool):
    dt = core.get_aval(alpha).dtype
    zero, one = _c(0, dt), _c(1, dt)
    boost_mask = ew.ge(alpha, one)
    alpha_orig = alpha
    alpha = ew.select(boost_mask, alpha, ew.add(alpha, one))
    d = ew.sub(alpha, _c(1 / 3, dt))
    c = ew.div(_c(1 / 3, dt), ew.sqrt(d))

    def reject(state):
        _, x2, v3, u = state
        squeeze = ew.ge(u, ew.sub(one, ew.mul(_c(0.0331, dt), ew.mul(x2, x2))))
        bound = ew.add(ew.mul(x2, _c(0.5, dt)), ew.mul(d, ew.add(ew.sub(one, v3), ew.log(v3))))
        return ew.bitwise_and(squeeze, ew.ge(ew.log(u), bound))

    def normal_until_positive(kxv):
        k, _, _ = kxv
        parts = prng.split_data(k, (2,))
        x = ds._normal_real(parts[1], (), dt)
        return parts[0], x, mul_add(x, c, one)  # XLA contracts 1 + x c into one fused multiply-add

    def candidate(state):
        parts = prng.split_data(state[0], (3,))
        _, x, v = cf.while_loop(lambda kxv: ew.le(kxv[2], zero), normal_until_positive,
                                (parts[1], zero, _c(-1, dt)))
        u = ds._uniform(parts[2], (), dt, 0.0, 1.0)
        return parts[0], ew.mul(x, x), ew.mul(ew.mul(v, v), v), u

    parts = prng.split_data(data, (2,))
    # The initial state is rejected, so at least one candidate is drawn.
    _, _, v3, _ = cf.while_loop(reject, candidate, (parts[0], zero, one, _c(2, dt)))
    boost_data = parts[1]
    inv_alpha = ew.div(one, alpha_orig)
    if log_space:
        log_u = ew.neg(ds._exponential(boost_data, (), dt))
        log_boost = ew.select(ew.bitwise_or(boost_mask, ew.eq(log_u, zero)), zero, ew.mul(log_u, inv_alpha))
        return ew.add(ew.add(ew.log(d), ew.log(v3)), log_boost)
    u = ew.sub(one, ds._uniform(boost_data, (), dt, 0.0, 1.0))
    boost = ew.select(boost_mask, one, ew.pow(u, inv_alpha))
    return ew.mul(ew.mul(d, v3), boost)


def _gamma_draws(data, a, log_space: bool):
    """Gamma(a, 1) draws (or their logs) for every element of `a`, one split key per element."""
    shape = core.get_aval(a).shape
    n = math.prod(shape)
    if n == 0:
        return a
    keys = prng.split_data(data, (n,))
    flat = jnp.reshape(a, (n,))
    draws = batching.vmap_flat(lambda k, al: [_gamma_one(k, al, log_space)], [keys, flat], [0, 0], n)[0]
    return jnp.reshape(draws, shape)


def _gamma_grad(a, sample, log_space: bool):
    if not log_space:
        return sf.random_gamma_grad(a, sample)
    # d log(x) / da = (dx / da) / x; exp(log x) may underflow to 0: use the smallest normal instead.
    x = ew.exp(sample)
    dt = core.get_aval(x).dtype
    x = ew.select(ew.eq(x, _c(0, dt)), jnp.full_like(x, np.finfo(dt).tiny), x)
    return ew.div(sf.random_gamma_grad(a, x), x)


def _make_gamma(log_space: bool):
    @custom_jvp
    def draw(data, a):
        return _gamma_draws(data, a, log_space)

    @draw.defjvp
    def _jvp(primals, tangents):
        data, a = primals
        _, a_dot = tangents
        sample = draw(data, a)
        if type(a_dot) is ad.Zero:
            return sample, jnp.zeros_like(sample)
        return sample, ew.mul(a_dot, _gamma_grad(a, sample, log_space))

    return draw


_gamma_draw = _make_gamma(False)
_loggamma_draw = _make_gamma(True)


def _gamma_common(name: str, key, a, shape, dtype, log_space: bool):
    data, _ = check_key(name, key)
    dt = ds._float_dtype(name, dtype)
    a = ds._asarray(a)
    shape = ds._shape_or_params(name, shape, a)
    a = ew.convert_element_type(a, dt)
    a = ds._broadcast_param(name, a, shape)
    if core.get_aval(a).shape != shape:
        a = jnp.broadcast_to(a, shape)
    return (_loggamma_draw if log_space else _gamma_draw)(data, a)


def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) draws: density x^(a-1) e^-x / Gamma(a) on x > 0 (Marsaglia & Tsang 2000, as JAX draws them).

    Args:
      key: a single PRNG key.
      a: shape parameter(s), > 0; broadcast against `shape`.
      shape: the sample shape (default: `a`'s shape); `a` must broadcast to it.
      dtype: a float dtype (default float32).

    Returns:
      Draws of `shape` and `dtype`, differentiable in `a` (implicit reparameterization, Figurnov et al. 2018).

    Raises:
      ValueError: a non-float dtype or a parameter shape that does not broadcast to `shape`.
    """
    return _gamma_common("gamma", key, a, shape, dtype, False)


def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """log of Gamma(a, 1) draws, computed in log space (accurate for small `a`, where the draws underflow).

    Same arguments and errors as `gamma`; the same key gives the logs of `gamma`'s draws up to rounding.
    """
    return _gamma_common("loggamma", key, a, shape, dtype, True)


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Beta(a, b) draws, G_a / (G_a + G_b) from two log-gamma draws (scaled by their maximum to stay finite).

    Raises:
      ValueError: a non-float dtype or parameter shapes that do not broadcast to `shape`.
    """
    data, _ = check_key("beta", key)
    dt = ds._float_dtype("beta", dtype)
    a, b = ds._asarray(a), ds._asarray(b)
    shape = ds._shape_or_params("beta", shape, a, b)
    a = jnp.broadcast_to(ew.convert_element_type(a, dt), shape)
    b = jnp.broadcast_to(ew.convert_element_type(b, dt), shape)
    key_a, key_b = ds._split2(data)
    log_a = _loggamma_draw(key_a, a)
    log_b = _loggamma_draw(key_b, b)
    log_max = ew.max(log_a, log_b)
    ga = ew.exp(ew.sub(log_a, log_max))
    gb = ew.exp(ew.sub(log_b, log_max))
    return ew.div(ga, ew.add(ga, gb))


def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Dirichlet(alpha) draws over the last axis of `alpha`: the softmax of log-gamma draws.

    Args:
      alpha: concentrations, shape (..., k) with k >= 1 categories.
      shape: the batch shape (default alpha.shape[:-1]); the result has shape `shape + (k,)`.

    Raises:
      ValueError: `alpha` is a scalar, a non-float dtype, or batch shapes that do not broadcast to `shape`.
    """
    data, _ = check_key("dirichlet", key)
    dt = ds._float_dtype("dirichlet", dtype)
    alpha = ds._asarray(alpha)
    ashape = core.get_aval(alpha).shape
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    batch = ashape[:-1] if shape is None else canonical_shape("dirichlet", shape)
    if shape is not None:
        ds._shape_or_params("dirichlet", batch, jnp.zeros(ashape[:-1]))
    full = tuple(batch) + ashape[-1:]
    alpha = jnp.broadcast_to(ew.convert_element_type(alpha, dt), full)
    return softmax(_loggamma_draw(data, alpha), axis=-1)


def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square(df) draws: 2 exp(loggamma(df / 2)).

    Raises:
      ValueError: a non-float dtype or a parameter shape that does not broadcast to `shape`.
    """
    data, _ = check_key("chisquare", key)
    dt = ds._float_dtype("chisquare", dtype)
    df = ew.convert_element_type(ds._asarray(df), dt)
    half = ew.div(df, _c(2, dt))
    log_g = _gamma_common("chisquare", data, half, shape, dt, True)
    return ew.mul(ew.exp(log_g), _c(2, dt))


def f(key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """F(dfnum, dfden) draws: (X1 / dfnum) / (X2 / dfden) for chi-square draws X1, X2.

    Raises:
      ValueError: a non-float dtype or parameter shapes that do not broadcast to `shape`.
    """
    data, _ = check_key("f", key)
    dt = ds._float_dtype("f", dtype)
    dfnum = ew.convert_element_type(ds._asarray(dfnum), dt)
    dfden = ew.convert_element_type(ds._asarray(dfden), dt)
    shape = ds._shape_or_params("f", shape, dfnum, dfden)
    key_den, key_num = ds._split2(data)
    num = chisquare(key_num, dfnum, shape, dt) / dfnum
    den = chisquare(key_den, dfden, shape, dt) / dfden
    return num / den


def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Student's t(df) draws: n sqrt((df / 2) / g) with n normal and g ~ Gamma(df / 2).

    Raises:
      ValueError: a non-float dtype or a parameter shape that does not broadcast to `shape`.
    """
    data, _ = check_key("t", key)
    dt = ds._float_dtype("t", dtype)
    df = ew.convert_element_type(ds._asarray(df), dt)
    shape = ds._shape_or_params("t", shape, df)
    key_n, key_g = ds._split2(data)
    n = ds._normal_real(key_n, shape, dt)
    half = ew.div(df, _c(2, dt))
    g = _gamma_common("t", key_g, half, shape, dt, False)
    return n * jnp.sqrt(half / g)


def generalized_normal(key: Any, p: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Generalized normal draws with shape parameter p: density p / (2 Gamma(1/p)) exp(-|x|^p); s g^(1/p) with
    g ~ Gamma(1/p) and s a random sign (p = 2 gives N(0, 1/2), p = 1 the Laplace distribution).

    Raises:
      ValueError: a non-float dtype or a parameter shape that does not broadcast to `shape`.
    """
    data, _ = check_key("generalized_normal", key)
    dt = ds._float_dtype("generalized_normal", dtype)
    p = ew.convert_element_type(ds._asarray(p), dt)
    shape = canonical_shape("generalized_normal", shape)
    ds._shape_or_params("generalized_normal", shape, p)
    keys = prng.split_data(data, (2,))
    inv_p = ew.div(_c(1, dt), p)
    g = _gamma_common("generalized_normal", keys[0], inv_p, shape, dt, False)
    r = ds.rademacher(keys[1], shape, dt)
    return ew.mul(r, ew.pow(g, jnp.broadcast_to(inv_p, shape)))


def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform draws from the unit L^p ball in d dimensions, shape `shape + (d,)`: g / (sum |g|^p + e)^(1/p) with
    g generalized-normal(p) and e exponential (F. Barthe, O. Guedon, S. Mendelson, A. Naor, "A probabilistic
    approach to the geometry of the l_p^n-ball", Ann. Probab. 33(2), 2005).

    Raises:
      TypeError: `d` is not a static non-negative integer. ValueError: a non-float dtype.
    """
    data, _ = check_key("ball", key)
    dt = ds._float_dtype("ball", dtype)
    if core.concrete_value(d) is None or int(core.concrete_value(d)) < 0:
        raise TypeError(f"ball: d must be a static non-negative integer, got {d!r}")
    d = int(core.concrete_value(d))
    shape = canonical_shape("ball", shape)
    k1, k2 = ds._split2(data)
    g = generalized_normal(k1, p, shape + (d,), dt)
    e = ds._exponential(k2, shape, dt)
    norm = (jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** (1 / p)
    return g / norm[..., None]


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Double-sided Maxwell draws: loc + scale * s m with m a Maxwell draw and s a random sign.

    The result has shape `shape + broadcast(loc.shape, scale.shape)` (`shape` is a batch shape, as in JAX).

    Raises:
      ValueError: a non-float dtype.
    """
    data, _ = check_key("double_sided_maxwell", key)
    dt = ds._float_dtype("double_sided_maxwell", dtype)
    loc = ew.convert_element_type(ds._asarray(loc), dt)
    scale = ew.convert_element_type(ds._asarray(scale), dt)
    pshape = tuple(np.broadcast_shapes(core.get_aval(loc).shape, core.get_aval(scale).shape))
    shape = canonical_shape("double_sided_maxwell", shape) + pshape
    k_m, k_r = ds._split2(data)
    m = ds.maxwell(k_m, shape, dt)
    sign = ds.rademacher(k_r, shape, dt)
    # XLA contracts (sign m) scale + loc into one fused multiply-add.
    return mul_add(ew.mul(sign, m), jnp.broadcast_to(scale, shape), jnp.broadcast_to(loc, shape))


def wald(key: Any, mean: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian, unit shape parameter) draws with the given mean, by the transformation of
    J. R. Michael, W. R. Schucany, R. W. Haas, "Generating random variates using transformations with multiple
    roots", The American Statistician 30(2), 1976.

    Raises:
      ValueError: a non-float dtype or a parameter shape that does not broadcast to `shape`.
    """
    data, _ = check_key("wald", key)
    dt = ds._float_dtype("wald", dtype)
    mean = ew.convert_element_type(ds._asarray(mean), dt)
    shape = ds._shape_or_params("wald", shape, mean)
    mean = jnp.broadcast_to(mean, shape)
    k1, k2 = ds._split2(data)
    v = ds._normal_real(k1, shape, dt)
    z = ds._uniform(k2, shape, dt, 0.0, 1.0)
    y = ew.integer_pow(v, 2)
    y_sq = ew.integer_pow(y, 2)
    mean_sq = ew.integer_pow(mean, 2)
    # XLA contracts both a*b + c patterns below into fused multiply-adds; so does this, for JAX's exact values.
    root = ew.sqrt(mul_add(ew.mul(_c(4, dt), mean), y, ew.mul(mean_sq, y_sq)))
    x = mul_add(ew.neg(ew.div(mean, _c(2, dt))), root, ew.add(mean, ew.div(ew.mul(mean_sq, y), _c(2, dt))))
    return ew.select(ew.le(z, ew.div(mean, ew.add(mean, x))), x, ew.div(mean_sq, x))
