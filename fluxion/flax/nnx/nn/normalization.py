"""Normalization layers: BatchNorm, LayerNorm, RMSNorm, GroupNorm, InstanceNorm (mirrors ``flax.nnx.nn.normalization``).

All compute statistics in at least float32, with the "fast" variance
``E[|x|^2] - |E[x]|^2`` clipped at zero by default (``use_fast_variance=False``
uses ``E[|x - E[x]|^2]``), then ``(x - mean) * rsqrt(var + epsilon) * scale + bias``.
Parameter names (``scale``, ``bias``; BatchNorm's ``mean``/``var`` BatchStats),
shapes, and the key order (scale, then bias) follow Flax NNX 0.12.

References: Ioffe & Szegedy 2015 (BatchNorm); Ba et al. 2016 (LayerNorm);
Zhang & Sennrich 2019 (RMSNorm); Wu & He 2018 (GroupNorm); Ulyanov et al. 2016 (InstanceNorm).

Difference from Flax: ``axis_name`` (cross-device statistics) must be None
outside ``pmap``-style named axes; it is passed to ``lax.pmean``.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax

from ..module import Module
from ..pytreelib import data
from ..rngs import Rngs
from ..variables import BatchStat, Param
from . import initializers
from .dtypes import canonicalize_dtype
from .dtypes import promote_dtype as default_promote_dtype


def _canonicalize_axes(rank: int, axes: Any) -> tuple:
    if not isinstance(axes, (list, tuple)):
        axes = (axes,)
    return tuple(sorted({rank + a if a < 0 else a for a in axes}))


def _abs_sq(x: Any) -> Any:
    if jnp.iscomplexobj(x):
        return lax.square(lax.real(x)) + lax.square(lax.imag(x))
    return lax.square(x)


def _compute_stats(x: Any, axes: Any, dtype: Any, axis_name: Any = None, axis_index_groups: Any = None,
                   use_mean: bool = True, use_fast_variance: bool = True, mask: Any = None) -> tuple:
    """Mean and variance of ``x`` over ``axes`` in at least float32 (the mean is zero when not ``use_mean``)."""
    dtype = jnp.promote_types(jnp.result_type(x) if dtype is None else dtype, jnp.float32)
    x = jnp.asarray(x, dtype)
    axes = _canonicalize_axes(x.ndim, axes)

    def mean(*xs: Any) -> Any:
        mus = tuple(v.mean(axes, where=mask) for v in xs)
        if axis_name is not None:
            mus = tuple(lax.pmean(m, axis_name, axis_index_groups=axis_index_groups) for m in mus)
        return mus if len(xs) > 1 else mus[0]

    if not use_mean:
        var = mean(_abs_sq(x))
        return jnp.zeros_like(var), var
    if use_fast_variance:
        mu, mu2 = mean(x, _abs_sq(x))
        return mu, jnp.maximum(0.0, mu2 - _abs_sq(mu))
    mu = mean(x)
    return mu, mean(_abs_sq(x - jnp.expand_dims(mu, axes)))


def _normalize(x: Any, mean: Any, var: Any, scale: Any, bias: Any, reduction_axes: Any, feature_axes: Any,
               dtype: Any, epsilon: float) -> Any:
    """``(x - mean) * rsqrt(var + epsilon)`` times ``scale`` plus ``bias`` (both shaped along ``feature_axes``)."""
    reduction_axes = _canonicalize_axes(x.ndim, reduction_axes)
    feature_axes = _canonicalize_axes(x.ndim, feature_axes)
    stats_shape = [1 if ax in reduction_axes else d for ax, d in enumerate(x.shape)]
    mean = jnp.reshape(mean, stats_shape)
    var = jnp.reshape(var, stats_shape)
    feature_shape = [d if ax in feature_axes else 1 for ax, d in enumerate(x.shape)]
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if scale is not None:
        scale = jnp.reshape(scale, feature_shape)
        mul = mul * scale
        args.append(scale)
    y = y * mul
    if bias is not None:
        bias = jnp.reshape(bias, feature_shape)
        y = y + bias
        args.append(bias)
    return jnp.asarray(y, canonicalize_dtype(*args, dtype=dtype))


def _scale_bias(self: Any, rngs: Rngs, feature_shape: tuple, use_scale: bool, use_bias: bool, scale_init: Any,
                bias_init: Any, param_dtype: Any, scale_metadata: Any, bias_metadata: Any) -> None:
    """Creates ``scale`` then ``bias`` (each drawing one params key), or None, in Flax's order."""
    self.scale = (Param(scale_init(rngs.params(), feature_shape, param_dtype), **dict(scale_metadata or {}))
                  if use_scale else None)
    self.bias = (Param(bias_init(rngs.params(), feature_shape, param_dtype), **dict(bias_metadata or {}))
                 if use_bias else None)


