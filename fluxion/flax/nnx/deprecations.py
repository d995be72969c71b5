"""Deprecated aliases of renamed NNX functions (mirrors ``flax.nnx.deprecations``)."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable


def deprecated(new_fn: Callable) -> Callable:
    """A wrapper of ``new_fn`` that emits a ``DeprecationWarning`` naming ``new_fn`` on every call, then calls it.

    The wrapper keeps ``new_fn``'s name, signature and annotations; its
    docstring starts with a deprecation note pointing at ``new_fn``.
    """

    @functools.wraps(new_fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f'This function is deprecated. Use {new_fn.__qualname__} instead.', DeprecationWarning,
                      stacklevel=2)
        return new_fn(*args, **kwargs)

    wrapper.__doc__ = f'Deprecated: use ``{new_fn.__qualname__}`` instead.\n\n' + (new_fn.__doc__ or '')
    return wrapper
