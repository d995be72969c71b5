"""`fluxion.scipy.special`: special functions (mirrors `jax.scipy.special`).

Every function is a composition of `fluxion.lax`/`fluxion.numpy` operations, so it works under `grad`, `jit` and
`vmap`. Arguments are promoted as JAX does (`promote_args_inexact`: integers and bools become the default float,
Python scalars stay weakly typed). Where a composition would differentiate badly (a `where` whose untaken branch is
infinite, or an iteration whose derivative is known in closed form) the derivative is attached with `custom_jvp`.

Algorithms that are not a one-line identity cite their source in the function's docstring.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import core, dtypes
from ..custom_derivatives import custom_jvp
from ..errors import ConcretizationTypeError
from ..lax import elementwise as ew
from ..nn import functions as _nn
from ..numpy.util import promote_args_inexact

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1",
    "expi", "expit", "expn",
    "factorial", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax",
    "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "poch", "polygamma", "rel_entr", "softmax",
    "xlog1py", "xlogy", "zeta",
]


def _like_weak(out: Any, like: Any) -> Any:
    """`out` with `like`'s weak type: loop carries (`fori_loop`) come back strongly typed."""
    if getattr(like, "weak_type", False) and not getattr(out, "weak_type", False):
        return ew._convert_weak(out, out.dtype, True)
    return out


def _strong_array(x: Any) -> Any:
    """`x` as an array with a strong dtype: JAX's ndtr/ndtri/log_ndtr return strongly typed results even for
    Python scalars."""
    x = jnp.asarray(x)
    return ew._convert_weak(x, x.dtype, False) if x.weak_type else x


def _real(name: str, *args: Any) -> list:
    """Promotes to a common inexact dtype and rejects complex inputs (none of these functions takes them)."""
    out = promote_args_inexact(name, *args)
    if dtypes.is_complex(out[0].dtype):
        raise ValueError(f"{name} does not support complex-valued inputs, got {out[0].dtype.name}.")
    return out


def _full_like(x: Any, value: float) -> Any:
    """An array like `x` (shape, dtype and weak type, which `jnp.full_like` drops) filled with `value`."""
    return jnp.zeros_like(x) + value


# --------------------------------------------------------------------------------------------------------------
# Logarithms and entropies
# --------------------------------------------------------------------------------------------------------------

@custom_jvp
def _xlogy(x, y):
    # NaN in y propagates even where x == 0, as in SciPy.
    return jnp.where((x != 0) | jnp.isnan(y), x * jnp.log(y), jnp.zeros_like(x))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), tx * jnp.log(y) + ty * x / y


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), defined as 0 where x == 0 (unless y is NaN).

    The derivative is the closed form (log(y), x / y), so it stays finite at x == 0 for y > 0.
    """
    return _xlogy(*_real("xlogy", x, y))


@custom_jvp
def _xlog1py(x, y):
    return jnp.where((x != 0) | jnp.isnan(y), x * jnp.log1p(y), jnp.zeros_like(x))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlog1py(x, y), tx * jnp.log1p(y) + ty * x / (1 + y)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), defined as 0 where x == 0 (unless y is NaN); closed-form derivative as `xlogy`."""
    return _xlog1py(*_real("xlog1py", x, y))


def entr(x: Any) -> Any:
    """Elementwise entropy: -x log x for x > 0, 0 at x == 0, -inf for x < 0."""
    (x,) = _real("entr", x)
    return jnp.where(x < 0, _full_like(x, -np.inf), -_xlogy(x, x))


def rel_entr(p: Any, q: Any) -> Any:
    """p log(p / q) for p, q > 0; 0 where p == 0 and q >= 0; +inf otherwise."""
    p, q = _real("rel_entr", p, q)
    both_pos = (p > 0) & (q > 0)
    # Safe operands in the untaken branches keep their derivatives finite.
    safe_p = jnp.where(both_pos, p, jnp.ones_like(p))
    safe_q = jnp.where(both_pos, q, jnp.ones_like(q))
    value = _xlogy(safe_p, safe_p / safe_q)
    edge = jnp.where((p == 0) & (q >= 0), jnp.zeros_like(p), _full_like(p, np.inf))
    return jnp.where(both_pos, value, edge)


