"""Special-function primitives beyond the elementwise basics: incomplete gamma and beta, scaled Bessel, zeta.

All are elementwise over operands of one real floating dtype (scalars broadcast), so they share the elementwise
family's shape/dtype rule and batching rule (`elementwise._nary`). Their NumPy implementations (SciPy in float64,
rounded to the operand dtype) are in `backends/eager/special_functions.py`.

Derivatives, as in JAX:

* igamma(a, x) = P(a, x) = gamma(a, x) / Gamma(a): d/dx is the Gamma(a, 1) density x^(a-1) e^-x / Gamma(a); d/da is
  `igamma_grad_a`. igammac = 1 - igamma, so its derivatives are the negatives.
* `igamma_grad_a` and `random_gamma_grad` (the implicit-reparameterization derivative of a Gamma(a, 1) sample x
  with respect to a: -dP/da / dP/dx, M. Figurnov, S. Mohamed, A. Mnih, "Implicit Reparameterization Gradients",
  NeurIPS 2018) are declared non-differentiable (JAX gives `igamma_grad_a_p` no JVP either).
* betainc(a, b, x) = I_x(a, b): d/dx is the Beta(a, b) density; the derivative in a or b raises ValueError.
* bessel_i0e(x) = e^-|x| I0(x): d/dx = i1e(x) - sign(x) i0e(x); bessel_i1e: d/dx = i0e(x) - i1e(x) (sign(x) + 1/x),
  1/2 at 0.
* zeta(x, q), the Hurwitz zeta function sum_n (n + q)^-x: d/dq = -x zeta(x + 1, q); the derivative in x raises.
  (`jax.lax.zeta` has no derivative at all; this is the one `jax.scipy.special.zeta` defines.)
"""

from __future__ import annotations

import numpy as np

from .. import core
from ..interpreters import ad
from . import elementwise as ew
from . import structural as st
from .elementwise import _const, _lift_scalars, _make_binary, _make_unary, _nary, defjvp_broadcasting


def _make_ternary(prim):
    def op(a, b, x):
        a, b, x = _lift_scalars(a, b, x)
        ew._check(prim, a, b, x)
        return prim.bind(a, b, x)
    op.__name__ = prim.name
    return op


def _gamma_density(a, x):
    """x^(a-1) e^-x / Gamma(a), computed in log space."""
    one = _const(x, 1)
    return ew.exp(ew.sub(ew.sub(ew.mul(ew.sub(a, one), ew.log(x)), x), ew.lgamma(a)))


def _full_like(x, v):
    aval = core.get_aval(x)
    return st.full(aval.shape, v, aval.dtype)


def _unsupported(what: str):
    def rule(t, ans, *primals):
        raise ValueError(f"{what} is not supported (as in JAX)")
    return rule


# -- igamma_grad_a / random_gamma_grad: derivatives, not differentiated further ---------------------------------

igamma_grad_a_p = _nary("igamma_grad_a", "realfloat")
igamma_grad_a = _make_binary(igamma_grad_a_p)
igamma_grad_a.__doc__ = """The derivative d/da of the regularized lower incomplete gamma function P(a, x).

Elementwise over a and x of one real floating dtype (scalars broadcast). NaN where a <= 0 or x < 0; 0 at x = 0.
Not differentiable further (as in JAX)."""
ad.defnondifferentiable(igamma_grad_a_p)

random_gamma_grad_p = _nary("random_gamma_grad", "realfloat")


def random_gamma_grad(a, x):
    """d sample / d a for a Gamma(a, 1) sample x held at a fixed quantile (implicit reparameterization:
    -(dP/da)(a, x) / p(x; a), Figurnov et al. 2018). This is the derivative `random.gamma` uses.

    Elementwise over a and x of one real floating dtype (scalars broadcast). NaN where a <= 0 or x < 0; 0 at x = 0.
    In JAX it is a function of lax operations; here it is a primitive. Not differentiable further.
    """
    a, x = _lift_scalars(a, x)
    ew._check(random_gamma_grad_p, a, x)
    return random_gamma_grad_p.bind(a, x)


ad.defnondifferentiable(random_gamma_grad_p)

# -- igamma / igammac -------------------------------------------------------------------------------------------