def _value(v: Any) -> Any:
    return None if v is None else v[...]


class BatchNorm(Module):
    """Batch normalization over all axes except ``axis`` (the feature axis, size ``num_features``).

    In training (``use_running_average=False``) it normalizes with the batch
    statistics and updates the ``mean``/``var`` BatchStats as
    ``momentum * old + (1 - momentum) * batch`` (gradients stopped); with
    ``use_running_average=True`` (``model.eval()``) it uses the stored ones.
    """

    def __init__(self, num_features: int, *, use_running_average: Any = False, axis: int = -1,
                 momentum: float = 0.99, epsilon: float = 1e-5, dtype: Any = None, param_dtype: Any = jnp.float32,
                 use_bias: bool = True, use_scale: bool = True, bias_init: Any = initializers.zeros_init(),
                 scale_init: Any = initializers.ones_init(), axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = default_promote_dtype, rngs: Rngs,
                 bias_metadata: Any = None, scale_metadata: Any = None):
        feature_shape = (num_features,)
        self.mean = BatchStat(jnp.zeros(feature_shape, jnp.float32))
        self.var = BatchStat(jnp.ones(feature_shape, jnp.float32))
        _scale_bias(self, rngs, feature_shape, use_scale, use_bias, scale_init, bias_init, param_dtype,
                    scale_metadata, bias_metadata)
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Any, use_running_average: Any = None, *, mask: Any = None) -> Any:
        """Normalizes ``x``; ``use_running_average`` (if not None) overrides the attribute for this call.

        Raises:
          ValueError: ``x``'s feature axis does not have ``num_features`` entries.
        """
        feature_axes = _canonicalize_axes(x.ndim, self.axis)
        if x.shape[feature_axes[0]] != self.num_features:
            raise ValueError(f'BatchNorm: x has {x.shape[feature_axes[0]]} features on axis {self.axis} '
                             f'(shape {x.shape}) but num_features is {self.num_features}')
        reduction_axes = tuple(i for i in range(x.ndim) if i not in feature_axes)
        use_running_average = self.use_running_average if use_running_average is None else use_running_average
        x, mean, var, scale, bias = self.promote_dtype(
            (x, self.mean[...], self.var[...], _value(self.scale), _value(self.bias)), dtype=self.dtype)
        if not use_running_average:
            mean, var = _compute_stats(x, reduction_axes, dtype=self.dtype, axis_name=self.axis_name,
                                       axis_index_groups=self.axis_index_groups,
                                       use_fast_variance=self.use_fast_variance, mask=mask)
            self.mean[...] = lax.stop_gradient(self.momentum * self.mean[...] + (1 - self.momentum) * mean)
            self.var[...] = lax.stop_gradient(self.momentum * self.var[...] + (1 - self.momentum) * var)
        return _normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon)


class LayerNorm(Module):
    """Layer normalization: statistics over ``reduction_axes`` (default last), scale/bias over ``feature_axes``."""

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_bias: bool = True, use_scale: bool = True,
                 bias_init: Any = initializers.zeros_init(), scale_init: Any = initializers.ones_init(),
                 reduction_axes: Any = -1, feature_axes: Any = -1, axis_name: Any = None,
                 axis_index_groups: Any = None, use_fast_variance: bool = True,
                 promote_dtype: Any = default_promote_dtype, rngs: Rngs, bias_metadata: Any = None,
                 scale_metadata: Any = None):
        _scale_bias(self, rngs, (num_features,), use_scale, use_bias, scale_init, bias_init, param_dtype,
                    scale_metadata, bias_metadata)
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        x, scale, bias = self.promote_dtype((x, _value(self.scale), _value(self.bias)), dtype=self.dtype)
        mean, var = _compute_stats(x, self.reduction_axes, self.dtype, self.axis_name, self.axis_index_groups,
                                   use_fast_variance=self.use_fast_variance, mask=mask)
        return _normalize(x, mean, var, scale, bias, self.reduction_axes, self.feature_axes, self.dtype,
                          self.epsilon)


