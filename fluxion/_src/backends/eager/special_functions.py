"""NumPy implementations of the special-function primitives of `lax/special.py`.

Values come from SciPy in float64 and are rounded once to the operand dtype (float16/bfloat16/float32 inputs are
computed in float64 too), so they are correctly rounded up to SciPy's accuracy; they are not bit-matched to XLA's
polynomial and continued-fraction expansions.

`igamma_grad_a` (dP/da) has no SciPy routine. It is evaluated by Richardson-extrapolated central differences in a
of SciPy's P(a, x), or of Q(a, x) = 1 - P where x > max(1, a) (there P is near 1 and its differences would cancel;
dP/da = -dQ/da). With the relative step h = 1e-3 the truncation error is O(h^4) and the rounding error about
1e-16 / h relative to P or Q, so the result has about 12 correct digits, beyond float32 precision.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp

from ...lax import special as sf
from . import register_impl

_ERR = dict(all="ignore")


def _in_float64(fn):
    """Evaluates `fn` on float64 copies of the operands and rounds the result to the operands' dtype."""
    def impl(*args):
        dt = np.result_type(*args)
        with np.errstate(**_ERR):
            out = fn(*[np.asarray(a, np.float64) for a in args])
        return np.asarray(out).astype(dt)
    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


def _igamma_grad_a64(a, x):
    a, x = np.broadcast_arrays(a, x)
    upper = (x > 1) & (x > a)
    h = 1e-3 * np.where(a > 0, a, 1.0)

    def diff(step):
        hi, lo = a + step, a - step
        d_lower = (sp.gammainc(hi, x) - sp.gammainc(lo, x)) / (2 * step)
        d_upper = (sp.gammaincc(lo, x) - sp.gammaincc(hi, x)) / (2 * step)
        return np.where(upper, d_upper, d_lower)

    # Richardson: the O(h^2) terms of the steps h and h/2 cancel in (4 D(h/2) - D(h)) / 3.
    out = (4 * diff(h / 2) - diff(h)) / 3
    out = np.where(x == 0, 0.0, out)
    return np.where((a <= 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)


def _random_gamma_grad64(a, x):
    log_density = (a - 1) * np.log(x) - x - sp.gammaln(a)
    out = -_igamma_grad_a64(a, x) / np.exp(log_density)
    out = np.where(x == 0, 0.0, out)
    return np.where((a <= 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)


def _igamma64(a, x):
    return np.where((a < 0) | (x < 0), np.nan, sp.gammainc(a, x))


def _igammac64(a, x):
    return np.where((a < 0) | (x < 0), np.nan, sp.gammaincc(a, x))


register_impl(sf.igamma_p, _in_float64(_igamma64))
register_impl(sf.igammac_p, _in_float64(_igammac64))
register_impl(sf.igamma_grad_a_p, _in_float64(_igamma_grad_a64))
register_impl(sf.random_gamma_grad_p, _in_float64(_random_gamma_grad64))
register_impl(sf.regularized_incomplete_beta_p, _in_float64(sp.betainc))
register_impl(sf.bessel_i0e_p, _in_float64(sp.i0e))
register_impl(sf.bessel_i1e_p, _in_float64(sp.i1e))
register_impl(sf.zeta_p, _in_float64(sp.zeta))
