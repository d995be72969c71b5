"""Apply a function to inputs whose leading axes are merged into one (mirrors ``flax.linen.BatchApply``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import numpy as np

import fluxion.numpy as jnp
from fluxion import tree_util

__all__ = ['BatchApply']


def _first_mergeable(num_dims: int, args: tuple, kwargs: dict) -> Optional[Any]:
    for leaf in tree_util.tree_leaves((args, kwargs)):
        if jnp.ndim(leaf) >= num_dims:
            return leaf
    return None


def _merge(x: Any, num_dims: int) -> Any:
    if jnp.ndim(x) < num_dims:
        return x
    shape = jnp.shape(x)
    return jnp.reshape(x, (int(np.prod(shape[:num_dims])),) + tuple(shape[num_dims:]))


class BatchApply:
    """Calls ``f`` with the first ``num_dims`` axes of every input merged into one, then splits them back.

    For example a ``[time, batch, features]`` input becomes ``[time * batch,
    features]`` for ``f`` (a module or function that expects one batch axis),
    and each output ``[time * batch, ...]`` is reshaped to ``[time, batch,
    ...]``. Inputs with fewer than ``num_dims`` axes are passed unchanged. The
    leading shape comes from the first input leaf (args, then kwargs) with
    at least ``num_dims`` axes.

    Raises (when called):
        ValueError: no input has ``num_dims`` axes.
    """

    def __init__(self, f: Callable[..., Any], num_dims: int = 2):
        self._f = f
        self.num_dims = num_dims

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        example = _first_mergeable(self.num_dims, args, kwargs)
        if example is None:
            raise ValueError(f'BatchApply needs at least one input with at least '
                             f'{self.num_dims} axes.')
        lead = tuple(jnp.shape(example)[:self.num_dims])
        args, kwargs = tree_util.tree_map(lambda x: _merge(x, self.num_dims), (args, kwargs))
        out = self._f(*args, **kwargs)
        return tree_util.tree_map(lambda y: jnp.reshape(y, lead + tuple(jnp.shape(y)[1:])), out)

