"""Normalization layers (mirrors ``flax.linen.normalization``).

All layers share two steps:

1. :func:`_compute_stats` computes the mean and variance over the reduction
   axes, in at least float32 by default (``force_float32_reductions``). The
   default "fast" variance is ``max(0, E[x^2] - E[x]^2)``; with
   ``use_fast_variance=False`` it is ``E[(x - E[x])^2]``. With ``axis_name``
   the means are also averaged across devices (``lax.pmean``).
2. :func:`_normalize` computes ``(x - mean) * rsqrt(var + epsilon) * scale +
   bias``, creating the ``scale`` (then ``bias``) parameters of shape
   ``x.shape[feature_axes]``.

=============  ==========================  ===================================
layer          statistics over             parameters / variables
=============  ==========================  ===================================
LayerNorm      ``reduction_axes`` (-1)     params ``scale``, ``bias``
RMSNorm        ``reduction_axes``, no mean params ``scale``
GroupNorm      spatial axes and channels   params ``scale``, ``bias``
               within each group
InstanceNorm   all but batch and features  params ``scale``, ``bias``
BatchNorm      all but ``axis``            params ``scale``, ``bias``;
                                           ``batch_stats`` ``mean``, ``var``
=============  ==========================  ===================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Optional, Union

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.nn import initializers

from .dtypes import canonicalize_dtype
from .module import Module, compact, merge_param

Array = Any
Dtype = Any
Axes = Union[int, Iterable[int]]
Initializer = Callable[..., Any]


def _canonicalize_axes(rank: int, axes: Axes) -> tuple:
    """Non-negative, sorted, de-duplicated axes."""
    if not isinstance(axes, Iterable):
        axes = (axes,)
    return tuple(sorted({ax + rank if ax < 0 else ax for ax in axes}))


def _abs_sq(x: Array) -> Array:
    """``|x|^2`` (real part only for complex inputs)."""
    if jnp.issubdtype(jnp.result_type(x), jnp.complexfloating):
        return lax.square(lax.real(x)) + lax.square(lax.imag(x))
    return lax.square(x)


def _compute_stats(x: Array, axes: Axes, dtype: Optional[Dtype],
                   axis_name: Optional[str] = None, axis_index_groups: Any = None,
                   use_mean: bool = True, use_fast_variance: bool = True,
                   mask: Optional[Array] = None,
                   force_float32_reductions: bool = True) -> tuple[Array, Array]:
    """Returns ``(mean, var)`` of ``x`` over ``axes`` (axes removed).

    Args:
        x: input array.
        axes: axes to reduce.
        dtype: computation dtype (default: ``x.dtype``); promoted to at least
            float32 if ``force_float32_reductions``.
        axis_name: if set, statistics are averaged over this mapped axis.
        axis_index_groups: groups for ``lax.pmean``.
        use_mean: if False (RMSNorm), the mean is zero and var is ``E[x^2]``.
        use_fast_variance: ``E[x^2] - E[x]^2`` (one pass) instead of ``E[(x-m)^2]``.
        mask: boolean array broadcastable to ``x``; only True entries count.
        force_float32_reductions: see above.
    """
    if dtype is None:
        dtype = jnp.result_type(x)
    if force_float32_reductions:
        dtype = jnp.promote_types(dtype, jnp.float32)
    x = jnp.asarray(x, dtype)
    axes = _canonicalize_axes(x.ndim, axes)
    where = None if mask is None else jnp.asarray(mask, dtype=bool)

    def mean(*values):
        means = [jnp.mean(v, axis=axes, where=where) for v in values]
        if axis_name is not None:
            if len(means) > 1:
                stacked = lax.pmean(jnp.stack(means, axis=0), axis_name,
                                    axis_index_groups=axis_index_groups)
                means = [stacked[i] for i in range(len(means))]
            else:
                means = [lax.pmean(means[0], axis_name, axis_index_groups=axis_index_groups)]
        return means if len(means) > 1 else means[0]

    if not use_mean:
        var = mean(_abs_sq(x))
        return jnp.zeros_like(var), var
    if use_fast_variance:
        mu, mu2 = mean(x, _abs_sq(x))
        return mu, jnp.maximum(0.0, mu2 - _abs_sq(mu))
    mu = mean(x)
    return mu, mean(_abs_sq(x - jnp.expand_dims(mu, axes)))


def _normalize(mdl: Module, x: Array, mean: Array, var: Array, reduction_axes: Axes,
               feature_axes: Axes, dtype: Optional[Dtype], param_dtype: Dtype,
               epsilon: float, use_bias: bool, use_scale: bool, bias_init: Initializer,
               scale_init: Initializer, force_float32_reductions: bool = True) -> Array:
    """Normalizes ``x`` with the given statistics and applies ``scale``/``bias`` params.

    ``mean``/``var`` have the reduction axes removed; they are re-inserted to
    broadcast against ``x``. Parameters have shape ``x.shape[feature_axes]``.
    The result dtype is ``dtype`` or the promoted dtype of ``x`` and the params.
    """
    reduction_axes = _canonicalize_axes(x.ndim, reduction_axes)
    feature_axes = _canonicalize_axes(x.ndim, feature_axes)
    feature_shape = [1] * x.ndim
    for ax in feature_axes:
        feature_shape[ax] = x.shape[ax]
    param_shape = tuple(x.shape[ax] for ax in feature_axes)

    mean = jnp.expand_dims(mean, reduction_axes)
    var = jnp.expand_dims(var, reduction_axes)
    y = x - mean
    mul = lax.rsqrt(var + epsilon)
    args = [x]
    if use_scale:
        scale = mdl.param('scale', scale_init, param_shape, param_dtype).reshape(feature_shape)
        if not force_float32_reductions:
            scale = jnp.asarray(scale, param_dtype)
        mul = mul * scale
        args.append(scale)
    y = y * mul
    if use_bias:
        bias = mdl.param('bias', bias_init, param_shape, param_dtype).reshape(feature_shape)
        if not force_float32_reductions:
            bias = jnp.asarray(bias, param_dtype)
        y = y + bias
        args.append(bias)
    return jnp.asarray(y, canonicalize_dtype(*args, dtype=dtype))


class BatchNorm(Module):
    """Batch normalization with running averages in the ``batch_stats`` collection.

    Training (``use_running_average=False``) normalizes with the statistics of
    the current batch and, outside ``init``, updates
    ``mean <- momentum * mean + (1 - momentum) * batch_mean`` (same for
    ``var``); call ``apply(..., mutable=['batch_stats'])`` to receive them.
    Evaluation (``use_running_average=True``) uses the stored averages.

    Attributes:
        use_running_average: may instead be passed at call time.
        axis: feature axis (or axes); statistics are over all other axes.
        momentum: decay of the running averages (default 0.99).
        epsilon: added to the variance (default 1e-5).
        dtype, param_dtype: computation and parameter dtypes.
        use_bias, use_scale, bias_init, scale_init: the affine parameters.
        axis_name: mapped axis (``pmap``/``vmap`` ``axis_name``) to average
            batch statistics over.
        axis_index_groups: device groups for that average.
        use_fast_variance, force_float32_reductions: see :func:`_compute_stats`.
    """

    use_running_average: Optional[bool] = None
    axis: int = -1
    momentum: float = 0.99
    epsilon: float = 1e-5
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    axis_name: Optional[str] = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, use_running_average: Optional[bool] = None, *,
                 mask: Optional[Array] = None) -> Array:
        """Normalizes ``x``; returns an array of the same shape.

        Raises:
            ValueError: if ``use_running_average`` is given both here and as a field,
                or in neither place.
        """
        use_running_average = merge_param('use_running_average', self.use_running_average,
                                          use_running_average)
        feature_axes = _canonicalize_axes(x.ndim, self.axis)
        reduction_axes = tuple(i for i in range(x.ndim) if i not in feature_axes)
        feature_shape = tuple(x.shape[ax] for ax in feature_axes)
        stats_dtype = jnp.float32 if self.force_float32_reductions else self.param_dtype
        ra_mean = self.variable('batch_stats', 'mean',
                                lambda s: jnp.zeros(s, stats_dtype), feature_shape)
        ra_var = self.variable('batch_stats', 'var',
                               lambda s: jnp.ones(s, stats_dtype), feature_shape)
        if use_running_average:
            mean, var = ra_mean.value, ra_var.value
            if not self.force_float32_reductions:
                mean = jnp.asarray(mean, self.param_dtype)
                var = jnp.asarray(var, self.param_dtype)
        else:
            initializing = self.is_initializing()
            mean, var = _compute_stats(
                x, reduction_axes, dtype=self.dtype,
                # No mapped axis exists during init, which usually runs unmapped.
                axis_name=None if initializing else self.axis_name,
                axis_index_groups=self.axis_index_groups,
                use_fast_variance=self.use_fast_variance, mask=mask,
                force_float32_reductions=self.force_float32_reductions)
            if not initializing:
                ra_mean.value = self.momentum * ra_mean.value + (1 - self.momentum) * mean
                ra_var.value = self.momentum * ra_var.value + (1 - self.momentum) * var
        return _normalize(self, x, mean, var, reduction_axes, feature_axes, self.dtype,
                          self.param_dtype, self.epsilon, self.use_bias, self.use_scale,
                          self.bias_init, self.scale_init, self.force_float32_reductions)


class LayerNorm(Module):
    """Layer normalization: statistics over ``reduction_axes`` of each example.

    Attributes:
        epsilon: added to the variance (default 1e-6).
        dtype, param_dtype: computation and parameter dtypes.
        use_bias, use_scale, bias_init, scale_init: the affine parameters.
        reduction_axes: axes of the statistics (default -1).
        feature_axes: axes of the ``scale``/``bias`` parameters (default -1).
        axis_name, axis_index_groups: cross-device averaging.
        use_fast_variance, force_float32_reductions: see :func:`_compute_stats`.
    """

    epsilon: float = 1e-6
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    reduction_axes: Axes = -1
    feature_axes: Axes = -1
    axis_name: Optional[str] = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Optional[Array] = None) -> Array:
        """Normalizes ``x``; returns an array of the same shape."""
        mean, var = _compute_stats(x, self.reduction_axes, self.dtype, self.axis_name,
                                   self.axis_index_groups,
                                   use_fast_variance=self.use_fast_variance, mask=mask,
                                   force_float32_reductions=self.force_float32_reductions)
        return _normalize(self, x, mean, var, self.reduction_axes, self.feature_axes,
                          self.dtype, self.param_dtype, self.epsilon, self.use_bias,
                          self.use_scale, self.bias_init, self.scale_init,
                          self.force_float32_reductions)


class RMSNorm(Module):
    """Root-mean-square normalization: ``x * rsqrt(mean(x^2) + epsilon) * scale``.

    Attributes: as :class:`LayerNorm`, without a bias.
    """

    epsilon: float = 1e-6
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    use_scale: bool = True
    scale_init: Initializer = initializers.ones
    reduction_axes: Axes = -1
    feature_axes: Axes = -1
    axis_name: Optional[str] = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Optional[Array] = None) -> Array:
        """Normalizes ``x``; returns an array of the same shape."""
        mean, var = _compute_stats(x, self.reduction_axes, self.dtype, self.axis_name,
                                   self.axis_index_groups, use_mean=False,
                                   use_fast_variance=self.use_fast_variance, mask=mask,
                                   force_float32_reductions=self.force_float32_reductions)
        return _normalize(self, x, mean, var, self.reduction_axes, self.feature_axes,
                          self.dtype, self.param_dtype, self.epsilon, False,
                          self.use_scale, initializers.zeros, self.scale_init,
                          self.force_float32_reductions)


class GroupNorm(Module):
    """Group normalization: channels split into groups, statistics per example and group.

    Input ``(batch, spatial..., channels)``. Exactly one of ``num_groups``
    and ``group_size`` must be set (pass ``num_groups=None`` to use
    ``group_size``).

    Attributes:
        num_groups: number of groups (default 32).
        group_size: channels per group.
        epsilon, dtype, param_dtype, use_bias, use_scale, bias_init,
        scale_init, axis_name, axis_index_groups, use_fast_variance,
        force_float32_reductions: as :class:`LayerNorm`.
        reduction_axes: axes of the statistics; must end with the channel
            axis (default: all but the first).
    """

    num_groups: Optional[int] = 32
    group_size: Optional[int] = None
    epsilon: float = 1e-6
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    reduction_axes: Optional[Axes] = None
    axis_name: Optional[str] = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Optional[Array] = None) -> Array:
        """Normalizes ``x``; returns an array of the same shape.

        Raises:
            ValueError: if both or neither of ``num_groups``/``group_size`` are
                set, the groups do not divide the channels, or the reduction
                axes do not end with the channel axis.
        """
        if self.reduction_axes is None:
            reduction_axes = list(range(1, x.ndim - 1)) + [x.ndim - 1]
        else:
            reduction_axes = self.reduction_axes
        reduction_axes = _canonicalize_axes(x.ndim, reduction_axes)
        if reduction_axes[-1] != x.ndim - 1:
            raise ValueError('GroupNorm reduction_axes must include the last (channel) axis, '
                             f'got {reduction_axes} for an input of rank {x.ndim}.')
        if (self.num_groups is None) == (self.group_size is None):
            raise ValueError(
                'GroupNorm needs exactly one of num_groups and group_size; to use '
                'group_size, pass num_groups=None to override the default of 32.')
        channels = x.shape[-1]
        if self.group_size is not None:
            if channels % self.group_size:
                raise ValueError(f'Number of channels ({channels}) is not a multiple of the '
                                 f'group size ({self.group_size}).')
            num_groups = channels // self.group_size
        else:
            num_groups = self.num_groups
        if num_groups <= 0 or channels % num_groups:
            raise ValueError(f'Number of groups ({num_groups}) does not divide the number of '
                             f'channels ({channels}).')
        group_size = channels // num_groups
        grouped = tuple(x.shape[:-1]) + (num_groups, group_size)
        if mask is not None:
            mask = mask.reshape(tuple(mask.shape[:-1]) + (num_groups, group_size))
        # Statistics over the non-channel reduction axes and within each group.
        mean, var = _compute_stats(x.reshape(grouped), list(reduction_axes[:-1]) + [-1],
                                   self.dtype, self.axis_name, self.axis_index_groups,
                                   use_fast_variance=self.use_fast_variance, mask=mask,
                                   force_float32_reductions=self.force_float32_reductions)
        mean = jnp.repeat(mean, group_size, axis=-1)
        var = jnp.repeat(var, group_size, axis=-1)
        return _normalize(self, x, mean, var, reduction_axes[:-1], (x.ndim - 1,), self.dtype,
                          self.param_dtype, self.epsilon, self.use_bias, self.use_scale,
                          self.bias_init, self.scale_init, self.force_float32_reductions)


class InstanceNorm(Module):
    """Instance normalization: statistics over all axes but the batch and feature axes.

    Attributes: as :class:`LayerNorm`; ``feature_axes`` (default -1) must not
    include axis 0 (the batch axis).
    """

    epsilon: float = 1e-6
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    use_bias: bool = True
    use_scale: bool = True
    bias_init: Initializer = initializers.zeros
    scale_init: Initializer = initializers.ones
    feature_axes: Axes = -1
    axis_name: Optional[str] = None
    axis_index_groups: Any = None
    use_fast_variance: bool = True
    force_float32_reductions: bool = True

    @compact
    def __call__(self, x: Array, *, mask: Optional[Array] = None) -> Array:
        """Normalizes ``x``; returns an array of the same shape.

        Raises:
            ValueError: if ``feature_axes`` contains the batch axis 0.
        """
        feature_axes = _canonicalize_axes(x.ndim, self.feature_axes)
        if 0 in feature_axes:
            raise ValueError('InstanceNorm feature_axes cannot include axis 0, the batch axis.')
        reduction_axes = [i for i in range(1, x.ndim) if i not in feature_axes]
        mean, var = _compute_stats(x, reduction_axes, self.dtype, self.axis_name,
                                   self.axis_index_groups,
                                   use_fast_variance=self.use_fast_variance, mask=mask,
                                   force_float32_reductions=self.force_float32_reductions)
        return _normalize(self, x, mean, var, reduction_axes, feature_axes, self.dtype,
                          self.param_dtype, self.epsilon, self.use_bias, self.use_scale,
                          self.bias_init, self.scale_init, self.force_float32_reductions)
