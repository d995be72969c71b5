"""`fluxion.random`: counter-based pseudo-random numbers (mirrors `jax.random`), bit-exact with JAX.

(Except where JAX's own values depend on XLA's approximate CPU math: the gamma family (gamma, loggamma, beta,
dirichlet, chisquare, f, t, generalized_normal, ball) follows JAX's recipe and key use exactly, but a fraction of
its draws differ from JAX's in the last bit or two; see `fluxion/_src/random/gamma.py`.)

Keys are explicit values: create one with `PRNGKey(seed)` (uint32[2] data) or `key(seed)` (a typed key array),
derive fresh keys with `split`/`fold_in`, and pass a key to each sampler. The stream layout follows
`fluxion.config.jax_threefry_partitionable` as JAX's does.
"""

from ._src.random.distributions import (bernoulli as bernoulli, bits as bits, categorical as categorical,
                                        cauchy as cauchy, choice as choice, exponential as exponential,
                                        geometric as geometric, gumbel as gumbel, laplace as laplace,
                                        logistic as logistic, lognormal as lognormal, maxwell as maxwell,
                                        multivariate_normal as multivariate_normal, normal as normal,
                                        orthogonal as orthogonal, pareto as pareto, permutation as permutation,
                                        rademacher as rademacher, randint as randint, rayleigh as rayleigh,
                                        triangular as triangular, truncated_normal as truncated_normal,
                                        uniform as uniform, weibull_min as weibull_min)
from ._src.random.discrete import binomial as binomial, multinomial as multinomial, poisson as poisson
from ._src.random.gamma import (ball as ball, beta as beta, chisquare as chisquare, dirichlet as dirichlet,
                                double_sided_maxwell as double_sided_maxwell, f as f, gamma as gamma,
                                generalized_normal as generalized_normal, loggamma as loggamma, t as t, wald as wald)
from ._src.random.prng import (KeyDType as KeyDType, PRNGKey as PRNGKey, PRNGKeyArray as PRNGKeyArray,
                               clone as clone, fold_in as fold_in, key as key, key_data as key_data,
                               key_impl as key_impl, split as split, wrap_key_data as wrap_key_data)


def default_prng_impl() -> str:
    """The name of the default (and only) PRNG implementation, "threefry2x32"."""
    return "threefry2x32"


def key_dtype(impl: str | None = None) -> KeyDType:
    """The dtype of typed key arrays (`key<fry>`).

    Raises:
      ValueError: `impl` names an implementation other than "threefry2x32".
    """
    from ._src.random.prng import KEY_DTYPE, _check_impl
    _check_impl(impl)
    return KEY_DTYPE
