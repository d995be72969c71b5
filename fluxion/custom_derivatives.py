"""`fluxion.custom_derivatives` (mirrors `jax.custom_derivatives`): user-defined derivative rules.

Not here (JAX exports them for its internals): the primitives `custom_jvp_call_p`, `custom_vjp_call_p` and
`remat_opt_p`, `linear_call`, `SymbolicZero` / `zero_from_primal` (fluxion's rules receive instantiated zeros) and
`CustomVJPPrimal` / `custom_vjp_primal_tree_values` (`optimize_remat` is not supported).
"""

from ._src.custom_derivatives import (custom_gradient as custom_gradient, custom_jvp as custom_jvp,
                                      custom_vjp as custom_vjp)
from ._src.staging import closure_convert as closure_convert

__all__ = ["closure_convert", "custom_gradient", "custom_jvp", "custom_vjp"]
