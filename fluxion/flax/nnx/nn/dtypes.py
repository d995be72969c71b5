"""dtype promotion for NNX layers (mirrors ``flax.nnx.nn.dtypes``): NNX passes the arrays as one tuple."""

from __future__ import annotations

from typing import Any

from fluxion.flax.linen.dtypes import canonicalize_dtype as canonicalize_dtype
from fluxion.flax.linen.dtypes import promote_dtype as _promote_many


def promote_dtype(args: tuple, /, *, dtype: Any = None, inexact: bool = True) -> tuple:
    """Casts the non-None arrays of the tuple ``args`` to one dtype (``dtype``, else their promoted inexact type).

    Returns a tuple of the same length, None entries kept.
    """
    return tuple(_promote_many(*args, dtype=dtype, inexact=inexact))