def kl_div(p: Any, q: Any) -> Any:
    """p log(p / q) - p + q (the `rel_entr` cases plus the linear terms): q where p == 0, +inf outside the domain."""
    p, q = _real("kl_div", p, q)
    return rel_entr(p, q) - p + q


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x)) (`lax.logistic`)."""
    (x,) = promote_args_inexact("expit", x)
    return lax.logistic(x)


def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of `expit`: -inf at 0, +inf at 1, NaN outside [0, 1]."""
    (x,) = promote_args_inexact("logit", x)
    return jnp.log(x / (1 - x))


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None) -> Any:
    """log(sum(b * exp(a))) over `axis`, shifted by the maximum for stability (the same function as
    `fluxion.nn.logsumexp`).

    With `b` containing negative weights the sum may be negative: then the result is NaN unless
    `return_sign=True`, which returns (log|sum|, sign(sum)).
    """
    return _nn.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def softmax(x: Any, /, *, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over `axis`; unlike `fluxion.nn.softmax` the default axis is None (all axes)."""
    return _nn.softmax(x, axis=axis)


def log_softmax(x: Any, /, *, axis: Any = None) -> Any:
    """x - logsumexp(x) over `axis` (default: all axes, as in SciPy)."""
    return _nn.log_softmax(x, axis=axis)


# --------------------------------------------------------------------------------------------------------------
# Error function and the normal distribution
# --------------------------------------------------------------------------------------------------------------

def erf(x: Any) -> Any:
    """The error function 2/sqrt(pi) * int_0^x exp(-t^2) dt (`lax.erf`)."""
    (x,) = _real("erf", x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function 1 - erf(x), accurate for large x (`lax.erfc`)."""
    (x,) = _real("erfc", x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of `erf` on (-1, 1) (±inf at ±1, NaN outside)."""
    (x,) = _real("erfinv", x)
    return lax.erf_inv(x)


def _ndtr(x):
    z = x * (1 / math.sqrt(2))
    # 1 + erf(z) near 0, where erf is accurate; erfc on the tails, where 1 + erf would cancel.
    centre = 1 + lax.erf(z)
    upper = 2 - lax.erfc(z)
    lower = lax.erfc(-z)
    return 0.5 * jnp.where(jnp.abs(z) < 1 / math.sqrt(2), centre, jnp.where(z > 0, upper, lower))


def ndtr(x: Any) -> Any:
    """The standard normal CDF, (1 + erf(x / sqrt(2))) / 2, using erfc on the tails to keep relative accuracy.

    Raises:
      TypeError: if `x` is not floating point (JAX's rule: integer inputs are rejected).
    """
    x = _strong_array(x)
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"ndtr: x must be a floating-point array, got dtype {x.dtype.name}")
    return _ndtr(x)


# Segment boundaries of log_ndtr (as JAX's): below `lower` the asymptotic series is used, above `upper`
# log(1 - ndtr(-x)) ~ -ndtr(-x).
_LOG_NDTR_SEGMENTS = {np.dtype(np.float64): (-20.0, 8.0), np.dtype(np.float32): (-10.0, 5.0),
                      np.dtype(np.float16): (-10.0, 5.0)}


def _log_ndtr_asymptotic(x, series_order):
    # log Phi(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_n (-1)^n (2n-1)!! / x^(2n)),
    # Abramowitz & Stegun 26.2.12.
    x2 = x * x
    inv_x2 = 1 / x2
    total = jnp.ones_like(x)
    power = jnp.ones_like(x)
    double_factorial = 1.0
    for n in range(1, series_order + 1):
        double_factorial *= 2 * n - 1
        power = power * inv_x2
        total = total + ((-1) ** n) * double_factorial * power
    return -0.5 * x2 - jnp.log(-x) - 0.5 * math.log(2 * math.pi) + jnp.log(total)


def _log_ndtr_value(x, series_order):
    lower, upper = _LOG_NDTR_SEGMENTS.get(np.dtype(x.dtype), (-20.0, 8.0))
    safe_mid = jnp.clip(x, lower, upper)
    # Right of 0, log1p(-Phi(-x)) keeps the digits that log(Phi(x)) = log(1 - tiny) would round away.
    mid = jnp.where(safe_mid > 0, jnp.log1p(-_ndtr(-safe_mid)), jnp.log(_ndtr(safe_mid)))
    high = -_ndtr(-jnp.maximum(x, upper))
    low = _log_ndtr_asymptotic(jnp.minimum(x, lower), series_order)
    return jnp.where(x > upper, high, jnp.where(x > lower, mid, low))


def _log_ndtr_grad_ratio(x, value):
    # d/dx log Phi(x) = phi(x) / Phi(x), formed in log space so it stays finite far in the left tail.
    return jnp.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi) - value)


def _make_log_ndtr(series_order):
    @custom_jvp
    def f(x):
        return _log_ndtr_value(x, series_order)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = f(x)
        return y, t * _log_ndtr_grad_ratio(x, y)
    return f


_LOG_NDTR = {}


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log of the standard normal CDF, accurate far into both tails.

    Three segments (boundaries -20/8 for float64, -10/5 otherwise): log(ndtr(x)) in the middle (log1p(-ndtr(-x))
    for x > 0, more accurate there than JAX's log(ndtr(x))); -ndtr(-x) above
    (log(1 - e) ~ -e); below, the asymptotic expansion of Abramowitz & Stegun 26.2.12 with `series_order` terms.
    The derivative is phi(x)/Phi(x), evaluated in log space.

    Raises:
      TypeError: if `x` is not floating point. ValueError: if `series_order` is not an integer in [0, 30].
    """
    if not isinstance(series_order, (int, np.integer)) or isinstance(series_order, bool):
        raise TypeError(f"log_ndtr: series_order must be a Python integer, got {series_order!r}")
    if not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be in [0, 30], got {series_order}")
    x = _strong_array(x)
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"log_ndtr: x must be a floating-point array, got dtype {x.dtype.name}")
    fn = _LOG_NDTR.get(int(series_order))
    if fn is None:
        fn = _LOG_NDTR[int(series_order)] = _make_log_ndtr(int(series_order))
    return fn(x)


def _ndtri_lower(q):
    """Phi^{-1}(q) for 0 < q <= 0.5, by Newton's method on log Phi(x) = log q."""
    # Starting point: sqrt(2) erfinv(2q - 1) is accurate near the centre; in the tail, the first terms of the
    # asymptotic inverse (q ~ phi(x)/|x|) are closer.
    t = -2 * jnp.log(q)
    tail_guess = -jnp.sqrt(jnp.maximum(t - jnp.log(2 * math.pi * t), 1.0))
    centre_guess = math.sqrt(2) * lax.erf_inv(2 * q - 1)
    x = jnp.where(q < 0.05, tail_guess, centre_guess)
    log_q = jnp.log(q)
    for _ in range(6):
        value = _log_ndtr_value(x, 10)
        x = x - (value - log_q) / _log_ndtr_grad_ratio(x, value)
    return x


@custom_jvp
def _ndtri(p):
    q = jnp.minimum(p, 1 - p)
    safe_q = jnp.where((q > 0) & (q <= 0.5), q, _full_like(q, 0.25))
    tail = _ndtri_lower(safe_q)
    # Near the centre 2p - 1 is exact and erfinv is accurate in absolute terms; Newton in log space is not
    # (it would lose the relative accuracy of tiny |x|), so it only refines the tails.
    centre = math.sqrt(2) * lax.erf_inv(2 * p - 1)
    x = jnp.where(q < 0.1, jnp.where(p > 0.5, -tail, tail), centre)
    x = jnp.where(p == 0, _full_like(p, -np.inf), x)
    x = jnp.where(p == 1, _full_like(p, np.inf), x)
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), _full_like(p, np.nan), x)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    x = _ndtri(p)
    # dx/dp = 1 / phi(x).
    return x, t * jnp.exp(0.5 * x * x + 0.5 * math.log(2 * math.pi))