class RMSNorm(Module):
    """Root-mean-square normalization: ``x * rsqrt(mean(x**2) + epsilon) * scale`` (no mean, no bias)."""

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_scale: bool = True, scale_init: Any = initializers.ones,
                 reduction_axes: Any = -1, feature_axes: Any = -1, axis_name: Any = None,
                 axis_index_groups: Any = None, use_fast_variance: bool = True,
                 promote_dtype: Any = default_promote_dtype, rngs: Rngs, scale_metadata: Any = None):
        _scale_bias(self, rngs, (num_features,), use_scale, False, scale_init, None, param_dtype,
                    scale_metadata, None)
        del self.bias
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Any, mask: Any = None) -> Any:
        x, scale = self.promote_dtype((x, _value(self.scale)), dtype=self.dtype)
        mean, var = _compute_stats(x, self.reduction_axes, self.dtype, self.axis_name, self.axis_index_groups,
                                   use_mean=False, use_fast_variance=self.use_fast_variance, mask=mask)
        return _normalize(x, mean, var, scale, None, self.reduction_axes, self.feature_axes, self.dtype,
                          self.epsilon)


class GroupNorm(Module):
    """Group normalization: channels (last axis) split into ``num_groups`` groups (or groups of ``group_size``).

    Statistics are taken per example and group over ``reduction_axes``
    (default: all axes but the first).

    Raises:
      ValueError: neither or both of ``num_groups``/``group_size`` given, or they do
        not divide ``num_features``.
    """

    def __init__(self, num_features: int, num_groups: Any = 32, group_size: Any = None, *, epsilon: float = 1e-6,
                 dtype: Any = None, param_dtype: Any = jnp.float32, use_bias: bool = True, use_scale: bool = True,
                 bias_init: Any = initializers.zeros_init(), scale_init: Any = initializers.ones_init(),
                 reduction_axes: Any = None, axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = default_promote_dtype, rngs: Rngs,
                 bias_metadata: Any = None, scale_metadata: Any = None):
        self.feature_axis = -1
        if (num_groups is None) == (group_size is None):
            raise ValueError('Either `num_groups` or `group_size` should be specified. If `group_size` is to be '
                             'specified, pass `num_groups=None` as argument to override the default `num_groups` '
                             'value of 32.')
        if group_size is not None:
            if num_features % group_size != 0:
                raise ValueError(f'Number of features ({num_features}) is not multiple of the group size '
                                 f'({group_size}).')
            num_groups = num_features // group_size
        elif num_groups <= 0 or num_features % num_groups != 0:
            raise ValueError(f'Number of groups ({num_groups}) does not divide the number of channels '
                             f'({num_features}).')
        else:
            group_size = num_features // num_groups
        _scale_bias(self, rngs, (num_features,), use_scale, use_bias, scale_init, bias_init, param_dtype,
                    scale_metadata, bias_metadata)
        self.num_features = num_features
        self.num_groups = num_groups
        self.group_size = group_size
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        reduction_axes = (self.reduction_axes if self.reduction_axes is not None
                          else list(range(1, x.ndim - 1)) + [-1])
        reduction_axes = _canonicalize_axes(x.ndim, reduction_axes)
        group_shape = x.shape[:-1] + (self.num_groups, self.group_size)
        if mask is not None:
            mask = jnp.reshape(mask, mask.shape[:-1] + (self.num_groups, self.group_size))
        x, scale, bias = self.promote_dtype((x, _value(self.scale), _value(self.bias)), dtype=self.dtype)
        mean, var = _compute_stats(jnp.reshape(x, group_shape), list(reduction_axes[:-1]) + [-1], self.dtype,
                                   self.axis_name, self.axis_index_groups,
                                   use_fast_variance=self.use_fast_variance, mask=mask)
        mean = jnp.repeat(mean, self.group_size, axis=1)
        var = jnp.repeat(var, self.group_size, axis=1)
        return _normalize(x, mean, var, scale, bias, reduction_axes[:-1], (self.feature_axis,), self.dtype,
                          self.epsilon)


