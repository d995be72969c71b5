"""Weight reparametrizations of a wrapped layer: WeightNorm and SpectralNorm (mirrors Flax's).

Both wrap another module (``layer_instance``) and, with
:func:`~.transforms.map_variables`, let it see transformed parameters while
its own parameters stay as they are. Their extra variables live in the
wrapper's scope under ``'<layer name>/<param path>/<name>'`` (Flax's names,
slashes included), e.g. ``params/WeightNorm_0/Dense_0/kernel/scale``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

import fluxion.numpy as jnp
from fluxion import lax, random
from fluxion.nn import initializers

from ..traverse_util import flatten_dict, unflatten_dict
from .dtypes import canonicalize_dtype
from .module import Module, compact
from .normalization import Axes, Initializer, _canonicalize_axes
from .transforms import map_variables

Array = Any
Dtype = Any


def _l2_normalize(x: Array, axis: Any = None, eps: float = 1e-12) -> Array:
    """``x / sqrt(sum(x**2 over axis) + eps)``."""
    return x * lax.rsqrt(jnp.sum(x * x, axis=axis, keepdims=True) + eps)


def _map_params(owner: Module, fn: Any, variables: dict) -> dict:
    """Applies ``fn(path string, value)`` to every leaf of ``{collection: tree}``.

    The path string is ``'<layer name>/<names below the collection>'``.
    """
    flat = flatten_dict(variables)
    layer = owner.layer_instance.name
    return unflatten_dict({path: fn('/'.join((layer,) + path[1:]), value)
                           for path, value in flat.items()})


def _run_wrapped(owner: Module, trans_in: Any, mutable: bool, args: tuple, kwargs: dict) -> Any:
    def forward(layer: Module) -> Any:
        return layer(*args, **kwargs)
    return map_variables(forward, trans_in_fn=trans_in, init=owner.is_initializing(),
                         mutable=mutable)(owner.layer_instance)


class WeightNorm(Module):
    """Weight normalization (Salimans & Kingma, 2016, https://arxiv.org/abs/1602.07868).

    Each selected parameter ``w`` of the wrapped layer is replaced by
    ``scale * w / ||w||``, the norm taken over all axes except
    ``feature_axes`` (so each output feature's weight vector has norm
    ``scale``). ``scale`` (shape: the feature axes' sizes) is a parameter of
    this module named ``'<layer>/<param path>/scale'``.

    Attributes:
        layer_instance: the wrapped module (e.g. ``nn.Dense(3)``).
        epsilon: added to the squared norm.
        dtype: output dtype of the normalized weights (default promoted).
        param_dtype: dtype of ``scale``.
        use_scale: learn ``scale`` (else the weights get unit norm).
        scale_init: initializer of ``scale`` (ones).
        feature_axes: axes kept (not normalized over); None normalizes over all.
        variable_filter: a parameter is normalized if any of these strings
            occurs in its path string; empty/None selects all.
    """

    layer_instance: Module
    epsilon: float = 1e-12
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    use_scale: bool = True
    scale_init: Initializer = initializers.ones
    feature_axes: Optional[Axes] = -1
    variable_filter: Optional[Iterable] = frozenset({'kernel'})

    @compact
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the wrapped layer with normalized weights."""
        return _run_wrapped(self, lambda vs: _map_params(self, self._normalize, vs), False,
                            args, kwargs)

    def _normalize(self, path: str, value: Array) -> Array:
        value = jnp.asarray(value)
        if self.variable_filter and not any(name in path for name in self.variable_filter):
            return value
        if self.feature_axes is None:
            features: tuple = ()
        else:
            features = _canonicalize_axes(value.ndim, self.feature_axes)
        reduce = tuple(i for i in range(value.ndim) if i not in features)
        normalized = _l2_normalize(value, axis=reduce, eps=self.epsilon)
        parts = [value]
        if self.use_scale:
            broadcast = [value.shape[i] if i in features else 1 for i in range(value.ndim)]
            scale = self.param(path + '/scale', self.scale_init,
                               [value.shape[i] for i in features], self.param_dtype)
            scale = jnp.reshape(scale, broadcast)
            normalized = normalized * scale
            parts.append(scale)
        return jnp.asarray(normalized, canonicalize_dtype(*parts, dtype=self.dtype))


class SpectralNorm(Module):
    """Spectral normalization (Miyato et al., 2018, https://arxiv.org/abs/1802.05957).

    Each parameter of the wrapped layer with two or more dimensions (viewed
    as a matrix ``[-1, last axis]``) is divided by an estimate ``sigma`` of its
    largest singular value, found with ``n_steps`` of power iteration from a
    stored vector ``u``. ``u`` (``[1, last axis]``, standard normal at init,
    drawn from this module's ``'params'`` stream) and ``sigma`` are kept in
    ``collection_name`` as ``'<layer>/<param path>/u'`` and ``'.../sigma'``;
    they are updated only with ``update_stats=True`` (make the collection
    mutable). No gradient flows through the power iteration.

    Attributes:
        layer_instance: the wrapped module.
        n_steps: power iterations per call (0 disables normalization).
        epsilon: for the vector normalizations.
        dtype, param_dtype: output dtype of the weights, dtype of ``u``/``sigma``.
        error_on_non_matrix: raise for parameters with more than 2 dimensions
            instead of flattening them.
        collection_name: where ``u`` and ``sigma`` live (``'batch_stats'``).

    Raises:
        ValueError: a >2-D parameter with ``error_on_non_matrix``.
    """

    layer_instance: Module
    n_steps: int = 1
    epsilon: float = 1e-12
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    error_on_non_matrix: bool = False
    collection_name: str = 'batch_stats'

    @compact
    def __call__(self, *args: Any, update_stats: bool, **kwargs: Any) -> Any:
        """Calls the wrapped layer with spectrally normalized weights."""
        def normalize(path: str, value: Array) -> Array:
            return self._normalize(path, value, update_stats)
        return _run_wrapped(self, lambda vs: _map_params(self, normalize, vs), True, args, kwargs)

    def _normalize(self, path: str, value: Array, update_stats: bool) -> Array:
        original = jnp.asarray(value)
        if original.ndim <= 1 or self.n_steps < 1:
            return original
        if original.ndim > 2 and self.error_on_non_matrix:
            raise ValueError(f'SpectralNorm: parameter "{path}" has shape {tuple(original.shape)} '
                             '(more than 2 dimensions) and error_on_non_matrix is True.')
        matrix = jnp.reshape(original, (-1, original.shape[-1]))
        col = self.collection_name
        u_name, sigma_name = path + '/u', path + '/sigma'
        key = None if self.has_variable(col, u_name) else self.make_rng('params')
        u_var = self.variable(col, u_name, random.normal, key, (1, matrix.shape[-1]),
                              self.param_dtype)
        sigma_var = self.variable(col, sigma_name, jnp.ones, (), self.param_dtype)
        u = u_var.value
        for _ in range(self.n_steps):
            v = _l2_normalize(jnp.matmul(u, matrix.T), eps=self.epsilon)
            u = _l2_normalize(jnp.matmul(v, matrix), eps=self.epsilon)
        u, v = lax.stop_gradient(u), lax.stop_gradient(v)
        sigma = jnp.matmul(jnp.matmul(v, matrix), u.T)[0, 0]
        normalized = jnp.reshape(matrix / jnp.where(sigma != 0, sigma, 1), original.shape)
        if update_stats:
            u_var.value = u
            sigma_var.value = sigma
        return jnp.asarray(normalized,
                           canonicalize_dtype(original, u, v, sigma, dtype=self.dtype))