def ndtri(p: Any) -> Any:
    """The inverse of `ndtr` (the standard normal quantile function): -inf at 0, +inf at 1, NaN outside [0, 1].

    For min(p, 1 - p) >= 0.1 it is sqrt(2) * erfinv(2p - 1); in the tails a start from the asymptotic inverse of
    Phi(x) ~ phi(x)/|x| (Abramowitz & Stegun 26.2.12) is refined by six Newton steps on log Phi(x) = log p, which
    keeps full relative accuracy down to the smallest normal numbers (SciPy and JAX use Cephes' rational
    approximations instead; values agree to a few ulp). The derivative is 1 / phi(ndtri(p)).

    Raises:
      TypeError: if `p` is not float32 or float64 (as JAX).
    """
    p = _strong_array(p)
    if p.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"ndtri: p must be float32 or float64, got dtype {p.dtype.name}")
    return _ndtri(p)


# --------------------------------------------------------------------------------------------------------------
# Gamma function family
# --------------------------------------------------------------------------------------------------------------

def gammaln(x: Any) -> Any:
    """log|Gamma(x)| (`lax.lgamma`)."""
    (x,) = _real("gammaln", x)
    return lax.lgamma(x)


def loggamma(x: Any) -> Any:
    """The principal branch of log Gamma for real x: lgamma(x) for x > 0 and NaN for x <= 0 (JAX's convention;
    SciPy gives +inf at 0). Complex inputs are not supported (JAX supports them): ValueError."""
    (x,) = _real("loggamma", x)
    return jnp.where(x > 0, lax.lgamma(x), _full_like(x, np.nan))


def digamma(x: Any) -> Any:
    """The logarithmic derivative of Gamma, psi(x) (`lax.digamma`)."""
    (x,) = _real("digamma", x)
    return lax.digamma(x)


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x): +1 for x > 0, -1/+1 alternating on the negative unit intervals, ±1 at ±0, NaN at the
    negative integers and -inf (poles where the sign depends on the side of approach)."""
    (x,) = _real("gammasgn", x)
    floor_x = jnp.floor(x)
    # On (-k-1, -k) the sign is (-1)^(k+1), i.e. -1 where floor(x) is odd.
    odd = jnp.abs(jnp.fmod(floor_x, 2)) == 1
    negative_side = jnp.where(odd, _full_like(x, -1.0), jnp.ones_like(x))
    at_zero = jnp.where(jnp.signbit(x), _full_like(x, -1.0), jnp.ones_like(x))
    out = jnp.where(x > 0, jnp.ones_like(x), jnp.where(x == 0, at_zero, negative_side))
    bad = ((x < 0) & (x == floor_x)) | jnp.isnan(x)
    return jnp.where(bad, _full_like(x, np.nan), out)


def gamma(x: Any) -> Any:
    """Gamma(x) = gammasgn(x) * exp(gammaln(x)): ±inf at ±0, NaN at the negative integers and -inf."""
    (x,) = _real("gamma", x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


def _betaln(a, b):
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).

    Differs from JAX, which uses a cancellation-free algorithm for large arguments: here the three-term sum loses
    about log10(a + b) digits when a + b is large (relative error ~1e-13 at a + b = 1e3 in float64).
    """
    a, b = _real("betaln", a, b)
    return _betaln(a, b)


def beta(a: Any, b: Any) -> Any:
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), with its sign for negative arguments."""
    a, b = _real("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(_betaln(a, b))


def _concrete_int(value: Any, what: str) -> int:
    v = core.concrete_value(value) if isinstance(value, (core.Array, core.Tracer)) else value
    if v is None:
        raise ConcretizationTypeError(f"{what} must be a concrete (static) integer, got a traced value")
    arr = np.asarray(v)
    if arr.ndim != 0 or not float(arr) == int(arr):
        raise ValueError(f"{what} must be a scalar integer, got {v!r}")
    return int(arr)


def multigammaln(a: Any, d: Any) -> Any:
    """log of the multivariate gamma function, d(d-1)/4 log(pi) + sum_{j=0}^{d-1} gammaln(a - j/2).

    `d` must be a concrete integer >= 1 (ValueError otherwise)."""
    d = _concrete_int(d, "multigammaln: d")
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    (a,) = _real("multigammaln", a)
    total = 0.25 * d * (d - 1) * math.log(math.pi) + lax.lgamma(a)
    for j in range(1, d):
        total = total + lax.lgamma(a - 0.5 * j)
    return total


def factorial(n: Any, exact: bool = False) -> Any:
    """n! as Gamma(n + 1) in floating point (0 for n < 0).

    Raises:
      NotImplementedError: for `exact=True` (as JAX; exact integers beyond 20! do not fit 64 bits).
    """
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _real("factorial", n)
    return jnp.where(n < 0, jnp.zeros_like(n), jnp.exp(lax.lgamma(n + 1)))


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:  # noqa: N803 (SciPy's argument name)
    """The binomial coefficient C(N, k) = N! / (k! (N - k)!) in floating point, via gammaln; with
    `repetition=True`, C(N + k - 1, k). Zero where N < 0, k < 0 or k > N (SciPy's `exact=False` conventions).
    SciPy's `exact` argument is not offered (as in JAX)."""
    N, k = _real("comb", N, k)  # noqa: N806
    if repetition:
        N = N + k - 1  # noqa: N806
    ok = (N >= 0) & (k >= 0) & (k <= N)
    value = jnp.exp(lax.lgamma(N + 1) - lax.lgamma(k + 1) - lax.lgamma(N - k + 1))
    return jnp.where(ok, value, jnp.zeros_like(value))


def poch(z: Any, m: Any) -> Any:
    """The rising factorial (z)_m = Gamma(z + m) / Gamma(z); 1 where m == 0."""
    z, m = _real("poch", z, m)
    return jnp.where(m == 0, jnp.ones_like(z), gamma(z + m) / gamma(z))


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda == 0 (computed with expm1 for accuracy)."""
    x, lmbda = _real("boxcox", x, lmbda)
    return _boxcox_from_log(jnp.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda == 0."""
    x, lmbda = _real("boxcox1p", x, lmbda)
    return _boxcox_from_log(jnp.log1p(x), lmbda)


def _boxcox_from_log(log_x, lmbda):
    is_zero = lmbda == 0
    safe = jnp.where(is_zero, jnp.ones_like(lmbda), lmbda)
    return jnp.where(is_zero, log_x, jnp.expm1(safe * log_x) / safe)


# --------------------------------------------------------------------------------------------------------------
# Hurwitz zeta and polygamma
# --------------------------------------------------------------------------------------------------------------

# B_2, B_4, ..., B_24: Bernoulli numbers for the Euler-Maclaurin tail.
_BERNOULLI_EVEN = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
                   -174611 / 330, 854513 / 138, -236364091 / 2730)
