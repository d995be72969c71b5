"""Linear layers: Dense, DenseGeneral, Conv, ConvTranspose, Embed (mirrors ``flax.linen.linear``).

Parameter names, shapes, default initializers and creation order match Flax
0.12, so the same seed gives the same values:

=================  ===========================================  ==========================
layer              ``kernel`` / ``embedding`` shape             default init
=================  ===========================================  ==========================
Dense              ``(in, features)``                           lecun_normal, bias zeros
DenseGeneral       ``batch + in_axes + features``               lecun_normal on the
                                                                flattened 2-D matrix
Conv               ``kernel_size + (in // groups, features)``   lecun_normal, bias zeros
ConvTranspose      ``kernel_size + (in, features)``             lecun_normal, bias zeros
Embed              ``(num_embeddings, features)``               variance_scaling(1, fan_in,
                                                                normal, out_axis=0)
=================  ===========================================  ==========================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.nn import initializers

from .dtypes import promote_dtype
from .module import Module, compact, merge_param

Array = Any
Dtype = Any
Initializer = Callable[..., Any]
PaddingLike = Union[str, int, Sequence[Union[int, tuple[int, int]]]]

default_kernel_init = initializers.lecun_normal()
default_embed_init = initializers.variance_scaling(1.0, 'fan_in', 'normal', out_axis=0)


def _canonicalize_tuple(x: Union[int, Sequence[int]]) -> tuple:
    return tuple(x) if isinstance(x, Sequence) else (x,)


def _normalize_axes(axes: tuple, ndim: int) -> tuple:
    return tuple(ax if ax >= 0 else ndim + ax for ax in axes)


# ----------------------------------------------------------------------------
# Dense layers.
# ----------------------------------------------------------------------------


def _replaceable(factory: Any, replacement: Optional[Callable[..., Any]],
                 default: Callable[..., Any]) -> Callable[..., Any]:
    """The op a layer uses: ``factory()`` if given, else ``replacement``, else ``default`` (Flax's order)."""
    if factory is not None:
        return factory()
    return replacement if replacement is not None else default


class Dense(Module):
    """A linear transformation of the last axis: ``y = x @ kernel + bias``.

    Input ``[..., in]`` → output ``[..., features]``.

    Attributes:
        features: number of output features.
        use_bias: whether to add a bias (shape ``(features,)``).
        dtype: computation dtype (default: promoted from input and params).
        param_dtype: dtype of the parameters (default float32).
        precision: passed to ``lax.dot_general``.
        kernel_init: initializer of the ``(in, features)`` kernel.
        bias_init: initializer of the bias.
        promote_dtype: function casting ``(inputs, kernel, bias)`` to a common dtype.
        dot_general: replacement for ``lax.dot_general``.
        dot_general_cls: a factory called with no arguments at each call
            whose result replaces ``lax.dot_general`` (takes precedence over
            ``dot_general``; used by quantization libraries).
    """

    features: int
    use_bias: bool = True
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    precision: Any = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros
    promote_dtype: Callable[..., Any] = promote_dtype
    dot_general: Optional[Callable[..., Any]] = None
    dot_general_cls: Any = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the layer to ``inputs`` of shape ``[..., in]``; returns ``[..., features]``."""
        kernel = self.param('kernel', self.kernel_init,
                            (jnp.shape(inputs)[-1], self.features), self.param_dtype)
        bias = (self.param('bias', self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        dot_general = _replaceable(self.dot_general_cls, self.dot_general, lax.dot_general)
        y = dot_general(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())),
                        precision=self.precision)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


class DenseGeneral(Module):
    """A linear map contracting several input axes into several output axes.

    With ``axis=(-2, -1)`` and ``features=(h, d)``, an input ``[b, n, m]``
    becomes ``[b, h, d]`` through a kernel of shape ``(n, m, h, d)``.
    ``batch_dims`` (leading axes, e.g. ``(0,)``) get a separate kernel per
    index. The kernel is initialized as the 2-D matrix ``(prod(batch) *
    prod(in), prod(features))`` and reshaped, so fan-in/fan-out are those of
    the flattened map.

    Attributes:
        features: int or tuple of output feature sizes.
        axis: int or tuple of input axes to contract.
        batch_dims: leading axes treated as independent batches.
        use_bias, dtype, param_dtype, kernel_init, bias_init, precision,
        promote_dtype, dot_general, dot_general_cls: as in :class:`Dense`.
    """

    features: Union[int, Sequence[int]]
    axis: Union[int, Sequence[int]] = -1
    batch_dims: Sequence[int] = ()
    use_bias: bool = True
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros
    precision: Any = None
    promote_dtype: Callable[..., Any] = promote_dtype
    dot_general: Optional[Callable[..., Any]] = None
    dot_general_cls: Any = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the layer.

        Raises:
            ValueError: if ``batch_dims`` are not the leading axes ``0..k-1``.
        """
        features = _canonicalize_tuple(self.features)
        axis = _canonicalize_tuple(self.axis)
        batch_dims = _canonicalize_tuple(self.batch_dims)
        if batch_dims and set(batch_dims) != set(range(max(batch_dims) + 1)):
            raise ValueError(f'batch_dims {batch_dims} must be consecutive leading '
                             'dimensions starting from 0.')
        ndim = inputs.ndim
        axis = _normalize_axes(axis, ndim)
        batch_dims = _normalize_axes(batch_dims, ndim)
        n_batch, n_axis, n_features = len(batch_dims), len(axis), len(features)

        def kernel_init_2d(rng, shape, dtype=jnp.float32):
            flat = (int(np.prod(shape[:n_batch + n_axis])), int(np.prod(shape[-n_features:])))
            return jnp.reshape(self.kernel_init(rng, flat, dtype), shape)

        def bias_init_1d(rng, shape, dtype=jnp.float32):
            flat = (int(np.prod(shape)),)
            return jnp.reshape(self.bias_init(rng, flat, dtype), shape)

        batch_shape = tuple(inputs.shape[ax] for ax in batch_dims)
        kernel_shape = batch_shape + tuple(inputs.shape[ax] for ax in axis) + features
        kernel = self.param('kernel', kernel_init_2d, kernel_shape, self.param_dtype)
        bias = (self.param('bias', bias_init_1d, batch_shape + features, self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)

        batch_ind = tuple(range(n_batch))
        contract_ind = tuple(range(n_batch, n_batch + n_axis))
        dot_general = _replaceable(self.dot_general_cls, self.dot_general, lax.dot_general)
        out = dot_general(inputs, kernel, ((axis, contract_ind), (batch_dims, batch_ind)),
                          precision=self.precision)
        if bias is not None:
            # Output axes: batch dims, the uncontracted input axes, then features.
            expanded = tuple(inputs.shape[ax] if ax in batch_dims else 1
                             for ax in range(ndim) if ax not in axis)
            out = out + jnp.reshape(bias, expanded + features)
        return out


# ----------------------------------------------------------------------------
# Convolutions.
# ----------------------------------------------------------------------------


def canonicalize_padding(padding: PaddingLike, rank: int) -> Union[str, list]:
    """Turns a padding spec into a string or a list of ``rank`` ``(low, high)`` pairs.

    Raises:
        ValueError: for anything else than a string, an int, or a length-``rank``
            sequence of ints and pairs.
    """
    if isinstance(padding, str):
        return padding.upper()
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, Sequence) and len(padding) == rank:
        pairs = []
        for p in padding:
            if isinstance(p, int):
                pairs.append((p, p))
            elif isinstance(p, Sequence) and len(p) == 2:
                pairs.append((int(p[0]), int(p[1])))
            else:
                break
        if len(pairs) == rank:
            return pairs
    raise ValueError(f'Invalid padding {padding!r}: expected a string, an int, or a sequence '
                     f'of {rank} ints or (low, high) pairs.')


def _conv_dimension_numbers(ndim: int) -> tuple[str, str, str]:
    """Channels-last layouts as strings: ``('NHWC', 'HWIO', 'NHWC')`` for 2-D.

    Any distinct letters name the spatial dimensions, so this covers every rank.
    """
    spatial = 'HWDABEFGJKLMPQRSTUVXYZ'[:ndim - 2]
    return 'N' + spatial + 'C', spatial + 'IO', 'N' + spatial + 'C'


def _kernel_tuple(kernel_size: Union[int, Sequence[int]]) -> tuple:
    if isinstance(kernel_size, int):
        return (kernel_size,)
    return tuple(kernel_size)


def _broadcast_option(x: Union[None, int, Sequence[int]], rank: int, name: str) -> tuple:
    if x is None:
        x = 1
    if isinstance(x, int):
        return (x,) * rank
    x = tuple(x)
    if len(x) != rank:
        raise ValueError(f'{name} must be an int or a sequence of {rank} ints (one per spatial '
                         f'dimension of kernel_size), got {x}.')
    return x


def _flatten_batch(inputs: Array, rank: int, layer: str) -> tuple[Array, Optional[tuple]]:
    """Reshapes ``(*batch, spatial..., C)`` to ``(N, spatial..., C)``; returns the batch shape."""
    num_batch = inputs.ndim - (rank + 1)
    if num_batch < 0:
        raise ValueError(f'{layer} with a {rank}-D kernel needs inputs with at least {rank + 1} '
                         f'dimensions (spatial..., features), got shape {tuple(inputs.shape)}.')
    if num_batch == 1:
        return inputs, None
    batch_shape = tuple(inputs.shape[:num_batch])
    return jnp.reshape(inputs, (-1,) + tuple(inputs.shape[num_batch:])), batch_shape


def _restore_batch(y: Array, batch_shape: Optional[tuple]) -> Array:
    if batch_shape is None:
        return y
    return jnp.reshape(y, batch_shape + tuple(y.shape[1:]))


class Conv(Module):
    """A convolution over channels-last inputs (NWC, NHWC, NDHWC).

    Input ``(*batch, spatial..., in)`` → output ``(*batch, spatial'..., features)``.
    Zero or several batch dimensions are accepted (flattened for the
    convolution and restored).

    Attributes:
        features: number of filters.
        kernel_size: int (1-D) or tuple of window sizes.
        strides: int or tuple; default 1.
        padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'`` (periodic),
            ``'REFLECT'``, ``'CAUSAL'`` (1-D only), an int, or per-dimension
            ints / ``(low, high)`` pairs.
        input_dilation: int or tuple (``lhs_dilation``).
        kernel_dilation: int or tuple (``rhs_dilation``, atrous convolution).
        feature_group_count: split input channels into groups (depthwise
            convolution when equal to the number of input channels).
        use_bias, dtype, param_dtype, precision, kernel_init, bias_init,
        promote_dtype: as in :class:`Dense`.
        mask: optional array multiplied into the kernel (same shape).
        conv_general_dilated: replacement for ``lax.conv_general_dilated``.
        conv_general_dilated_cls: a factory called with no arguments at each
            call whose result replaces ``lax.conv_general_dilated`` (takes
            precedence over ``conv_general_dilated``).
    """

    features: int
    kernel_size: Union[int, Sequence[int]]
    strides: Union[None, int, Sequence[int]] = 1
    padding: PaddingLike = 'SAME'
    input_dilation: Union[None, int, Sequence[int]] = 1
    kernel_dilation: Union[None, int, Sequence[int]] = 1
    feature_group_count: int = 1
    use_bias: bool = True
    mask: Optional[Array] = None
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    precision: Any = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros
    promote_dtype: Callable[..., Any] = promote_dtype
    conv_general_dilated: Optional[Callable[..., Any]] = None
    conv_general_dilated_cls: Any = None

    def _prepare(self, inputs: Array) -> tuple:
        """Flattens batch axes, broadcasts the options and applies the padding modes lax lacks.

        Returns ``(inputs, batch_shape, kernel_size, strides, input_dilation,
        kernel_dilation, padding)`` with ``padding`` as lax understands it.
        """
        kernel_size = _kernel_tuple(self.kernel_size)
        rank = len(kernel_size)
        inputs, batch_shape = _flatten_batch(inputs, rank, type(self).__name__)
        strides = _broadcast_option(self.strides, rank, 'strides')
        input_dilation = _broadcast_option(self.input_dilation, rank, 'input_dilation')
        kernel_dilation = _broadcast_option(self.kernel_dilation, rank, 'kernel_dilation')

        padding = canonicalize_padding(self.padding, rank)
        if padding in ('CIRCULAR', 'REFLECT'):
            dilated = [(k - 1) * d + 1 for k, d in zip(kernel_size, kernel_dilation)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
            inputs = jnp.pad(inputs, pads, mode='wrap' if padding == 'CIRCULAR' else 'reflect')
            padding = 'VALID'
        elif padding == 'CAUSAL':
            if rank != 1:
                raise ValueError('CAUSAL padding is only implemented for 1-D convolutions, got '
                                 f'kernel_size={kernel_size}.')
            inputs = jnp.pad(inputs, [(0, 0), (kernel_dilation[0] * (kernel_size[0] - 1), 0),
                                      (0, 0)])
            padding = 'VALID'

        return inputs, batch_shape, kernel_size, strides, input_dilation, kernel_dilation, padding

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the convolution.

        Raises:
            ValueError: for a malformed padding, a mask of the wrong shape, or
                input channels not divisible by ``feature_group_count``.
        """
        inputs, batch_shape, kernel_size, strides, input_dilation, kernel_dilation, padding = \
            self._prepare(inputs)
        in_features = inputs.shape[-1]
        if in_features % self.feature_group_count:
            raise ValueError(f'Input features ({in_features}) must be divisible by '
                             f'feature_group_count ({self.feature_group_count}).')
        kernel_shape = kernel_size + (in_features // self.feature_group_count, self.features)
        if self.mask is not None and tuple(self.mask.shape) != kernel_shape:
            raise ValueError(f'mask must have the kernel shape {kernel_shape}, '
                             f'got {tuple(self.mask.shape)}.')
        kernel = self.param('kernel', self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = (self.param('bias', self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)

        conv = _replaceable(self.conv_general_dilated_cls, self.conv_general_dilated,
                            lax.conv_general_dilated)
        y = conv(inputs, kernel, strides, padding,
                 lhs_dilation=input_dilation, rhs_dilation=kernel_dilation,
                 dimension_numbers=_conv_dimension_numbers(inputs.ndim),
                 feature_group_count=self.feature_group_count, precision=self.precision)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return _restore_batch(y, batch_shape)


def _extract_patches(inputs: Array, kernel_size: tuple, strides: tuple, padding: Any,
                     input_dilation: tuple, kernel_dilation: tuple) -> Array:
    """Every window of a channels-last input as one feature vector: ``[N, *out, C * prod(kernel)]``.

    Feature ``c * prod(kernel_size) + k`` holds input channel ``c`` at window
    position ``k`` (row-major over the window), the layout of JAX's
    ``conv_general_dilated_patches``. Computed as a convolution with a
    one-hot kernel, which copies values exactly.
    """
    channels = inputs.shape[-1]
    window = int(np.prod(kernel_size))
    # Output feature j = c * window + k reads input channel c at window offset k.
    one_hot = np.eye(channels * window, dtype=np.float32).reshape(
        (channels * window, channels) + tuple(kernel_size))
    rank = len(kernel_size)
    kernel = np.transpose(one_hot, tuple(range(2, 2 + rank)) + (1, 0))
    return lax.conv_general_dilated(
        inputs, jnp.asarray(kernel, inputs.dtype), strides, padding,
        lhs_dilation=input_dilation, rhs_dilation=kernel_dilation,
        dimension_numbers=_conv_dimension_numbers(inputs.ndim))


class ConvLocal(Conv):
    """A locally connected layer: a convolution whose weights differ at every output position.

    Same options as :class:`Conv`. The kernel has shape ``(*output spatial,
    prod(kernel_size) * in_features, features)`` and the bias ``(*output
    spatial, features)`` (Flax's shapes). ``y[n, p, f] = sum_k patch[n, p, k] *
    kernel[p, k, f] + bias[p, f]`` with the patches laid out as
    ``conv_general_dilated_patches`` does.

    Raises:
        NotImplementedError: ``feature_group_count != 1`` (as in Flax).
        ValueError: as :class:`Conv`.
    """

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the locally connected layer."""
        inputs, batch_shape, kernel_size, strides, input_dilation, kernel_dilation, padding = \
            self._prepare(inputs)
        if self.feature_group_count != 1:
            raise NotImplementedError('ConvLocal does not support feature_group_count != 1, got '
                                      f'{self.feature_group_count}.')
        patches = _extract_patches(inputs, kernel_size, strides, padding, input_dilation,
                                   kernel_dilation)
        out_spatial = tuple(patches.shape[1:-1])
        kernel_shape = out_spatial + (patches.shape[-1], self.features)
        if self.mask is not None and tuple(self.mask.shape) != kernel_shape:
            raise ValueError(f'mask must have the kernel shape {kernel_shape}, '
                             f'got {tuple(self.mask.shape)}.')
        kernel = self.param('kernel', self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = (self.param('bias', self.bias_init, out_spatial + (self.features,),
                           self.param_dtype) if self.use_bias else None)
        patches, kernel, bias = self.promote_dtype(patches, kernel, bias, dtype=self.dtype)
        letters = 'abcdeghijlmopqrstuvwxyz'[:len(out_spatial)]
        y = jnp.einsum(f'n{letters}k,{letters}kf->n{letters}f', patches, kernel,
                       precision=self.precision)
        if bias is not None:
            y = y + bias
        return _restore_batch(y, batch_shape)


class ConvTranspose(Module):
    """A transposed ("fractionally strided") convolution, via ``lax.conv_transpose``.

    Input ``(*batch, spatial..., in)`` → output ``(*batch, spatial'..., features)``;
    with ``padding='SAME'`` and stride s, each spatial size is multiplied by s.

    Attributes:
        features: number of output channels.
        kernel_size: int (1-D) or tuple.
        strides: int or tuple (default 1).
        padding: ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, or explicit pairs.
        kernel_dilation: int or tuple.
        transpose_kernel: if True, the kernel is ``kernel_size + (features,
            in)`` and flipped, i.e. the exact gradient of a ``Conv``.
        use_bias, mask, dtype, param_dtype, precision, kernel_init,
        bias_init, promote_dtype: as in :class:`Conv`.
        preferred_element_type: passed to ``lax.conv_transpose``.
    """

    features: int
    kernel_size: Union[int, Sequence[int]]
    strides: Union[None, int, Sequence[int]] = None
    padding: PaddingLike = 'SAME'
    kernel_dilation: Union[None, int, Sequence[int]] = None
    use_bias: bool = True
    mask: Optional[Array] = None
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    precision: Any = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros
    transpose_kernel: bool = False
    promote_dtype: Callable[..., Any] = promote_dtype
    preferred_element_type: Optional[Dtype] = None

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the transposed convolution."""
        kernel_size = _kernel_tuple(self.kernel_size)
        rank = len(kernel_size)
        inputs, batch_shape = _flatten_batch(inputs, rank, 'ConvTranspose')
        strides = _broadcast_option(self.strides, rank, 'strides')
        kernel_dilation = _broadcast_option(self.kernel_dilation, rank, 'kernel_dilation')

        in_features = inputs.shape[-1]
        if self.transpose_kernel:
            kernel_shape = kernel_size + (self.features, in_features)
        else:
            kernel_shape = kernel_size + (in_features, self.features)
        if self.mask is not None and tuple(self.mask.shape) != kernel_shape:
            raise ValueError(f'mask must have the kernel shape {kernel_shape}, '
                             f'got {tuple(self.mask.shape)}.')
        kernel = self.param('kernel', self.kernel_init, kernel_shape, self.param_dtype)
        if self.mask is not None:
            kernel = kernel * self.mask
        padding = canonicalize_padding(self.padding, rank)
        circular = padding == 'CIRCULAR'
        if circular:
            padding = 'VALID'
        bias = (self.param('bias', self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)

        y = lax.conv_transpose(inputs, kernel, strides, padding,
                               rhs_dilation=kernel_dilation,
                               transpose_kernel=self.transpose_kernel,
                               precision=self.precision,
                               preferred_element_type=self.preferred_element_type)
        if circular:
            y = _wrap_periodic(y, inputs.shape[1:-1], strides, self.transpose_kernel)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return _restore_batch(y, batch_shape)


def _wrap_periodic(y: Array, in_spatial: tuple, strides: tuple, transpose_kernel: bool) -> Array:
    """Folds a VALID transposed convolution onto a periodic grid of size ``in * stride``.

    The output is padded to a multiple of the target size (centered the way
    Flax does it) and the periods are summed, which is what a circular
    transposed convolution computes.
    """
    targets = [n * s for n, s in zip(in_spatial, strides)]
    diffs = [-(y_dim - t) % (2 * t) for y_dim, t in zip(y.shape[1:-1], targets)]
    if transpose_kernel:
        pads = [(d // 2, (d + 1) // 2) for d in diffs]
    else:
        pads = [((d + 1) // 2, d // 2) for d in diffs]
    y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
    for i in range(1, y.ndim - 1):
        y = y.reshape(y.shape[:i] + (-1, targets[i - 1]) + y.shape[i + 1:])
        y = y.sum(axis=i)
    return y


# ----------------------------------------------------------------------------
# Embedding.
# ----------------------------------------------------------------------------


class Embed(Module):
    """A lookup table: integer ids ``[...]`` → vectors ``[..., features]``.

    Attributes:
        num_embeddings: vocabulary size.
        features: embedding size.
        dtype: dtype of the looked-up vectors (default: ``param_dtype``).
        param_dtype: dtype of the table.
        embedding_init: initializer of the ``(num_embeddings, features)`` table.
        promote_dtype: dtype promotion function.
    """

    num_embeddings: int
    features: int
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    embedding_init: Initializer = default_embed_init
    promote_dtype: Callable[..., Any] = promote_dtype

    def setup(self) -> None:
        self.embedding = self.param('embedding', self.embedding_init,
                                    (self.num_embeddings, self.features), self.param_dtype)

    def __call__(self, inputs: Array) -> Array:
        """Looks up ``inputs`` (integer array of any shape).

        Raises:
            ValueError: if ``inputs`` is not an integer array.
        """
        if not jnp.issubdtype(jnp.asarray(inputs).dtype, jnp.integer):
            raise ValueError('Embed inputs must be an integer or unsigned integer array, got '
                             f'dtype {jnp.asarray(inputs).dtype}.')
        (embedding,) = self.promote_dtype(self.embedding, dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, tuple(inputs.shape) + (self.features,))
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Array) -> Array:
        """Scores ``query [..., features]`` against every embedding → ``[..., num_embeddings]``."""
        query, embedding = self.promote_dtype(query, self.embedding, dtype=self.dtype)
        return lax.dot_general(query, embedding,
                               (((query.ndim - 1,), (1,)), ((), ())))


def _einsum_bias_shapes(equation: str, input_ndim: int, kernel_shape: tuple) -> tuple:
    """The bias shape (output axes labelled by kernel letters) and its broadcastable form.

    ``'...'`` in the output stands for the input's leading axes the
    equation does not name; those get size 1 in the broadcast shape.
    """
    operands, result = equation.split('->')
    lhs, rhs = operands.split(',')
    if '.' in rhs:
        raise ValueError(f'Einsum: the kernel operand "{rhs}" cannot use "...".')
    if len(rhs) != len(kernel_shape):
        raise ValueError(f'Einsum: kernel subscripts "{rhs}" name {len(rhs)} axes but shape is '
                         f'{tuple(kernel_shape)}.')
    ellipsis_ndim = input_ndim - len(lhs.replace('...', ''))
    kernel_dims = dict(zip(rhs, kernel_shape))
    bias_shape, broadcast_shape = [], []
    for i, part in enumerate(result.split('...')):
        if i:
            broadcast_shape.extend([1] * ellipsis_ndim)
        for letter in part:
            size = kernel_dims.get(letter)
            if size is not None:
                bias_shape.append(size)
            broadcast_shape.append(1 if size is None else size)
    return tuple(bias_shape), tuple(broadcast_shape)


class Einsum(Module):
    """A linear map given by an einsum equation with a learned kernel: ``einsum(eq, x, kernel) + bias``.

    The equation has exactly two operands (input, kernel) and an explicit
    output (``'->'``); e.g. ``'btd,dhk->bthk'`` with ``shape=(d, h, k)``. The
    bias has one entry per output axis labelled by a kernel letter (in
    output order) and is broadcast over the others.

    Attributes:
        shape: the kernel shape.
        einsum_str: the equation (or pass it at call time, not both).
        use_bias, dtype, param_dtype, precision, kernel_init, bias_init,
        promote_dtype: as in :class:`Dense`.
        preferred_element_type: accumulation dtype passed to ``jnp.einsum``.

    Raises:
        ValueError: no ``'->'``, not exactly one comma, an equation given
            both at construction and call, or kernel letters that do not
            match ``shape``.
    """

    shape: Sequence[int]
    einsum_str: Optional[str] = None
    use_bias: bool = True
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    precision: Any = None
    kernel_init: Initializer = default_kernel_init
    bias_init: Initializer = initializers.zeros
    promote_dtype: Callable[..., Any] = promote_dtype
    preferred_element_type: Optional[Dtype] = None

    @compact
    def __call__(self, inputs: Array, einsum_str: Optional[str] = None) -> Array:
        equation = merge_param('einsum_str', self.einsum_str, einsum_str).replace(' ', '')
        if '->' not in equation:
            raise ValueError(f'Einsum: the equation "{equation}" must be explicit (contain "->").')
        if equation.count(',') != 1:
            raise ValueError(f'Einsum: the equation "{equation}" must have exactly two operands '
                             f'(one comma), found {equation.count(",")} commas.')
        kernel = self.param('kernel', self.kernel_init, tuple(self.shape), self.param_dtype)
        bias = None
        if self.use_bias:
            bias_shape, broadcast_shape = _einsum_bias_shapes(equation, jnp.ndim(inputs),
                                                              tuple(self.shape))
            bias = self.param('bias', self.bias_init, bias_shape, self.param_dtype)
        inputs, kernel, bias = self.promote_dtype(inputs, kernel, bias, dtype=self.dtype)
        y = jnp.einsum(equation, inputs, kernel, precision=self.precision,
                       preferred_element_type=self.preferred_element_type)
        if bias is not None:
            y = y + jnp.reshape(bias, broadcast_shape)
        return y