class InstanceNorm(Module):
    """Instance normalization: per example and channel, statistics over the spatial axes (all but first and last)."""

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype: Any = None,
                 param_dtype: Any = jnp.float32, use_bias: bool = True, use_scale: bool = True,
                 bias_init: Any = initializers.zeros_init(), scale_init: Any = initializers.ones_init(),
                 feature_axes: Any = -1, axis_name: Any = None, axis_index_groups: Any = None,
                 use_fast_variance: bool = True, promote_dtype: Any = default_promote_dtype, rngs: Rngs,
                 bias_metadata: Any = None, scale_metadata: Any = None):
        _scale_bias(self, rngs, (num_features,), use_scale, use_bias, scale_init, bias_init, param_dtype,
                    scale_metadata, bias_metadata)
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = promote_dtype

    def __call__(self, x: Any, *, mask: Any = None) -> Any:
        feature_axes = _canonicalize_axes(x.ndim, self.feature_axes)
        if 0 in feature_axes:
            raise ValueError('The channel axes cannot include the leading dimension as this is assumed to be '
                             'the batch axis.')
        reduction_axes = [i for i in range(1, x.ndim) if i not in feature_axes]
        x, scale, bias = self.promote_dtype((x, _value(self.scale), _value(self.bias)), dtype=self.dtype)
        mean, var = _compute_stats(x, reduction_axes, self.dtype, self.axis_name, self.axis_index_groups,
                                   use_fast_variance=self.use_fast_variance, mask=mask)
        return _normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, self.dtype, self.epsilon)


def _l2_normalize(x: Any, axis: Any = None, eps: float = 1e-12) -> Any:
    """``x / sqrt(sum(x**2, axis) + eps)``."""
    return x * lax.rsqrt((x * x).sum(axis=axis, keepdims=True) + eps)


class WeightNorm(Module):
    """Weight normalization of the Variables of ``layer_instance`` selected by ``variable_filter`` (its kernel).

    Each call rewrites every selected parameter, in place, as
    ``scale * w / ||w||`` with the norm taken over all axes but
    ``feature_axes``, then calls the layer.  ``scales`` holds one array per
    selected parameter (shape: the parameter's feature axes), keyed by path.
    Salimans & Kingma 2016, "Weight Normalization".

    Difference from Flax: none in behaviour; like Flax, ``scale_init`` receives
    the ``params`` RngStream itself as its key argument.

    Raises:
      RuntimeError: the layer gained a selected parameter after construction.
    """

    def __init__(self, layer_instance: Module, *, feature_axes: Any = -1, use_scale: bool = True,
                 scale_init: Any = initializers.ones, epsilon: float = 1e-12, dtype: Any = None,
                 param_dtype: Any = jnp.float32, variable_filter: Any = None,
                 promote_dtype: Any = default_promote_dtype, rngs: Rngs):
        from ..filters import PathContains, to_predicate
        from ..graph import state as graph_state
        from ..state import to_flat_state
        self.layer_instance = layer_instance
        self.feature_axes = () if feature_axes is None else feature_axes
        self.use_scale = use_scale
        self.scale_init = scale_init
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.variable_filter = to_predicate(PathContains('kernel') if variable_filter is None else variable_filter)
        self.promote_dtype = promote_dtype
        self.scales = None
        if use_scale:
            scales = {}
            for path, param in to_flat_state(graph_state(layer_instance, Param)):
                if self.variable_filter(path, param):
                    axes = _canonicalize_axes(param.ndim, self.feature_axes)
                    scales[path] = scale_init(rngs['params'], tuple(param.shape[ax] for ax in axes))
            self.scales = data(scales)

    def _normalize_in_place(self, path: tuple, param: Any) -> None:
        if not self.variable_filter(path, param):
            return
        feature_axes = _canonicalize_axes(param.ndim, self.feature_axes)
        reduction_axes = tuple(i for i in range(param.ndim) if i not in feature_axes)
        value = _l2_normalize(param[...], axis=reduction_axes, eps=self.epsilon)
        cast_args = [param[...]]
        if self.use_scale:
            if path not in self.scales:
                raise RuntimeError(f'Could not find the scale corresponding to the param {path} in scales dict. '
                                   'Parameters of the layer_instance should not change!')
            scale = self.scales[path]
            if len(feature_axes) < param.ndim:
                shape = [param.shape[ax] if ax in feature_axes else 1 for ax in range(param.ndim)]
                scale = jnp.reshape(scale, shape)
            value = value * scale
            cast_args.append(scale)
        param.set_value(jnp.asarray(value, canonicalize_dtype(*cast_args, dtype=self.dtype)))

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        from ..graph import state as graph_state
        from ..state import to_flat_state
        for path, param in to_flat_state(graph_state(self.layer_instance)):
            self._normalize_in_place(path, param)
        return self.layer_instance(x, *args, **kwargs)