_ZETA_DIRECT_TERMS = 12


def _hurwitz_zeta(s, q):
    # Euler-Maclaurin summation (e.g. Johansson, "Rigorous high-precision computation of the Hurwitz zeta
    # function and its derivatives", Numer. Algorithms 2015, eq. 2): N terms summed directly, then the integral,
    # the half term and the Bernoulli corrections at a = q + N.
    total = jnp.zeros_like(q)
    for k in range(_ZETA_DIRECT_TERMS):
        total = total + jnp.power(q + k, -s)
    a = q + _ZETA_DIRECT_TERMS
    a_pow = jnp.power(a, -s)
    total = total + a * a_pow / (s - 1) + 0.5 * a_pow
    rising = s  # s (s+1) ... (s+2j-2), built up two factors at a time
    a_term = a_pow / a  # a^(-s-1)
    inv_a2 = 1 / (a * a)
    factorial = 2.0
    for j, b2j in enumerate(_BERNOULLI_EVEN, start=1):
        total = total + (b2j / factorial) * rising * a_term
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        a_term = a_term * inv_a2
        factorial *= (2 * j + 1) * (2 * j + 2)
    return total


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function sum_{n>=0} (n + q)^(-x), for x > 1 and q > 0.

    Computed by Euler-Maclaurin summation (12 direct terms and 12 Bernoulli corrections; Johansson 2015), accurate
    to a few ulp for moderate x (x up to ~40). Outside the domain: +inf at x == 1 or at a non-positive integer q,
    NaN for x < 1 or a non-positive q with non-integer x (SciPy's conventions).

    Raises:
      NotImplementedError: if `q` is None (the Riemann zeta function is not implemented, as in JAX).
    """
    if q is None:
        raise NotImplementedError("zeta: the Riemann zeta function (q=None) is not implemented; pass q to compute "
                                  "the Hurwitz zeta function.")
    x, q = _real("zeta", x, q)
    safe_q = jnp.where(q > 0, q, jnp.ones_like(q))
    safe_x = jnp.where(x > 1, x, _full_like(x, 2.0))
    value = _hurwitz_zeta(safe_x, safe_q)
    value = jnp.where(x == 1, _full_like(value, np.inf), jnp.where(x < 1, _full_like(value, np.nan), value))
    q_pole = (q <= 0) & (q == jnp.floor(q))
    q_bad = (q <= 0) & ~q_pole
    return jnp.where(q_pole, _full_like(value, np.inf), jnp.where(q_bad, _full_like(value, np.nan), value))


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of digamma at x, psi^(n)(x) (n = 0 is digamma).

    A concrete `n` binds `lax.polygamma` once per distinct order; a traced `n` (under jit or vmap) uses
    psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) with the Euler-Maclaurin `zeta` (valid for x > 0). Differentiable in x.

    Raises:
      ValueError: if `n` is not of integer dtype (as JAX), or if `x` is complex.
    """
    n_arr = jnp.asarray(n)
    if not dtypes.issubdtype(n_arr.dtype, np.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_arr.dtype}.")
    n_f, x = _real("polygamma", n, x)
    concrete = core.concrete_value(n_arr)
    if concrete is not None:
        orders = np.unique(np.asarray(concrete))
        out = _full_like(x, np.nan)
        for m in orders:
            if m < 0:
                continue
            out = jnp.where(n_f == m, lax.polygamma(int(m), x), out)
        return out
    order = n_f
    sign = jnp.where(jnp.fmod(order, 2) == 0, _full_like(order, -1.0), jnp.ones_like(order))
    higher = sign * jnp.exp(lax.lgamma(order + 1)) * zeta(order + 1, x)
    return jnp.where(order == 0, lax.digamma(x), jnp.where(order < 0, _full_like(x, np.nan), higher))


# --------------------------------------------------------------------------------------------------------------
# Incomplete gamma and beta functions
# --------------------------------------------------------------------------------------------------------------

_IGAMMA_ITERATIONS = {np.dtype(np.float64): 200, np.dtype(np.float32): 80, np.dtype(np.float16): 40}


def _igamma_series(a, x, iterations):
    """P(a, x) by the power series x^a e^-x / Gamma(a+1) * sum_k x^k / ((a+1)...(a+k)) (Numerical Recipes 6.2.5)."""
    def step(k, carry):
        term, total = carry
        term = term * x / (a + k)
        return term, total + term

    _, total = lax.fori_loop(1, iterations + 1, step, (jnp.ones_like(x), jnp.ones_like(x)))
    log_prefactor = a * jnp.log(x) - x - lax.lgamma(a + 1)
    return total * jnp.exp(log_prefactor)


def _igammac_continued_fraction(a, x, iterations):
    """Q(a, x) by the Legendre continued fraction, evaluated with the modified Lentz method (Numerical Recipes
    6.2.7; Lentz 1976)."""
    tiny = float(np.finfo(np.dtype(x.dtype)).tiny) * 1e3

    def clamp(v):
        return jnp.where(jnp.abs(v) < tiny, _full_like(v, tiny), v)

    def step(i, carry):
        b, c, d, h = carry
        an = -i * (i - a)
        b = b + 2
        d = 1 / clamp(an * d + b)
        c = clamp(b + an / c)
        return b, c, d, h * d * c

    b = x + 1 - a
    d = 1 / b
    init = (b, _full_like(x, 1 / tiny), d, d)
    h = lax.fori_loop(1, iterations + 1, step, init)[3]
    log_prefactor = a * jnp.log(x) - x - lax.lgamma(a)
    return jnp.exp(log_prefactor) * h


def _igamma_pair(a, x):
    """(P, Q) regularized incomplete gammas: the series where x < a + 1, the continued fraction elsewhere."""
    iterations = _IGAMMA_ITERATIONS.get(np.dtype(x.dtype), 200)
    use_series = x < a + 1
    safe_a = jnp.where(a > 0, a, jnp.ones_like(a))
    safe_x = jnp.where(x > 0, x, jnp.ones_like(x))
    p_series = _igamma_series(safe_a, jnp.where(use_series, safe_x, jnp.zeros_like(x) + 0.5 * safe_a),
                              iterations)
    q_cf = _igammac_continued_fraction(safe_a, jnp.where(use_series, safe_a + 2, safe_x), iterations)
    p = jnp.where(use_series, p_series, 1 - q_cf)
    q = jnp.where(use_series, 1 - p_series, q_cf)
    return p, q


def _igamma_edges(a, x, value, at_zero):
    bad = (a < 0) | (x < 0) | jnp.isnan(a) | jnp.isnan(x) | ((a == 0) & (x == 0))
    value = jnp.where(x == 0, _full_like(value, at_zero), value)
    value = jnp.where((a == 0) & (x > 0), _full_like(value, 1.0 - at_zero), value)
    value = jnp.where(jnp.isinf(x) & (a > 0), _full_like(value, 1.0 - at_zero), value)
    return jnp.where(bad, _full_like(value, np.nan), value)


def _dlog_igamma_dx(a, x):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a).
    return jnp.exp((a - 1) * jnp.log(x) - x - lax.lgamma(a))


