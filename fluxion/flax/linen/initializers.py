"""Initializers (mirrors ``flax.linen.initializers``).

The functions are those of ``fluxion.nn.initializers`` (``jax.nn.initializers``);
``zeros_init()`` and ``ones_init()`` are Flax's factory spellings of ``zeros``
and ``ones``. Every initializer is called as ``init(key, shape, dtype)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluxion.nn.initializers import Initializer as Initializer
from fluxion.nn.initializers import constant as constant
from fluxion.nn.initializers import delta_orthogonal as delta_orthogonal
from fluxion.nn.initializers import glorot_normal as glorot_normal
from fluxion.nn.initializers import glorot_uniform as glorot_uniform
from fluxion.nn.initializers import he_normal as he_normal
from fluxion.nn.initializers import he_uniform as he_uniform
from fluxion.nn.initializers import kaiming_normal as kaiming_normal
from fluxion.nn.initializers import kaiming_uniform as kaiming_uniform
from fluxion.nn.initializers import lecun_normal as lecun_normal
from fluxion.nn.initializers import lecun_uniform as lecun_uniform
from fluxion.nn.initializers import normal as normal
from fluxion.nn.initializers import ones as ones
from fluxion.nn.initializers import orthogonal as orthogonal
from fluxion.nn.initializers import truncated_normal as truncated_normal
from fluxion.nn.initializers import uniform as uniform
from fluxion.nn.initializers import variance_scaling as variance_scaling
from fluxion.nn.initializers import xavier_normal as xavier_normal
from fluxion.nn.initializers import xavier_uniform as xavier_uniform
from fluxion.nn.initializers import zeros as zeros


def zeros_init() -> Callable[..., Any]:
    """Returns the initializer that gives an array of zeros."""
    return zeros


def ones_init() -> Callable[..., Any]:
    """Returns the initializer that gives an array of ones."""
    return ones
