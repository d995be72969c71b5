"""`fluxion.dtypes`: dtype utilities (mirrors `jax.dtypes`)."""

from ._src.dtypes import (bfloat16 as bfloat16, canonicalize_dtype as canonicalize_dtype, float0 as float0,
                          promote_types as promote_types, result_type as result_type)
from ._src.random.prng import KeyDType as _KeyDType
from ._src.random.prng import extended as extended, prng_key as prng_key


def issubdtype(a, b) -> bool:
    """`jnp.issubdtype`, aware of bfloat16 and of PRNG key dtypes (`issubdtype(key.dtype, dtypes.prng_key)`)."""
    from ._src.dtypes import issubdtype as _issubdtype
    if isinstance(a, _KeyDType):
        return isinstance(b, type) and issubclass(prng_key, b)
    if b in (prng_key, extended):
        return False
    return _issubdtype(a, b)


def is_weakly_typed(x) -> bool:
    """True if `x` (an Array, tracer or Python scalar) is weakly typed."""
    from ._src.dtypes import dtype_and_weak
    return dtype_and_weak(x)[1]