def _gammainc_da(a, x):
    # No closed form in `a`: differentiate the fixed-length iteration itself in forward mode.
    from ..api import jvp
    return jvp(lambda aa: _igamma_pair(aa, x)[0], (a,), (jnp.ones_like(a),))[1]


@custom_jvp
def _gammainc(a, x):
    return _igamma_edges(a, x, _igamma_pair(a, x)[0], 0.0)


@_gammainc.defjvp
def _gammainc_jvp(primals, tangents):
    (a, x), (ta, tx) = primals, tangents
    out = _gammainc(a, x)
    return out, tx * _dlog_igamma_dx(a, x) + ta * _gammainc_da(a, x)


@custom_jvp
def _gammaincc(a, x):
    return _igamma_edges(a, x, _igamma_pair(a, x)[1], 1.0)


@_gammaincc.defjvp
def _gammaincc_jvp(primals, tangents):
    (a, x), (ta, tx) = primals, tangents
    out = _gammaincc(a, x)
    return out, -(tx * _dlog_igamma_dx(a, x) + ta * _gammainc_da(a, x))


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), for a, x >= 0.

    Evaluated by the power series where x < a + 1 and by Legendre's continued fraction (modified Lentz) elsewhere,
    each for a fixed number of steps (200 in float64, 80 in float32), as in Numerical Recipes 6.2. The x-derivative
    is the closed form x^(a-1) e^-x / Gamma(a); the a-derivative differentiates the iteration in forward mode.
    NaN for negative arguments or a == x == 0 (SciPy's conventions). Accuracy degrades (to ~1e-10 relative in
    float64) for very large a (> 1e4), where the iteration would need more steps.
    """
    a, x = _real("gammainc", a, x)
    return _like_weak(_gammainc(a, x), x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), computed directly (no cancellation)
    on the continued-fraction side; see `gammainc` for the algorithm and conventions."""
    a, x = _real("gammaincc", a, x)
    return _like_weak(_gammaincc(a, x), x)


_BETAINC_ITERATIONS = {np.dtype(np.float64): 300, np.dtype(np.float32): 100, np.dtype(np.float16): 40}


def _betainc_cf(a, b, x, iterations):
    """The continued fraction of I_x(a, b) (Numerical Recipes 6.4.5), by the modified Lentz method."""
    tiny = float(np.finfo(np.dtype(x.dtype)).tiny) * 1e3

    def clamp(v):
        return jnp.where(jnp.abs(v) < tiny, _full_like(v, tiny), v)

    qab, qap, qam = a + b, a + 1, a - 1
    c = jnp.ones_like(x)
    d = 1 / clamp(1 - qab * x / qap)

    def step(m, carry):
        c, d, h = carry
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 / clamp(1 + even * d)
        c = clamp(1 + even / c)
        h = h * d * c
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 / clamp(1 + odd * d)
        c = clamp(1 + odd / c)
        return c, d, h * d * c

    return lax.fori_loop(1, iterations + 1, step, (c, d, d))[2]


