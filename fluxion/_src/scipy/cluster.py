"""`fluxion.scipy.cluster.vq`: vector quantization (mirrors `jax.scipy.cluster.vq`)."""

from __future__ import annotations

from typing import Any

from ... import numpy as jnp
from .. import dtypes


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """Assigns each observation to its nearest code by Euclidean distance.

    `obs` has shape (M, N) (or (M,): scalar observations) and `code_book` (K, N) (or (K,)). Returns `(code, dist)`:
    `code` (M,) the index of the nearest code (the first one on ties) in the default integer dtype, `dist` (M,) the
    distance to it, in the promoted inexact dtype. `check_finite` is accepted and ignored (as in JAX: a traced value
    cannot be checked). `dist` is differentiable almost everywhere.

    Raises:
      ValueError: if the ranks differ or are not 1 or 2.
    """
    del check_finite
    obs, code_book = jnp.asarray(obs), jnp.asarray(code_book)
    dt = jnp.result_type(obs, code_book)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float_dtype()
    obs, code_book = obs.astype(dt), code_book.astype(dt)
    if obs.ndim != code_book.ndim:
        raise ValueError(f"vq: obs and code_book must have the same rank, got shapes {obs.shape} and "
                         f"{code_book.shape}")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"vq: obs and code_book must be 1-D or 2-D, got shapes {obs.shape} and {code_book.shape}")
    dists = jnp.sqrt(jnp.sum(jnp.square(obs[:, None, :] - code_book[None, :, :]), axis=-1))
    code = jnp.argmin(dists, axis=-1)
    return code, jnp.take_along_axis(dists, code[:, None], axis=-1)[:, 0]
