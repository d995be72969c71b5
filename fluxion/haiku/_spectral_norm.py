"""`SpectralNorm` and `SNParamsTree`: divide a matrix by an estimate of its largest singular value.

The estimate uses power iteration (Miyato et al. 2018, "Spectral Normalization for Generative Adversarial
Networks"): the left vector `u0` (shape `[1, out]`, initialised `RandomNormal()`) is kept as Haiku state and
refined by `n_steps` iterations per call; `sigma = v0 W u0^T` is stored as state `sigma`.
"""

from __future__ import annotations

import re
from typing import Any

import fluxion.numpy as jnp
from fluxion import lax

from . import initializers
from ._base import get_state, set_state
from ._module import Module

__all__ = ["SpectralNorm", "SNParamsTree"]


def _l2_normalize(x: Any, eps: float) -> Any:
    return x * lax.rsqrt(jnp.sum(x * x, keepdims=True) + eps)


class SpectralNorm(Module):
    """Normalizes `value` (rank >= 2; higher ranks are viewed as `[-1, value.shape[-1]]`) by its spectral norm.

    Raises:
        ValueError: rank < 2; rank > 2 with `error_on_non_matrix=True`.
    """

    def __init__(self, eps: float = 1e-4, n_steps: int = 1, name: str | None = None):
        super().__init__(name=name)
        self.eps = eps
        self.n_steps = n_steps

    def __call__(self, value: Any, update_stats: bool = True, error_on_non_matrix: bool = False) -> Any:
        """`value / sigma`, same shape as `value`; with `update_stats` the state `u0`, `sigma` is updated."""
        value = jnp.asarray(value)
        value_shape = value.shape
        if value.ndim <= 1:
            raise ValueError("Spectral normalization is not well defined for scalar or vector inputs.")
        if value.ndim > 2:
            if error_on_non_matrix:
                raise ValueError(f"Input is {value.ndim}D but error_on_non_matrix is True")
            value = jnp.reshape(value, [-1, value.shape[-1]])
        u0 = get_state("u0", [1, value.shape[-1]], value.dtype, init=initializers.RandomNormal())
        v0 = None
        for _ in range(self.n_steps):
            v0 = _l2_normalize(jnp.matmul(u0, value.T), self.eps)
            u0 = _l2_normalize(jnp.matmul(v0, value), self.eps)
        u0 = lax.stop_gradient(u0)
        v0 = lax.stop_gradient(v0)
        sigma = jnp.matmul(jnp.matmul(v0, value), u0.T)[0, 0]
        if update_stats:
            set_state("u0", u0)
            set_state("sigma", sigma)
        return jnp.reshape(value / sigma, value_shape)

    @property
    def u0(self) -> Any:
        return get_state("u0")

    @property
    def sigma(self) -> Any:
        return get_state("sigma", shape=(), init=jnp.ones)


class SNParamsTree(Module):
    """`SpectralNorm` applied to every leaf of a `{module: {name: array}}` tree (one submodule per leaf, named
    after it with `/` -> `__` and `~` -> `_tilde`); leaves matching `ignore_regex` are returned unchanged.
    Every non-ignored leaf must have rank >= 2 (e.g. use `ignore_regex=".*b$"` for biases)."""

    def __init__(self, eps: float = 1e-4, n_steps: int = 1, ignore_regex: str = "", name: str | None = None):
        super().__init__(name=name)
        self.eps = eps
        self.n_steps = n_steps
        self.ignore_regex = ignore_regex

    def __call__(self, tree: Any, update_stats: bool = True) -> dict:
        def maybe_sn(key, value):
            if self.ignore_regex and re.match(self.ignore_regex, key):
                return value
            name = key.replace("/", "__").replace("~", "_tilde")
            return SpectralNorm(self.eps, self.n_steps, name=name)(value, update_stats=update_stats)

        return {module_name: {k: maybe_sn(f"{module_name}/{k}", v) for k, v in bundle.items()}
                for module_name, bundle in tree.items()}