def _betainc_value(a, b, x):
    iterations = _BETAINC_ITERATIONS.get(np.dtype(x.dtype), 300)
    # The fraction converges fast for x < (a + 1) / (a + b + 2); beyond, use I_x(a, b) = 1 - I_{1-x}(b, a).
    flip = x > (a + 1) / (a + b + 2)
    aa, bb = jnp.where(flip, b, a), jnp.where(flip, a, b)
    xx = jnp.where(flip, 1 - x, x)
    inner = jnp.clip(xx, 0.0, 1.0)
    safe_x = jnp.where((inner > 0) & (inner < 1), inner, _full_like(inner, 0.5))
    log_front = aa * jnp.log(safe_x) + bb * jnp.log1p(-safe_x) - _betaln(aa, bb)
    value = jnp.exp(log_front) * _betainc_cf(aa, bb, safe_x, iterations) / aa
    value = jnp.where(flip, 1 - value, value)
    value = jnp.where(x == 0, jnp.zeros_like(value), jnp.where(x == 1, jnp.ones_like(value), value))
    bad = (a <= 0) | (b <= 0) | (x < 0) | (x > 1) | jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x)
    return jnp.where(bad, _full_like(value, np.nan), value)


@custom_jvp
def _betainc(a, b, x):
    return _betainc_value(a, b, x)


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    from ..api import jvp
    out = _betainc(a, b, x)
    # d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b); a and b by forward mode through the iteration.
    dx = jnp.exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - _betaln(a, b))
    dab = jvp(lambda aa, bb: _betainc_value(aa, bb, x), (a, b), (ta, tb))[1]
    return out, tx * dx + dab


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1 (NaN elsewhere).

    Evaluated by the continued fraction of Numerical Recipes 6.4 (modified Lentz, a fixed 300 steps in float64 /
    100 in float32) with the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) on the slowly converging side. The x-derivative
    is the beta density; a and b are differentiated through the iteration in forward mode.
    """
    a, b, x = _real("betainc", a, b, x)
    return _like_weak(_betainc(a, b, x), x)


# --------------------------------------------------------------------------------------------------------------
# Modified Bessel functions of the first kind, orders 0 and 1
# --------------------------------------------------------------------------------------------------------------

# Below this |x| the power series is summed (all terms positive, so no cancellation); above, the asymptotic
# expansion converges to full precision within its terms.
_BESSEL_SWITCH = 30.0
_BESSEL_SERIES_TERMS = 120
_BESSEL_ASYMPTOTIC_TERMS = 30


def _bessel_i_scaled(order: int, x):
    """exp(-|x|) I_order(|x|) for order 0 or 1, from the power series
    I_v(x) = sum_k (x/2)^(2k+v) / (k! (k+v)!) for small |x| and the large-argument expansion
    I_v(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k a_k(v) / x^k, a_k(v) = prod_{j<=k} (4v^2 - (2j-1)^2) / (k! 8^k)
    (Abramowitz & Stegun 9.6.10 and 9.7.1) beyond `_BESSEL_SWITCH`."""
    ax = jnp.abs(x)
    small = jnp.minimum(ax, _BESSEL_SWITCH)
    half_sq = 0.25 * small * small

    def series_step(k, carry):
        term, total = carry
        term = term * half_sq / (k * (k + order))
        return term, total + term

    first = jnp.ones_like(small) if order == 0 else 0.5 * small
    total = lax.fori_loop(1, _BESSEL_SERIES_TERMS + 1, series_step, (first, first))[1]
    series = total * jnp.exp(-small)
    large = jnp.maximum(ax, _BESSEL_SWITCH)
    mu = 4.0 * order * order
    term = jnp.ones_like(large)
    asym = jnp.ones_like(large)
    for k in range(1, _BESSEL_ASYMPTOTIC_TERMS + 1):
        term = term * (-(mu - (2 * k - 1) ** 2)) / (k * 8.0 * large)
        asym = asym + term
    asym = asym / jnp.sqrt(2 * math.pi * large)
    return _like_weak(jnp.where(ax <= _BESSEL_SWITCH, series, asym), x)


def i0e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x) (even in x).

    Power series below |x| = 30, the asymptotic expansion above (Abramowitz & Stegun 9.6.10, 9.7.1); SciPy and
    JAX use Cephes' Chebyshev expansions, which agree to a few ulp. Differentiable (d/dx = i1e(x) - sign(x) i0e(x)).
    """
    (x,) = _real("i0e", x)
    return _bessel_i_scaled(0, x)


def i1e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x) (odd in x); see `i0e`."""
    (x,) = _real("i1e", x)
    return jnp.sign(x) * _bessel_i_scaled(1, x)


def i0(x: Any) -> Any:
    """The modified Bessel function of order 0, I0(x) = exp(|x|) i0e(x) (overflows to inf beyond |x| ~ 713 in
    float64)."""
    (x,) = _real("i0", x)
    return jnp.exp(jnp.abs(x)) * _bessel_i_scaled(0, x)


def i1(x: Any) -> Any:
    """The modified Bessel function of order 1, I1(x) = exp(|x|) i1e(x)."""
    (x,) = _real("i1", x)
    return jnp.exp(jnp.abs(x)) * jnp.sign(x) * _bessel_i_scaled(1, x)


# --------------------------------------------------------------------------------------------------------------
# Exponential integrals
# --------------------------------------------------------------------------------------------------------------

_EULER_GAMMA = 0.57721566490153286061
_EXPINT_SERIES_TERMS = 60
_EXPINT_CF_STEPS = 120
_EI_SERIES_LIMIT = 40.0
_EI_SERIES_TERMS = 160
_EI_ASYMPTOTIC_TERMS = 40


def _expn_series(n, x):
    """E_n(x) for 0 < x <= 1 by its power series (Abramowitz & Stegun 5.1.12; Numerical Recipes 6.3):
    E_n(x) = (-x)^(n-1) / (n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)."""
    nm1 = n - 1
    # k = 0 term: 1 / (n - 1), or -log(x) - gamma for n = 1 (folded into the k = n - 1 case below).
    first = jnp.where(nm1 == 0, -jnp.log(x) - _EULER_GAMMA, -1 / jnp.where(nm1 == 0, jnp.ones_like(nm1), -nm1))

    def step(k, carry):
        fact, total = carry
        fact = fact * (-x) / k
        special_term = fact * (lax.digamma(n) - jnp.log(x))
        regular = -fact / jnp.where(k == nm1, jnp.ones_like(nm1), k - nm1)
        return fact, total + jnp.where(k == nm1, special_term, regular)

    return lax.fori_loop(1, _EXPINT_SERIES_TERMS + 1, step, (jnp.ones_like(x), first))[1]


def _expn_continued_fraction(n, x):
    """E_n(x) for x > 1 by its continued fraction (A&S 5.1.22), evaluated with the modified Lentz method
    (Numerical Recipes 6.3)."""
    nm1 = n - 1
    tiny = float(np.finfo(np.dtype(x.dtype)).tiny) * 1e3

    def step(i, carry):
        b, c, d, h = carry
        a = -i * (nm1 + i)
        b = b + 2
        d = 1 / (a * d + b)
        c = b + a / c
        return b, c, d, h * c * d

    b = x + n
    d = 1 / b
    h = lax.fori_loop(1, _EXPINT_CF_STEPS + 1, step, (b, jnp.full_like(x, 1 / tiny), d, d))[3]
    return h * jnp.exp(-x)


def _expn_value(n, x):
    small = x <= 1
    x_small = jnp.where(small & (x > 0), x, jnp.full_like(x, 0.5))
    x_large = jnp.where(small, jnp.full_like(x, 2.0), x)
    n_safe = jnp.where((n >= 1) & (n == jnp.floor(n)), n, jnp.ones_like(n))  # n = 0 and bad n are set below
    value = jnp.where(small, _expn_series(n_safe, x_small), _expn_continued_fraction(n_safe, x_large))
    value = jnp.where(n == 0, jnp.exp(-x) / x, value)
    at_zero = jnp.where(n > 1, 1 / jnp.maximum(n - 1, 1), jnp.full_like(x, np.inf))
    value = jnp.where(x == 0, at_zero, value)
    value = jnp.where(jnp.isposinf(x), jnp.zeros_like(value), value)
    bad = (x < 0) | (n < 0) | (n != jnp.floor(n)) | jnp.isnan(x) | jnp.isnan(n)
    return jnp.where(bad, _full_like(value, np.nan), value)


@custom_jvp
def _expn(n, x):
    return _expn_value(n, x)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, tx) = primals, tangents
    # d/dx E_n(x) = -E_{n-1}(x); E_{-1}(x) = e^-x (1 + x) / x^2 extends it to n = 0.
    lower = jnp.where(n >= 1, _expn(jnp.maximum(n - 1, 0), x), jnp.exp(-x) * (1 + x) / (x * x))
    return _expn(n, x), -tx * lower


def expn(n: Any, x: Any) -> Any:
    """The generalized exponential integral E_n(x) = int_1^inf exp(-x t) / t^n dt, for integer n >= 0, x >= 0.

    The power series for x <= 1 and the continued fraction (modified Lentz, 120 steps) above (Abramowitz & Stegun
    5.1.12, 5.1.22; Numerical Recipes 6.3). E_n(0) = 1/(n-1) for n > 1 and inf otherwise; NaN for x < 0 or a
    negative or non-integer n. Differentiable in x (d/dx E_n = -E_{n-1}).
    """
    n, x = _real("expn", n, x)
    return _like_weak(_expn(n, x), x)


def exp1(x: Any) -> Any:
    """The exponential integral E1(x) = int_x^inf exp(-t) / t dt for x >= 0 (`expn` with n = 1): inf at 0, NaN for
    x < 0 (SciPy's real-argument conventions)."""
    (x,) = _real("exp1", x)
    return _like_weak(_expn(jnp.ones_like(x), x), x)


def _expi_positive(x):
    """Ei(x) for x > 0: gamma + log x + sum_k x^k / (k k!) up to x = 40 (A&S 5.1.10), then the asymptotic
    e^x / x sum_k k! / x^k (A&S 5.1.51) truncated at 40 terms."""
    small = jnp.minimum(x, _EI_SERIES_LIMIT)

    def step(k, carry):
        power, total = carry  # power = x^k / k!
        power = power * small / k
        return power, total + power / k

    series = lax.fori_loop(1, _EI_SERIES_TERMS + 1, step, (jnp.ones_like(small), jnp.zeros_like(small)))[1]
    series = _EULER_GAMMA + jnp.log(small) + series
    large = jnp.maximum(x, _EI_SERIES_LIMIT)
    term = jnp.ones_like(large)
    total = jnp.ones_like(large)
    for k in range(1, _EI_ASYMPTOTIC_TERMS + 1):
        term = term * k / large
        total = total + term
    asymptotic = jnp.exp(large) / large * total
    return jnp.where(x <= _EI_SERIES_LIMIT, series, asymptotic)


@custom_jvp
def _expi(x):
    positive = jnp.where(x > 0, x, jnp.ones_like(x))
    negative = jnp.where(x < 0, -x, jnp.ones_like(x))
    value = jnp.where(x > 0, _expi_positive(positive), -_expn(jnp.ones_like(x), negative))
    value = jnp.where(jnp.isposinf(x), _full_like(x, np.inf), value)
    return jnp.where(x == 0, _full_like(x, -np.inf), value)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi(x), t * jnp.exp(x) / x  # d/dx Ei(x) = e^x / x on both sides of 0


def expi(x: Any) -> Any:
    """The exponential integral Ei(x) = -PV int_{-x}^inf exp(-t) / t dt: -E1(-x) for x < 0, -inf at 0, and for
    x > 0 the power series (A&S 5.1.10) up to 40 and the asymptotic expansion (A&S 5.1.51) beyond."""
    (x,) = _real("expi", x)
    return _like_weak(_expi(x), x)


# --------------------------------------------------------------------------------------------------------------
# Bernoulli numbers and the scaled complementary error function
# --------------------------------------------------------------------------------------------------------------

def _bernoulli_exact(n: int) -> list:
    """B_0..B_n as exact fractions from the recurrence sum_{k=0}^{m} C(m+1, k) B_k = 0 (B_1 = -1/2)."""
    from fractions import Fraction
    values = [Fraction(1)]
    for m in range(1, n + 1):
        values.append(-sum(math.comb(m + 1, k) * values[k] for k in range(m)) / (m + 1))
    return values


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0, ..., B_n (with B_1 = -1/2, as SciPy) as an array of shape (n + 1,) in the
    default float dtype, computed exactly with rational arithmetic and rounded once.

    Raises:
      ValueError: if `n` is not a non-negative (concrete) integer.
    """
    if isinstance(n, (core.Array, core.Tracer)):
        n = _concrete_int(n, "bernoulli: n")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative integer, got {n!r}")
    exact = _bernoulli_exact(int(n))
    dt = dtypes.default_float_dtype()
    return jnp.asarray(np.array([float(v) for v in exact], dtype=np.float64).astype(dt))


_ERFCX_SWITCH = 2.0
_ERFCX_CF_STEPS = 120


def _erfcx_continued_fraction(x):
    """erfcx(x) for x >= 2 from Laplace's continued fraction
    erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) (Abramowitz & Stegun 7.1.14),
    evaluated from the tail inward for a fixed number of terms."""
    def step(i, tail):
        k = _ERFCX_CF_STEPS - i  # k = N, N-1, ..., 1
        return x + (0.5 * k) / tail

    tail = lax.fori_loop(0, _ERFCX_CF_STEPS, step, x)
    return 1 / (math.sqrt(math.pi) * tail)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function exp(x^2) erfc(x).

    exp(x^2) * erfc(x) for x < 2 (inf once exp(x^2) overflows for very negative x, as SciPy) and Laplace's
    continued fraction (Abramowitz & Stegun 7.1.14) for x >= 2, which keeps full accuracy where erfc underflows.
    """
    (x,) = _real("erfcx", x)
    near = jnp.minimum(x, _ERFCX_SWITCH)
    direct = jnp.exp(near * near) * lax.erfc(near)
    far = _erfcx_continued_fraction(jnp.maximum(x, _ERFCX_SWITCH))
    return _like_weak(jnp.where(x < _ERFCX_SWITCH, direct, far), x)


