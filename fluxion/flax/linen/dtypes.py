"""Dtype rules shared by the layers (mirrors ``flax.linen.dtypes``).

A layer computes in ``dtype`` when it is given; otherwise in the promoted
dtype of its inputs and parameters (``float32`` inputs with ``float32``
parameters stay ``float32``; ``int32`` inputs with ``float32`` parameters give
``float32``). Parameters are stored in ``param_dtype``.
"""

from __future__ import annotations

from typing import Any, Optional

import fluxion.numpy as jnp

Dtype = Any


def canonicalize_dtype(*args: Any, dtype: Optional[Dtype] = None,
                       inexact: bool = True) -> Dtype:
    """Returns the dtype a layer computes in.

    Args:
        *args: arrays (None entries are ignored).
        dtype: an explicit dtype, returned as is (as a NumPy dtype).
        inexact: if True, a non-floating result type is promoted with float32.

    Returns:
        ``dtype`` if given, else the promoted type of ``args``.

    Raises:
        ValueError: if ``inexact`` and an explicit ``dtype`` is not floating/complex.
    """
    if dtype is None:
        present = [jnp.asarray(x) for x in args if x is not None]
        dtype = jnp.result_type(*present)
        if inexact and not jnp.issubdtype(dtype, jnp.inexact):
            dtype = jnp.promote_types(jnp.float32, dtype)
    if inexact and not jnp.issubdtype(dtype, jnp.inexact):
        raise ValueError(f'dtype must be a floating or complex dtype, got {dtype}.')
    return jnp.dtype(dtype)


def promote_dtype(*args: Any, dtype: Optional[Dtype] = None,
                  inexact: bool = True) -> list:
    """Casts every non-None array of ``args`` to :func:`canonicalize_dtype`'s result.

    Returns:
        A list with the cast arrays, None entries kept in place.
    """
    dtype = canonicalize_dtype(*args, dtype=dtype, inexact=inexact)
    return [None if x is None else jnp.asarray(x, dtype) for x in args]
