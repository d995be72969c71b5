"""Linear layers: Linear, LinearGeneral, Einsum, Conv, ConvTranspose, Embed (mirrors ``flax.nnx.nn.linear``).

Parameter names, shapes, default initializers and the order in which keys are
drawn from ``rngs.params()`` (kernel first, then bias) follow Flax NNX 0.12, so
the same ``Rngs`` seed gives the same values:

==============  =========================================  =============================
layer           ``kernel`` / ``embedding`` shape            default init
==============  =========================================  =============================
Linear          ``(in_features, out_features)``             lecun_normal, bias zeros
LinearGeneral   ``batch + in_features + out_features``      lecun_normal on the flat
                                                           ``(prod(batch+in), prod(out))``
Einsum          ``kernel_shape``                            lecun_normal, bias zeros
Conv            ``kernel_size + (in // groups, out)``        lecun_normal, bias zeros
ConvTranspose   ``kernel_size + (in, out)``                 lecun_normal, bias zeros
Embed           ``(num_embeddings, features)``              variance_scaling(1, fan_in,
                                                           normal, out_axis=0)
==============  =========================================  =============================

Differences from Flax: ``out_sharding`` arguments are accepted and ignored (one
device); ``dot_general_cls``/``conv_general_dilated_cls`` factories are
supported as in Flax.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

from ..module import Module
from ..rngs import Rngs
from ..variables import Param
from . import initializers
from .dtypes import promote_dtype as default_promote_dtype

default_kernel_init = initializers.lecun_normal()
default_bias_init = initializers.zeros_init()
default_embed_init = initializers.variance_scaling(1.0, 'fan_in', 'normal', out_axis=0)


def _canonicalize_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, Iterable) else (x,)


def _normalize_axes(axes: tuple, ndim: int) -> tuple:
    return tuple(sorted(ax if ax >= 0 else ndim + ax for ax in axes))


def _check_rngs(rngs: Any, layer: str) -> None:
    if not isinstance(rngs, Rngs):
        raise TypeError(f'{layer}: rngs must be an nnx.Rngs (keyword argument), got {type(rngs).__name__}')


def _metadata(m: Any) -> dict:
    return dict(m or {})


class LinearGeneral(Module):
    """A linear map contracting the input axes ``axis`` (sizes ``in_features``) to ``out_features``.

    ``batch_axis`` (``{axis: size}``, leading consecutive axes from 0) gives a
    separate kernel per batch index.  Output shape: the non-contracted input axes
    followed by ``out_features``.

    Raises:
      ValueError: ``in_features`` and ``axis`` have different lengths, or the
        batch axes are not consecutive leading axes.
    """

    def __init__(self, in_features: Any, out_features: Any, *, axis: Any = -1, batch_axis: Any = None,
                 use_bias: bool = True, dtype: Any = None, param_dtype: Any = jnp.float32,
                 kernel_init: Any = default_kernel_init, bias_init: Any = default_bias_init,
                 precision: Any = None, dot_general: Any = lax.dot_general, dot_general_cls: Any = None,
                 promote_dtype: Any = default_promote_dtype, preferred_element_type: Any = None,
                 rngs: Rngs, kernel_metadata: Any = None, bias_metadata: Any = None):
        _check_rngs(rngs, 'LinearGeneral')
        self.in_features = _canonicalize_tuple(in_features)
        self.out_features = _canonicalize_tuple(out_features)
        self.axis = _canonicalize_tuple(axis)
        self.batch_axis = dict(batch_axis or {})
        if len(self.in_features) != len(self.axis):
            raise ValueError(f'in_features and axis must have the same length. '
                             f'Got {self.in_features} and {self.axis}.')
        if self.batch_axis:
            dims = tuple(self.batch_axis)
            if set(dims) != set(range(max(dims) + 1)):
                raise ValueError(f'batch_dims {dims} must be consecutive leading dimensions starting from 0.')
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.dot_general_cls = dot_general_cls
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        n_batch, n_in = len(self.batch_axis), len(self.in_features)
        batch_shape = tuple(self.batch_axis.values())
        kernel_shape = (*batch_shape, *self.in_features, *self.out_features)
        # Flax initialises the kernel as a 2-D (fan_in, fan_out) matrix and reshapes: fans then match Dense.
        flat = (int(np.prod(kernel_shape[:n_batch + n_in])), int(np.prod(self.out_features)))
        self.kernel = Param(jnp.reshape(kernel_init(rngs.params(), flat, param_dtype), kernel_shape),
                            **_metadata(kernel_metadata))
        if use_bias:
            bias_shape = (*batch_shape, *self.out_features)
            bias = bias_init(rngs.params(), (int(np.prod(bias_shape)),), param_dtype)
            self.bias = Param(jnp.reshape(bias, bias_shape), **_metadata(bias_metadata))
        else:
            self.bias = None

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        ndim = inputs.ndim
        axis = _normalize_axes(self.axis, ndim)
        batch_axis = _normalize_axes(tuple(self.batch_axis), ndim)
        n_batch = len(self.batch_axis)
        expanded_batch_shape = tuple(inputs.shape[ax] if ax in batch_axis else 1
                                     for ax in range(ndim) if ax not in axis)
        batch_ind = tuple(range(n_batch))
        contract_ind = tuple(range(n_batch, len(axis) + n_batch))
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel[...], None if self.bias is None else self.bias[...]), dtype=self.dtype)
        dot = self.dot_general_cls() if self.dot_general_cls is not None else self.dot_general
        kwargs = {} if self.preferred_element_type is None else {'preferred_element_type': self.preferred_element_type}
        out = dot(inputs, kernel, ((axis, contract_ind), (batch_axis, batch_ind)), precision=self.precision, **kwargs)
        if bias is not None:
            out = out + jnp.reshape(bias, (*expanded_batch_shape, *self.out_features))
        return out


class Linear(Module):
    """``y = x @ kernel + bias`` over the last axis: ``(..., in_features) -> (..., out_features)``.

    Parameters ``kernel`` ``(in_features, out_features)`` and (with ``use_bias``)
    ``bias`` ``(out_features,)``, both ``param_dtype``; computation in ``dtype``
    (default: promoted from input and parameters).
    """

    def __init__(self, in_features: int, out_features: int, *, use_bias: bool = True, dtype: Any = None,
                 param_dtype: Any = jnp.float32, precision: Any = None, kernel_init: Any = default_kernel_init,
                 bias_init: Any = default_bias_init, dot_general: Any = lax.dot_general,
                 promote_dtype: Any = default_promote_dtype, preferred_element_type: Any = None, rngs: Rngs,
                 kernel_metadata: Any = None, bias_metadata: Any = None):
        _check_rngs(rngs, 'Linear')
        self.kernel = Param(kernel_init(rngs.params(), (in_features, out_features), param_dtype),
                            **_metadata(kernel_metadata))
        self.bias = (Param(bias_init(rngs.params(), (out_features,), param_dtype), **_metadata(bias_metadata))
                     if use_bias else None)
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        if inputs.shape[-1] != self.in_features:
            raise ValueError(f'Linear: inputs last axis has size {inputs.shape[-1]} but in_features is '
                             f'{self.in_features} (inputs shape {inputs.shape})')
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel[...], None if self.bias is None else self.bias[...]), dtype=self.dtype)
        kwargs = {} if self.preferred_element_type is None else {'preferred_element_type': self.preferred_element_type}
        y = self.dot_general(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())), precision=self.precision,
                             **kwargs)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


def _parse_einsum(einsum_str: str) -> tuple[str, str, str]:
    """Splits an explicit two-operand equation, replacing ``...`` by unused letters (rank of lhs known later)."""
    lhs_rhs, out = einsum_str.split('->')
    lhs, rhs = lhs_rhs.split(',')
    return lhs, rhs, out


class Einsum(Module):
    """``jnp.einsum(einsum_str, inputs, kernel) + bias`` with a learned ``kernel`` of shape ``kernel_shape``.

    The equation must be explicit (``'...->...'``) with exactly two operands;
    give it at construction or per call (not both missing).  The bias (shape
    ``bias_shape``) is broadcast onto the kernel axes kept in the output.

    Raises:
      ValueError: the equation is missing, not explicit or has other than two operands.
    """

    def __init__(self, einsum_str: Any, kernel_shape: Sequence[int], bias_shape: Any = None, *,
                 dtype: Any = None, param_dtype: Any = jnp.float32, precision: Any = None,
                 kernel_init: Any = default_kernel_init, bias_init: Any = default_bias_init,
                 promote_dtype: Any = default_promote_dtype, einsum_op: Any = jnp.einsum,
                 preferred_element_type: Any = None, rngs: Rngs, kernel_metadata: Any = None,
                 bias_metadata: Any = None):
        _check_rngs(rngs, 'Einsum')
        if einsum_str is not None:
            einsum_str = einsum_str.replace(' ', '')
            self._einsum_str_check(einsum_str)
        self.kernel = Param(kernel_init(rngs.params(), tuple(kernel_shape), param_dtype), **_metadata(kernel_metadata))
        self.bias = (Param(bias_init(rngs.params(), tuple(bias_shape), param_dtype), **_metadata(bias_metadata))
                     if bias_shape is not None else None)
        self.einsum_str = einsum_str
        self.kernel_shape = tuple(kernel_shape)
        self.bias_shape = bias_shape
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.promote_dtype = promote_dtype
        self.einsum_op = einsum_op
        self.preferred_element_type = preferred_element_type

    @staticmethod
    def _einsum_str_check(einsum_str: str) -> None:
        if '->' not in einsum_str:
            raise ValueError('`einsum_str` equation must be explicit and include "->".')
        if einsum_str.count(',') != 1:
            raise ValueError(f'`einsum_str` equation must have exactly two operands and therefore, exactly one '
                             f'comma character, instead of {einsum_str.count(",")}')

    def __call__(self, inputs: Any, einsum_str: Any = None, out_sharding: Any = None) -> Any:
        einsum_str = einsum_str if einsum_str is not None else self.einsum_str
        if einsum_str is None:
            raise ValueError('No `einsum_str` argument was provided to Einsum as either a __call__ argument, '
                             'or class attribute.')
        einsum_str = einsum_str.replace(' ', '')
        self._einsum_str_check(einsum_str)
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel[...], None if self.bias is None else self.bias[...]), dtype=self.dtype)
        kwargs = {} if self.preferred_element_type is None else {'preferred_element_type': self.preferred_element_type}
        y = self.einsum_op(einsum_str, inputs, kernel, precision=self.precision, **kwargs)
        if bias is not None:
            y = y + jnp.reshape(bias, self._bias_broadcast_shape(einsum_str, inputs.ndim))
        return y

    def _bias_broadcast_shape(self, einsum_str: str, lhs_ndim: int) -> list[int]:
        lhs, rhs, out = _parse_einsum(einsum_str)
        if '...' in lhs or '...' in out:
            used = set(lhs + rhs + out)
            free = [c for c in string.ascii_letters if c not in used]
            n_ellipsis = lhs_ndim - (len(lhs) - 3)
            fill = ''.join(free[:n_ellipsis])
            lhs, out = lhs.replace('...', fill), out.replace('...', fill)
        rhs_pos = {c: i for i, c in enumerate(rhs)}
        return [self.kernel_shape[rhs_pos[c]] if c in rhs_pos else 1 for c in out]


def canonicalize_padding(padding: Any, rank: int) -> Any:
    """``'SAME'``-style strings pass through; an int or per-axis ints/pairs become ``[(lo, hi)] * rank``.

    Raises:
      ValueError: any other spelling.
    """
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, Sequence) and len(padding) == rank:
        pads = []
        for p in padding:
            if isinstance(p, int):
                pads.append((p, p))
            elif isinstance(p, tuple) and len(p) == 2:
                pads.append(p)
            else:
                break
        if len(pads) == rank:
            return pads
    raise ValueError(f'Invalid padding format: {padding}, should be str, int, or a sequence of len {rank} where '
                     f'each element is an int or pair of ints.')


def _conv_dimension_numbers(input_shape: tuple) -> Any:
    """Channels-last lhs/out and ``(spatial..., in, out)`` kernel layouts for ``lax.conv_general_dilated``."""
    ndim = len(input_shape)
    lhs_spec = (0, ndim - 1) + tuple(range(1, ndim - 1))
    rhs_spec = (ndim - 1, ndim - 2) + tuple(range(0, ndim - 2))
    return lax.ConvDimensionNumbers(lhs_spec, rhs_spec, lhs_spec)


def _broadcast_spatial(x: Any, n: int) -> tuple:
    if x is None:
        x = 1
    return (x,) * n if isinstance(x, int) else tuple(x)


class _ConvBase(Module):
    """Shared input handling: flatten extra batch axes (or add a missing one) around the convolution."""

    def _flatten_batch(self, inputs: Any) -> tuple[Any, Any]:
        n_batch = inputs.ndim - (len(self.kernel_size) + 1)
        if n_batch != 1:
            batch_shape = inputs.shape[:n_batch]
            return jnp.reshape(inputs, (-1,) + inputs.shape[n_batch:]), batch_shape
        return inputs, None

    def _check_mask(self) -> None:
        if self.mask is not None and self.mask.shape != self.kernel_shape:
            raise ValueError(f'Mask needs to have the same shape as weights. '
                             f'Shapes are: {self.mask.shape}, {self.kernel_shape}')


class Conv(_ConvBase):
    """An N-d convolution over channels-last inputs ``(*batch, *spatial, in_features)``.

    ``kernel_size`` (int or tuple) sets the spatial rank; ``padding`` is
    ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, ``'REFLECT'``, ``'CAUSAL'`` (1-D only),
    an int or per-axis pairs; ``feature_group_count`` groups channels;
    ``mask`` (kernel-shaped) multiplies the kernel.  Parameters ``kernel``
    ``kernel_size + (in_features // feature_group_count, out_features)`` and ``bias`` ``(out_features,)``.

    Raises:
      ValueError: ``in_features`` not divisible by ``feature_group_count``; a mask
        of the wrong shape; ``'CAUSAL'`` padding with a rank above 1.
    """

    def __init__(self, in_features: int, out_features: int, kernel_size: Any, strides: Any = 1, *,
                 padding: Any = 'SAME', input_dilation: Any = 1, kernel_dilation: Any = 1,
                 feature_group_count: int = 1, use_bias: bool = True, mask: Any = None, dtype: Any = None,
                 param_dtype: Any = jnp.float32, precision: Any = None, kernel_init: Any = default_kernel_init,
                 bias_init: Any = default_bias_init, conv_general_dilated: Any = lax.conv_general_dilated,
                 promote_dtype: Any = default_promote_dtype, preferred_element_type: Any = None, rngs: Rngs,
                 kernel_metadata: Any = None, bias_metadata: Any = None):
        _check_rngs(rngs, 'Conv')
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        if in_features % feature_group_count != 0:
            raise ValueError(f'Conv: in_features ({in_features}) must be divisible by feature_group_count '
                             f'({feature_group_count})')
        self.kernel_shape = kernel_size + (in_features // feature_group_count, out_features)
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype), **_metadata(kernel_metadata))
        self.bias = (Param(bias_init(rngs.params(), (out_features,), param_dtype), **_metadata(bias_metadata))
                     if use_bias else None)
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self.input_dilation = input_dilation
        self.kernel_dilation = kernel_dilation
        self.feature_group_count = feature_group_count
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.conv_general_dilated = conv_general_dilated
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        n = len(self.kernel_size)
        inputs, batch_shape = self._flatten_batch(inputs)
        strides = _broadcast_spatial(self.strides, n)
        input_dilation = _broadcast_spatial(self.input_dilation, n)
        kernel_dilation = _broadcast_spatial(self.kernel_dilation, n)
        padding = canonicalize_padding(self.padding, n)
        if padding in ('CIRCULAR', 'REFLECT'):
            dilated = [(k - 1) * d + 1 for k, d in zip(self.kernel_size, kernel_dilation)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
            inputs = jnp.pad(inputs, pads, mode={'CIRCULAR': 'wrap', 'REFLECT': 'reflect'}[padding])
            padding = 'VALID'
        elif padding == 'CAUSAL':
            if n != 1:
                raise ValueError('Causal padding is only implemented for 1D convolutions.')
            inputs = jnp.pad(inputs, [(0, 0), (kernel_dilation[0] * (self.kernel_size[0] - 1), 0), (0, 0)])
            padding = 'VALID'
        self._check_mask()
        kernel = self.kernel[...]
        if self.mask is not None:
            kernel = kernel * self.mask
        inputs, kernel, bias = self.promote_dtype(
            (inputs, kernel, None if self.bias is None else self.bias[...]), dtype=self.dtype)
        kwargs = {} if self.preferred_element_type is None else {'preferred_element_type': self.preferred_element_type}
        y = self.conv_general_dilated(inputs, kernel, strides, padding, lhs_dilation=input_dilation,
                                      rhs_dilation=kernel_dilation,
                                      dimension_numbers=_conv_dimension_numbers(inputs.shape),
                                      feature_group_count=self.feature_group_count, precision=self.precision,
                                      **kwargs)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + bias.shape)
        if batch_shape is not None:
            y = jnp.reshape(y, batch_shape + y.shape[1:])
        return y


class ConvTranspose(_ConvBase):
    """A transposed ("deconvolution") N-d convolution, as ``lax.conv_transpose``, channels-last.

    Parameters ``kernel`` ``kernel_size + (in_features, out_features)`` (or
    ``(out, in)`` when ``transpose_kernel``) and ``bias`` ``(out_features,)``.
    ``'CIRCULAR'`` padding wraps the full transposed output back onto
    ``input_size * stride`` positions, as Flax does.

    Raises:
      ValueError: a mask of the wrong shape.
    """

    def __init__(self, in_features: int, out_features: int, kernel_size: Any, strides: Any = None, *,
                 padding: Any = 'SAME', kernel_dilation: Any = None, use_bias: bool = True, mask: Any = None,
                 dtype: Any = None, param_dtype: Any = jnp.float32, precision: Any = None,
                 kernel_init: Any = default_kernel_init, bias_init: Any = default_bias_init,
                 transpose_kernel: bool = False, promote_dtype: Any = default_promote_dtype,
                 preferred_element_type: Any = None, rngs: Rngs, kernel_metadata: Any = None,
                 bias_metadata: Any = None):
        _check_rngs(rngs, 'ConvTranspose')
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.kernel_size = kernel_size
        self.in_features = in_features
        self.out_features = out_features
        self.strides = strides
        self.padding = padding
        self.kernel_dilation = kernel_dilation
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.transpose_kernel = transpose_kernel
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        self.kernel_shape = kernel_size + ((out_features, in_features) if transpose_kernel
                                           else (in_features, out_features))
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype), **_metadata(kernel_metadata))
        self.bias = (Param(bias_init(rngs.params(), (out_features,), param_dtype), **_metadata(bias_metadata))
                     if use_bias else None)

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        n = len(self.kernel_size)
        inputs, batch_shape = self._flatten_batch(inputs)
        strides = _broadcast_spatial(self.strides, n)
        kernel_dilation = _broadcast_spatial(self.kernel_dilation, n)
        self._check_mask()
        kernel = self.kernel[...]
        if self.mask is not None:
            kernel = kernel * self.mask
        padding = canonicalize_padding(self.padding, n)
        if padding == 'CIRCULAR':
            padding = 'VALID'
        inputs, kernel, bias = self.promote_dtype(
            (inputs, kernel, None if self.bias is None else self.bias[...]), dtype=self.dtype)
        kwargs = {} if self.preferred_element_type is None else {'preferred_element_type': self.preferred_element_type}
        y = lax.conv_transpose(inputs, kernel, strides, padding, rhs_dilation=kernel_dilation,
                               transpose_kernel=self.transpose_kernel, precision=self.precision, **kwargs)
        if self.padding == 'CIRCULAR':
            # Fold the full output periodically onto input_size * stride positions per spatial axis.
            scaled = [x * s for x, s in zip(inputs.shape[1:-1], strides)]
            diffs = [-(y_dim - x_dim) % (2 * x_dim) for y_dim, x_dim in zip(y.shape[1:-1], scaled)]
            if self.transpose_kernel:
                pads = [(d // 2, (d + 1) // 2) for d in diffs]
            else:
                pads = [((d + 1) // 2, d // 2) for d in diffs]
            y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
            for i in range(1, y.ndim - 1):
                y = jnp.reshape(y, y.shape[:i] + (-1, scaled[i - 1]) + y.shape[i + 1:]).sum(axis=i)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + bias.shape)
        if batch_shape is not None:
            y = jnp.reshape(y, batch_shape + y.shape[1:])
        return y


class Embed(Module):
    """A lookup table: integer ``inputs`` of any shape -> ``inputs.shape + (features,)``.

    Parameter ``embedding`` ``(num_embeddings, features)``.  :meth:`attend`
    computes ``query @ embedding.T`` (weight tying with an output layer).

    Raises:
      ValueError: non-integer inputs.
    """

    def __init__(self, num_embeddings: int, features: int, *, dtype: Any = None, param_dtype: Any = jnp.float32,
                 embedding_init: Any = default_embed_init, promote_dtype: Any = default_promote_dtype,
                 rngs: Rngs, embedding_metadata: Any = None):
        _check_rngs(rngs, 'Embed')
        self.embedding = Param(embedding_init(rngs.params(), (num_embeddings, features), param_dtype),
                               **_metadata(embedding_metadata))
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype or self.embedding.dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise ValueError(f'Embed: input type must be an integer or unsigned integer, got {inputs.dtype}.')
        (embedding,) = self.promote_dtype((self.embedding[...],), dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Any, out_sharding: Any = None) -> Any:
        """``query @ embedding.T``: ``(..., features) -> (..., num_embeddings)``."""
        query, embedding = self.promote_dtype((query, self.embedding[...]), dtype=self.dtype)
        return jnp.dot(query, embedding.T)