# --------------------------------------------------------------------------------------------------------------
# Bessel functions of the first kind, integer orders
# --------------------------------------------------------------------------------------------------------------

_RESCALE_ABOVE = 1e10


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """J_0(z), ..., J_v(z) stacked on a new leading axis: shape (v + 1, *z.shape).

    Miller's backward recurrence J_{k-1} = (2k / z) J_k - J_{k+1} from order v + n_iter (an even number) down to 0,
    normalized by J_0 + 2 sum_k J_{2k} = 1 (Abramowitz & Stegun 9.1.27 and 9.1.46; Numerical Recipes 6.5). The
    running values are rescaled whenever they exceed 1e10, so small |z| does not overflow (JAX's version returns
    NaN there); accuracy needs v + n_iter well above |z|. Below |z| = 1e-3 the
    power series is used (J_n(0) is 1 for n = 0 and 0 otherwise).

    Raises:
      ValueError: if v or n_iter is not a non-negative integer.
    """
    for name, value in (("v", v), ("n_iter", n_iter)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"bessel_jn: {name} must be a non-negative integer, got {value!r}")
    (z,) = _real("bessel_jn", z)
    v = int(v)
    start = v + int(n_iter)
    start += start % 2  # the normalization sums even orders: start from an even order
    # Below |z| = 1e-3 three terms of the power series (z/2)^n / n! sum_k (-(z/2)^2)^k / (k! (n+1)...(n+k)) are
    # exact to rounding, and the recurrence's first step, 2k/z, could overflow.
    tiny = jnp.abs(z) < 1e-3
    safe_z = jnp.where(tiny, jnp.ones_like(z), z)
    upper = jnp.zeros_like(z)  # J_{k+1}
    current = jnp.full_like(z, 1e-30)  # J_k, arbitrary scale
    norm = jnp.where(start % 2 == 0, 2 * current, jnp.zeros_like(z))
    kept = {start: current} if start <= v else {}
    for k in range(start, 0, -1):
        lower = (2 * k / safe_z) * current - upper
        upper, current = current, lower
        if k - 1 <= v:
            kept[k - 1] = current
        if (k - 1) % 2 == 0:
            norm = norm + (current if k - 1 == 0 else 2 * current)
        # Keep the recurrence in range: scale everything held so far by the same factor.
        big = jnp.abs(current) > _RESCALE_ABOVE
        factor = jnp.where(big, 1 / _RESCALE_ABOVE, 1.0)
        upper, current, norm = upper * factor, current * factor, norm * factor
        kept = {order: value * factor for order, value in kept.items()}
    orders = [kept[order] / norm for order in range(v + 1)]
    out = jnp.stack(orders, axis=0)
    half = 0.5 * jnp.where(tiny, z, jnp.zeros_like(z))
    h2 = half * half
    series = jnp.stack([half ** order / math.factorial(order)
                        * (1 - h2 / (order + 1) * (1 - h2 / (2 * (order + 2)))) for order in range(v + 1)])
    return jnp.where(tiny, series, out)
