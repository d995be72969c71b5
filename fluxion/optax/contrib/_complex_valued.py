"""Running a real-valued optimizer on complex parameters by splitting them."""

from __future__ import annotations

from typing import Any, NamedTuple

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._base import GradientTransformation, OptState


class SplitRealAndImaginaryArrays(NamedTuple):
    """A complex array stored as its ``real`` and ``imaginary`` parts."""
    real: Any
    imaginary: Any


def _split(x: Any) -> Any:
    if x is not None and _numerics.is_complex(x):
        return SplitRealAndImaginaryArrays(jnp.real(x), jnp.imag(x))
    return x


def _merge(x: Any) -> Any:
    if isinstance(x, SplitRealAndImaginaryArrays):
        return x.real + x.imaginary * 1j
    return x


class SplitRealAndImaginaryState(NamedTuple):
    """State of :func:`split_real_and_imaginary`: the inner state (on split params)."""
    inner_state: OptState


def split_real_and_imaginary(inner: GradientTransformation) -> GradientTransformation:
    """Applies ``inner`` to the real and imaginary parts of complex leaves separately.

    Each complex leaf becomes a ``SplitRealAndImaginaryArrays`` pair for the
    inner transformation, so e.g. Adam's second moment is kept per component
    rather than for :math:`|z|^2`. Real leaves pass through unchanged.

    Returns:
        State ``SplitRealAndImaginaryState(inner_state)``.
    """

    def init_fn(params):
        return SplitRealAndImaginaryState(inner.init(tree_util.tree_map(_split, params)))

    def update_fn(updates, state, params=None):
        split_params = None if params is None else tree_util.tree_map(_split, params)
        new, inner_state = inner.update(tree_util.tree_map(_split, updates), state.inner_state,
                                        split_params)
        merged = tree_util.tree_map(_merge, new,
                                    is_leaf=lambda x: isinstance(x, SplitRealAndImaginaryArrays))
        return merged, SplitRealAndImaginaryState(inner_state)

    return GradientTransformation(init_fn, update_fn)