class SpectralNorm(Module):
    """Spectral normalization of ``layer_instance``'s Params: each (at least 2-D) parameter is divided, in place,
    by its largest singular value estimated by ``n_steps`` of power iteration before the layer is called.

    Parameters of more than two dimensions are viewed as ``(-1, last_dim)``
    matrices (or rejected with ``error_on_non_matrix``).  ``batch_stats`` holds,
    per parameter path, BatchStats ``path + ('u',)`` (the ``(1, last_dim)``
    iterate, normal-initialised with one params key) and ``path + ('sigma',)``;
    they are updated when ``update_stats`` (default: ``not use_running_average``).
    Miyato et al. 2018, "Spectral Normalization for Generative Adversarial Networks".

    Raises:
      ValueError: a parameter of more than two dimensions with ``error_on_non_matrix``;
        a parameter without batch stats (the layer changed after construction).
    """

    def __init__(self, layer_instance: Module, *, n_steps: int = 1, epsilon: float = 1e-12, dtype: Any = None,
                 param_dtype: Any = jnp.float32, error_on_non_matrix: bool = False, update_stats: bool = True,
                 rngs: Rngs):
        from ..graph import state as graph_state
        from ..state import to_flat_state
        self.layer_instance = layer_instance
        self.n_steps = n_steps
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.error_on_non_matrix = error_on_non_matrix
        self.use_running_average = not update_stats
        batch_stats: dict = {}
        for path, param in to_flat_state(graph_state(layer_instance, Param)):
            matrix = self._as_matrix(param[...])
            if matrix is None:
                continue
            key = rngs.params()
            batch_stats[path + ('u',)] = BatchStat(initializers.normal()(key, (1, matrix.shape[-1]), param_dtype))
            batch_stats[path + ('sigma',)] = BatchStat(initializers.ones(key, (), param_dtype))
        self.batch_stats = data(batch_stats)

    def _as_matrix(self, value: Any) -> Any:
        if value.ndim <= 1 or self.n_steps < 1:
            return None
        if value.ndim > 2:
            if self.error_on_non_matrix:
                raise ValueError(f'Layer instance parameter is {value.ndim}D but error_on_non_matrix is True')
            return jnp.reshape(value, (-1, value.shape[-1]))
        return value

    def __call__(self, x: Any, update_stats: Any = None) -> Any:
        from ..graph import state as graph_state
        from ..state import to_flat_state
        update_stats = (not self.use_running_average) if update_stats is None else update_stats
        for path, param in to_flat_state(graph_state(self.layer_instance, Param)):
            self._normalize_in_place(path, param, update_stats)
        return self.layer_instance(x)

    def _normalize_in_place(self, path: tuple, variable: Any, update_stats: bool) -> None:
        shape = variable.shape
        w = self._as_matrix(variable[...])
        if w is None:
            return
        for suffix in ('u', 'sigma'):
            if path + (suffix,) not in self.batch_stats:
                raise ValueError(f'Could not find the path for {suffix} batch stat corresponding to the param '
                                 f'{path} in the batch stats dict. Parameters of the layer_instance should not '
                                 'change!')
        u = self.batch_stats[path + ('u',)][...]
        v = None
        for _ in range(self.n_steps):
            v = _l2_normalize(jnp.matmul(u, w.T), eps=self.epsilon)
            u = _l2_normalize(jnp.matmul(v, w), eps=self.epsilon)
        u = lax.stop_gradient(u)
        v = lax.stop_gradient(v)
        sigma = jnp.matmul(jnp.matmul(v, w), u.T)[0, 0]
        w = jnp.reshape(w / jnp.where(sigma != 0, sigma, 1), shape)
        if update_stats:
            self.batch_stats[path + ('u',)][...] = u
            self.batch_stats[path + ('sigma',)][...] = sigma
        variable[...] = jnp.asarray(w, canonicalize_dtype(w, u, v, sigma, dtype=self.dtype))
