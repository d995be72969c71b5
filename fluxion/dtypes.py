"""`fluxion.dtypes`: dtype utilities (mirrors `jax.dtypes`)."""

from ._src.dtypes import (bfloat16 as bfloat16, canonicalize_dtype as canonicalize_dtype, float0 as float0,
                          issubdtype as issubdtype, promote_types as promote_types, result_type as result_type)


def is_weakly_typed(x) -> bool:
    """True if `x` (an Array, tracer or Python scalar) is weakly typed."""
    from ._src.dtypes import dtype_and_weak
    return dtype_and_weak(x)[1]