igamma_p = _nary("igamma", "realfloat")
igamma = _make_binary(igamma_p)
igamma.__doc__ = """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a).

Elementwise over a and x of one real floating dtype (scalars broadcast); NaN where a < 0 or x < 0. Differentiable
in both arguments (d/da through `igamma_grad_a`)."""
defjvp_broadcasting(igamma_p,
                    lambda t, ans, a, x: ew.mul(t, igamma_grad_a(a, x)),
                    lambda t, ans, a, x: ew.mul(t, _gamma_density(a, x)))

igammac_p = _nary("igammac", "realfloat")
igammac = _make_binary(igammac_p)
igammac.__doc__ = """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), computed directly (accurate
where P is close to 1). Elementwise, as `igamma`."""
defjvp_broadcasting(igammac_p,
                    lambda t, ans, a, x: ew.neg(ew.mul(t, igamma_grad_a(a, x))),
                    lambda t, ans, a, x: ew.neg(ew.mul(t, _gamma_density(a, x))))

# -- betainc ----------------------------------------------------------------------------------------------------

regularized_incomplete_beta_p = _nary("regularized_incomplete_beta", "realfloat")
betainc = _make_ternary(regularized_incomplete_beta_p)
betainc.__doc__ = """The regularized incomplete beta function I_x(a, b) (the Beta(a, b) distribution function at x).

Elementwise over a, b and x of one real floating dtype (scalars broadcast); NaN outside a, b > 0, 0 <= x <= 1.
Differentiable in x; the derivative in a or b raises ValueError, as in JAX."""


def _betainc_jvp_x(t, ans, a, b, x):
    one = _const(x, 1)
    log_beta = ew.sub(ew.add(ew.lgamma(a), ew.lgamma(b)), ew.lgamma(ew.add(a, b)))
    log_density = ew.sub(ew.add(ew.mul(ew.sub(a, one), ew.log(x)), ew.mul(ew.sub(b, one), ew.log1p(ew.neg(x)))),
                         log_beta)
    return ew.mul(t, ew.exp(log_density))


defjvp_broadcasting(regularized_incomplete_beta_p,
                    _unsupported("betainc gradient with respect to a"),
                    _unsupported("betainc gradient with respect to b"),
                    _betainc_jvp_x)

# -- scaled modified Bessel functions ---------------------------------------------------------------------------

bessel_i1e_p = _nary("bessel_i1e", "realfloat")
bessel_i1e = _make_unary(bessel_i1e_p)
bessel_i1e.__doc__ = """e^-|x| I1(x), the exponentially scaled modified Bessel function of the first kind of order 1
(elementwise, real floating dtypes; odd in x)."""

bessel_i0e_p = _nary("bessel_i0e", "realfloat")
bessel_i0e = _make_unary(bessel_i0e_p)
bessel_i0e.__doc__ = """e^-|x| I0(x), the exponentially scaled modified Bessel function of the first kind of order 0
(elementwise, real floating dtypes; even in x, 1 at 0)."""
ad.defjvp2(bessel_i0e_p, lambda t, ans, x: ew.mul(t, ew.sub(bessel_i1e(x), ew.mul(ew.sign(x), ans))))


def _bessel_i1e_jvp(t, ans, x):
    # 1/x is cancelled analytically at 0 (the limit is 1/2); keep the unused branch finite so the select does not
    # produce NaN cotangents.
    tiny = ew.le(ew.abs(x), _const(x, np.finfo(core.get_aval(x).dtype).tiny))
    safe = ew.select(tiny, _full_like(x, 1), x)
    slope = ew.sub(bessel_i0e(safe), ew.mul(ans, ew.add(ew.sign(safe), ew.div(_const(x, 1), safe))))
    return ew.mul(t, ew.select(tiny, _full_like(x, 0.5), slope))


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)

# -- Hurwitz zeta -----------------------------------------------------------------------------------------------

zeta_p = _nary("zeta", "realfloat")
zeta = _make_binary(zeta_p)
zeta.__doc__ = """The Hurwitz zeta function zeta(x, q) = sum_{n >= 0} (n + q)^-x (x > 1; NaN for x < 1, inf at 1).

Elementwise over x and q of one real floating dtype (scalars broadcast). Differentiable in q
(d/dq = -x zeta(x + 1, q)); the derivative in x raises ValueError, as in JAX."""
defjvp_broadcasting(zeta_p,
                    _unsupported("zeta gradient with respect to x"),
                    lambda t, ans, x, q: ew.mul(t, ew.neg(ew.mul(x, zeta(ew.add(x, _const(x, 1)), q)))))
