"""Helpers shared by the distributions: argument promotion, the loc/scale standardization, support masks."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .... import numpy as jnp
from ... import dtypes
from ...lax import elementwise as ew
from ...numpy.util import promote_args_inexact, promote_dtypes


def promote(name: str, *args: Any) -> list:
    """Promotes to one inexact dtype and broadcasts (JAX's `promote_args_inexact`), naming `name` in errors."""
    return promote_args_inexact(name, *args)


def standardize(x, loc, scale):
    """(x - loc) / scale: every location-scale family evaluates its standard form at this point."""
    return (x - loc) / scale


def neg_inf_outside(inside, value):
    """`value` where `inside` holds and -inf elsewhere (a log-density outside its support)."""
    return jnp.where(inside, value, full_like(value, -np.inf))


def fill_where(cond, value, fill: float):
    return jnp.where(cond, full_like(value, fill), value)


def log_diff_exp(a, b):
    """log(exp(a) - exp(b)) for a >= b, without forming the exponentials."""
    return a + jnp.log(-jnp.expm1(b - a))


def promote_inexact_dtypes(*args: Any) -> list:
    """One common inexact dtype for all arguments, without broadcasting their shapes (for event-shaped
    arguments such as a mean vector and a covariance matrix)."""
    arrays = promote_dtypes(*[jnp.asarray(a) if not isinstance(a, (bool, int, float, complex)) else a
                              for a in args])
    dt, weak = dtypes.dtype_and_weak(arrays[0])
    if not dtypes.is_inexact(dt):
        arrays = [ew._convert_weak(a, dtypes.default_float_dtype(), weak) for a in arrays]
    return arrays


def full_like(x, value: float):
    """An array like `x` (shape, dtype and weak type, which `jnp.full_like` drops) filled with `value`."""
    return jnp.zeros_like(x) + value


def log1mexp(a):
    """log(1 - exp(-a)) for a >= 0: log(-expm1(-a)) below log 2 and log1p(-exp(-a)) above, each accurate on its
    side (Maechler, "Accurately computing log(1 - exp(-|a|))", 2012)."""
    small = a <= math.log(2)
    safe_small = jnp.where(small, a, jnp.ones_like(a))
    safe_large = jnp.where(small, jnp.ones_like(a), a)
    return jnp.where(small, jnp.log(-jnp.expm1(-safe_small)), jnp.log1p(-jnp.exp(-safe_large)))


_METHOD_DOCS = {
    "logpdf": "The log of the probability density",
    "pdf": "The probability density",
    "logpmf": "The log of the probability mass function",
    "pmf": "The probability mass function",
    "cdf": "The cumulative distribution function P(X <= x)",
    "logcdf": "The log of the cumulative distribution function",
    "sf": "The survival function P(X > x) = 1 - cdf",
    "logsf": "The log of the survival function",
    "ppf": "The quantile function (inverse of cdf; NaN for probabilities outside [0, 1])",
    "isf": "The inverse survival function (inverse of sf; NaN for probabilities outside [0, 1])",
    "entropy": "The entropy",
}


def fill_docstrings(namespace: dict, descriptions: dict) -> None:
    """Gives every `<distribution>_<method>` function of `namespace` without a docstring one built from the method
    and the distribution's description (the formulas are in the code next to it)."""
    import inspect
    for name, fn in list(namespace.items()):
        if not callable(fn) or fn.__doc__ or name.startswith("_"):
            continue
        for dist, desc in descriptions.items():
            method = name[len(dist) + 1:]
            if name.startswith(dist + "_") and method in _METHOD_DOCS:
                params = ", ".join(inspect.signature(fn).parameters)
                fn.__doc__ = (f"{_METHOD_DOCS[method]} of {desc}, `{dist}.{method}({params})` as in "
                              f"jax.scipy.stats. Arguments are promoted to one inexact dtype and broadcast.")
                break
