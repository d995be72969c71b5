"""Recurrent cells and the RNN driver (mirrors ``flax.linen.recurrent``).

A *cell* maps ``(carry, x_t) -> (new carry, y_t)`` for one time step;
:class:`RNN` runs a cell along the time axis with :func:`~.transforms.scan`
(parameters shared by all steps), and :class:`Bidirectional` combines a
forward and a backward RNN. Parameter names, shapes and initializers are
Flax's, so the same key gives the same parameters:

* ``LSTMCell`` / ``OptimizedLSTMCell``: ``i{i,f,g,o}`` (input kernels, no
  bias) and ``h{i,f,g,o}`` (recurrent kernels with bias).
* ``GRUCell``: ``i{r,z,n}`` (input kernels with bias), ``h{r,z}`` (no bias)
  and ``hn`` (with bias).
* ``MGUCell``: ``if``/``in`` (with bias), ``hf`` and ``hn`` (bias only with
  ``reset_gate``).
* ``SimpleCell``: ``i`` (with bias) and ``h`` (no bias).
* ``ConvLSTMCell``: two convolutions ``ih`` and ``hh`` with ``4 * features``
  filters.

Input kernels default to LeCun normal, recurrent kernels to orthogonal,
biases to zeros (the MGU forget bias to ones). ``carry_init`` (zeros)
creates the initial carry in ``initialize_carry(rng, input_shape)``, where
``input_shape`` is one time step's input shape ``(*batch, features)``.

References: LSTM, Hochreiter & Schmidhuber (1997); GRU, Cho et al. (2014),
"Learning Phrase Representations using RNN Encoder-Decoder"; MGU, Zhou et al.
(2016), "Minimal Gated Unit for Recurrent Neural Networks"; ConvLSTM, Shi et
al. (2015), "Convolutional LSTM Network"; the residual SimpleCell,
https://arxiv.org/abs/1801.06105.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import fluxion.numpy as jnp
from fluxion import random, tree_util

from ..core import FrozenDict
from . import initializers
from .activation import sigmoid, tanh
from .dtypes import promote_dtype
from .linear import Conv, Dense, default_kernel_init
from .module import Module, compact, nowrap
from .transforms import scan

Array = Any
PRNGKey = Any
Dtype = Any
Initializer = Callable[..., Any]


class RNNCellBase(Module):
    """Base class of recurrent cells: ``__call__(carry, x) -> (carry, y)`` plus carry creation.

    Subclasses define ``initialize_carry(rng, input_shape)`` and
    ``num_feature_axes`` (how many trailing input axes are features: 1 for
    vector cells, ``len(kernel_size) + 1`` for convolutional ones).
    """

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple) -> Any:
        """Returns the initial carry for inputs of shape ``input_shape`` (one time step)."""
        raise NotImplementedError(f'{type(self).__name__} does not define initialize_carry().')

    @property
    def num_feature_axes(self) -> int:
        """Number of trailing feature axes of one time step's input."""
        raise NotImplementedError(f'{type(self).__name__} does not define num_feature_axes.')


def _zeros_carry(cell: Any, rng: PRNGKey, input_shape: tuple, parts: int) -> Any:
    """``carry_init`` arrays of shape ``(*batch, features)``: one, or ``parts`` from split keys."""
    shape = tuple(input_shape[:-1]) + (cell.features,)
    if parts == 1:
        return cell.carry_init(rng, shape, cell.param_dtype)
    return tuple(cell.carry_init(k, shape, cell.param_dtype) for k in random.split(rng, parts))


class _VectorCell(RNNCellBase):
    """Shared pieces of the cells whose step input is ``(*batch, in_features)``."""

    @property
    def num_feature_axes(self) -> int:
        return 1

    def _dense(self, name: str, use_bias: bool, kernel_init: Initializer,
               bias_init: Initializer = initializers.zeros) -> Dense:
        return Dense(features=self.features, use_bias=use_bias, kernel_init=kernel_init,
                     bias_init=bias_init, dtype=self.dtype, param_dtype=self.param_dtype,
                     name=name)


class LSTMCell(_VectorCell):
    """Long short-term memory cell (Hochreiter & Schmidhuber, 1997).

    With carry ``(c, h)`` and input ``x``::

        i = gate(W_ii x + W_hi h + b_hi)     f = gate(W_if x + W_hf h + b_hf)
        g = act(W_ig x + W_hg h + b_hg)      o = gate(W_io x + W_ho h + b_ho)
        c' = f * c + i * g                   h' = o * act(c')

    returns ``((c', h'), h')``. Shapes: ``x [*batch, in]``, ``c, h [*batch,
    features]``.

    Attributes:
        features: hidden size.
        gate_fn, activation_fn: default sigmoid and tanh.
        kernel_init, recurrent_kernel_init, bias_init: as in the module doc.
        dtype, param_dtype: computation and parameter dtypes.
        carry_init: initializer of ``c`` and ``h`` (each from its own key).
    """

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros

    @compact
    def __call__(self, carry: tuple, inputs: Array) -> tuple:
        c, h = carry

        def pre(gate: str) -> Array:
            x_part = self._dense(f'i{gate}', False, self.kernel_init)(inputs)
            h_part = self._dense(f'h{gate}', True, self.recurrent_kernel_init,
                                 self.bias_init)(h)
            return x_part + h_part

        i, f = self.gate_fn(pre('i')), self.gate_fn(pre('f'))
        g, o = self.activation_fn(pre('g')), self.gate_fn(pre('o'))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple) -> tuple:
        """``(c, h)``, each ``carry_init(key, (*batch, features))`` from ``random.split(rng)``."""
        return _zeros_carry(self, rng, input_shape, 2)


class _KernelAndBias(Module):
    """Creates a ``Dense``-compatible ``kernel`` (and ``bias``) without applying them."""

    features: int
    use_bias: bool
    kernel_init: Initializer
    bias_init: Initializer
    param_dtype: Dtype

    @compact
    def __call__(self, in_features: int) -> tuple:
        kernel = self.param('kernel', self.kernel_init, (in_features, self.features),
                            self.param_dtype)
        bias = (self.param('bias', self.bias_init, (self.features,), self.param_dtype)
                if self.use_bias else None)
        return kernel, bias


class OptimizedLSTMCell(LSTMCell):
    """:class:`LSTMCell` computed with one matrix product per input (same parameters, same result).

    The four gate kernels of the input (and of the hidden state) are
    concatenated and applied at once; outputs equal ``LSTMCell``'s up to
    floating-point rounding.
    """

    @compact
    def __call__(self, carry: tuple, inputs: Array) -> tuple:
        c, h = carry
        gates = ('i', 'f', 'g', 'o')

        def fused(prefix: str, x: Array, use_bias: bool, kernel_init: Initializer) -> list:
            params = [_KernelAndBias(self.features, use_bias, kernel_init, self.bias_init,
                                     self.param_dtype, name=f'{prefix}{gate}')(jnp.shape(x)[-1])
                      for gate in gates]
            kernel = jnp.concatenate([k for k, _ in params], axis=-1)
            bias = jnp.concatenate([b for _, b in params], axis=-1) if use_bias else None
            x, kernel, bias = promote_dtype(x, kernel, bias, dtype=self.dtype)
            y = jnp.dot(x, kernel)
            if bias is not None:
                y = y + bias
            return jnp.split(y, len(gates), axis=-1)

        xi, xf, xg, xo = fused('i', inputs, False, self.kernel_init)
        hi, hf, hg, ho = fused('h', h, True, self.recurrent_kernel_init)
        i, f = self.gate_fn(xi + hi), self.gate_fn(xf + hf)
        g, o = self.activation_fn(xg + hg), self.gate_fn(xo + ho)
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h


class SimpleCell(_VectorCell):
    """Elman cell: ``h' = act(W_i x + b_i + W_h h)`` (plus ``h`` if ``residual``); returns ``(h', h')``.

    Attributes:
        features, activation_fn, kernel_init, recurrent_kernel_init, bias_init,
        dtype, param_dtype, carry_init: as in :class:`LSTMCell`.
        residual: add the previous state before the activation.
    """

    features: int
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros
    residual: bool = False

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple:
        pre = (self._dense('i', True, self.kernel_init, self.bias_init)(inputs)
               + self._dense('h', False, self.recurrent_kernel_init)(carry))
        if self.residual:
            pre = pre + carry
        new_h = self.activation_fn(pre)
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple) -> Array:
        """``carry_init(rng, (*batch, features))``."""
        return _zeros_carry(self, rng, input_shape, 1)


class GRUCell(_VectorCell):
    """Gated recurrent unit (Cho et al., 2014)::

        r = gate(W_ir x + b_ir + W_hr h)     z = gate(W_iz x + b_iz + W_hz h)
        n = act(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    returns ``(h', h')``. Attributes as in :class:`LSTMCell`.
    """

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    bias_init: Initializer = initializers.zeros
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple:
        h = carry

        def x_part(gate: str) -> Array:
            return self._dense(f'i{gate}', True, self.kernel_init, self.bias_init)(inputs)

        def h_part(gate: str, use_bias: bool = False) -> Array:
            return self._dense(f'h{gate}', use_bias, self.recurrent_kernel_init,
                               self.bias_init)(h)

        r = self.gate_fn(x_part('r') + h_part('r'))
        z = self.gate_fn(x_part('z') + h_part('z'))
        n = self.activation_fn(x_part('n') + r * h_part('n', use_bias=True))
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple) -> Array:
        """``carry_init(rng, (*batch, features))``."""
        return _zeros_carry(self, rng, input_shape, 1)


class MGUCell(_VectorCell):
    """Minimal gated unit (Zhou et al., 2016)::

        f = gate(W_if x + b_if + W_hf h)
        n = act(W_in x + b_in + f * (W_hn h + b_hn))     (reset_gate=True)
        n = act(W_in x + b_in + W_hn h)                  (reset_gate=False)
        h' = (1 - f) * n + f * h

    Attributes:
        forget_bias_init: initializer of ``b_if`` (default ones, following
            Jozefowicz et al., 2015).
        activation_bias_init: initializer of ``b_in`` and ``b_hn`` (zeros).
        reset_gate: whether ``f`` gates the recurrent candidate term.
        others: as in :class:`LSTMCell`.
    """

    features: int
    gate_fn: Callable[..., Any] = sigmoid
    activation_fn: Callable[..., Any] = tanh
    kernel_init: Initializer = default_kernel_init
    recurrent_kernel_init: Initializer = initializers.orthogonal()
    forget_bias_init: Initializer = initializers.ones
    activation_bias_init: Initializer = initializers.zeros
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros
    reset_gate: bool = True

    @compact
    def __call__(self, carry: Array, inputs: Array) -> tuple:
        h = carry
        f = self.gate_fn(
            self._dense('if', True, self.kernel_init, self.forget_bias_init)(inputs)
            + self._dense('hf', False, self.recurrent_kernel_init)(h))
        recurrent = self._dense('hn', self.reset_gate, self.recurrent_kernel_init,
                                self.activation_bias_init)(h)
        if self.reset_gate:
            recurrent = recurrent * f
        n = self.activation_fn(
            self._dense('in', True, self.kernel_init, self.activation_bias_init)(inputs)
            + recurrent)
        new_h = (1.0 - f) * n + f * h
        return new_h, new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple) -> Array:
        """``carry_init(rng, (*batch, features))``."""
        return _zeros_carry(self, rng, input_shape, 1)


class ConvLSTMCell(RNNCellBase):
    """Convolutional LSTM (Shi et al., 2015): the LSTM's matrix products become convolutions.

    ``gates = Conv_ih(x) + Conv_hh(h)`` with ``4 * features`` filters is split
    into ``i, g, f, o`` along the last axis; ``c' = sigmoid(f + 1) * c +
    sigmoid(i) * tanh(g)`` (the +1 forget bias of Jozefowicz et al., 2015)
    and ``h' = sigmoid(o) * tanh(c')``. Inputs ``[*batch, *spatial, in]``,
    carry ``(c, h)`` each ``[*batch, *spatial', features]``.

    Attributes:
        features: number of filters of the state.
        kernel_size, strides, padding, use_bias: as in :class:`Conv`.
        dtype, param_dtype, carry_init: as in :class:`LSTMCell`.
    """

    features: int
    kernel_size: Sequence[int]
    strides: Optional[Sequence[int]] = None
    padding: Any = 'SAME'
    use_bias: bool = True
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    carry_init: Initializer = initializers.zeros

    @compact
    def __call__(self, carry: tuple, inputs: Array) -> tuple:
        c, h = carry
        conv = functools.partial(Conv, features=4 * self.features, kernel_size=self.kernel_size,
                                 strides=self.strides, padding=self.padding,
                                 use_bias=self.use_bias, dtype=self.dtype,
                                 param_dtype=self.param_dtype)
        gates = conv(name='ih')(inputs) + conv(name='hh')(h)
        i, g, f, o = jnp.split(gates, 4, axis=-1)
        new_c = sigmoid(f + 1) * c + sigmoid(i) * jnp.tanh(g)
        new_h = sigmoid(o) * jnp.tanh(new_c)
        return (new_c, new_h), new_h

    @nowrap
    def initialize_carry(self, rng: PRNGKey, input_shape: tuple) -> tuple:
        """``(c, h)`` of shape ``(*batch, *spatial, features)`` from ``random.split(rng)``."""
        n = self.num_feature_axes
        shape = tuple(input_shape[:-n]) + tuple(input_shape[-n:-1]) + (self.features,)
        k1, k2 = random.split(rng)
        return (self.carry_init(k1, shape, self.param_dtype),
                self.carry_init(k2, shape, self.param_dtype))

    @property
    def num_feature_axes(self) -> int:
        return len(self.kernel_size) + 1


def flip_sequences(inputs: Array, seq_lengths: Optional[Array], num_batch_dims: int,
                   time_major: bool) -> Array:
    """Reverses each sequence along the time axis, keeping padding at the end.

    Without ``seq_lengths`` the whole time axis is flipped. With it (integer
    ``[*batch]``), element ``t < len`` of a sequence moves to ``len - 1 - t``
    and the padding after ``len`` stays after it (rotated).
    """
    time_axis = 0 if time_major else num_batch_dims
    steps = jnp.shape(inputs)[time_axis]
    if seq_lengths is None:
        return jnp.flip(inputs, axis=time_axis)
    lengths = jnp.expand_dims(seq_lengths, axis=time_axis)
    index_shape = [1] * (num_batch_dims + 1)
    index_shape[time_axis] = steps
    idxs = (jnp.reshape(jnp.arange(steps - 1, -1, -1), index_shape) + lengths) % steps
    idxs = jnp.reshape(idxs, tuple(jnp.shape(idxs)) + (1,) * (inputs.ndim - idxs.ndim))
    return jnp.take_along_axis(inputs, idxs, axis=time_axis)


def _last_valid(history: Any, seq_lengths: Array) -> Any:
    """Picks step ``len - 1`` of each sequence from a time-major history ``[time, batch, ...]``."""
    last = seq_lengths - 1
    return tree_util.tree_map(lambda x: x[last, jnp.arange(jnp.shape(x)[1])], history)


class RNN(Module):
    """Runs a cell over a sequence with :func:`~.transforms.scan` (parameters shared across time).

    Input ``[*batch, time, *features]`` (or ``[time, *batch, *features]`` with
    ``time_major``); output the per-step outputs stacked on the same time
    axis. The cell's parameters are stored under ``'cell'``.

    Attributes:
        cell: the :class:`RNNCellBase` to run.
        time_major: time axis first instead of after the batch axes.
        return_carry: also return the final carry (``(carry, outputs)``).
        reverse: process from the last step to the first (outputs stay in
            processing order unless ``keep_order``); with ``seq_lengths`` the
            padding stays at the end.
        keep_order: with ``reverse``, flip the outputs back to input order.
        unroll, variable_axes, variable_broadcast, variable_carry, split_rngs:
            forwarded to ``nn.scan``.

    ``__call__(inputs, *, initial_carry=None, init_key=None, seq_lengths=None,
    return_carry=None, time_major=None, reverse=None, keep_order=None)``:
    the keyword options override the attributes; the carry defaults to
    ``cell.initialize_carry(init_key or random.key(0), step input shape)``.
    With ``seq_lengths`` (integer ``[batch]``) and ``return_carry``, the
    returned carry is the one after each sequence's last valid step (one
    batch axis only); outputs at padded steps are not zeroed.
    """

    cell: Any
    time_major: bool = False
    return_carry: bool = False
    reverse: bool = False
    keep_order: bool = False
    unroll: int = 1
    variable_axes: Mapping = FrozenDict()
    variable_broadcast: Any = 'params'
    variable_carry: Any = False
    split_rngs: Mapping = FrozenDict({'params': False})

    def __call__(self, inputs: Array, *, initial_carry: Any = None,
                 init_key: Optional[PRNGKey] = None, seq_lengths: Optional[Array] = None,
                 return_carry: Optional[bool] = None, time_major: Optional[bool] = None,
                 reverse: Optional[bool] = None, keep_order: Optional[bool] = None) -> Any:
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order

        feature_axes = self.cell.num_feature_axes
        if inputs.ndim < feature_axes + 1:
            raise ValueError(f'RNN: inputs of shape {tuple(inputs.shape)} need a time axis and '
                             f'{feature_axes} feature axes.')
        time_axis = 0 if time_major else inputs.ndim - (feature_axes + 1)
        num_batch = inputs.ndim - 1 - feature_axes
        flip = functools.partial(flip_sequences, seq_lengths=seq_lengths,
                                 num_batch_dims=num_batch, time_major=time_major)
        if reverse:
            inputs = flip(inputs)

        if initial_carry is None:
            key = random.key(0) if init_key is None else init_key
            step_shape = tuple(inputs.shape[:time_axis]) + tuple(inputs.shape[time_axis + 1:])
            initial_carry = self.cell.initialize_carry(key, step_shape)

        keep_history = seq_lengths is not None and return_carry

        def scan_fn(cell, carry, x):
            carry, y = cell(carry, x)
            return carry, ((carry, y) if keep_history else y)

        scanned = scan(scan_fn, in_axes=time_axis,
                       out_axes=(0, time_axis) if keep_history else time_axis,
                       unroll=self.unroll, variable_axes=dict(self.variable_axes),
                       variable_broadcast=self.variable_broadcast,
                       variable_carry=self.variable_carry, split_rngs=dict(self.split_rngs))
        carry, outputs = scanned(self.cell, initial_carry, inputs)
        if keep_history:
            history, outputs = outputs
            carry = _last_valid(history, seq_lengths)
        if reverse and keep_order:
            outputs = flip(outputs)
        return (carry, outputs) if return_carry else outputs


def _concatenate(a: Array, b: Array) -> Array:
    return jnp.concatenate([a, b], axis=-1)


class Bidirectional(Module):
    """Runs one RNN forward and one backward over the sequence and merges their outputs.

    The backward RNN processes the reversed sequence (padding kept at the
    end when ``seq_lengths`` is given) and its outputs are flipped back, so
    step ``t`` of both is aligned before ``merge_fn`` (default: concatenate
    the last axis).

    Attributes:
        forward_rnn, backward_rnn: modules with :class:`RNN`'s call signature.
        merge_fn: ``(forward outputs, backward outputs) -> outputs``.
        time_major, return_carry: as in :class:`RNN`; the carry is
            ``(forward carry, backward carry)``.
    """

    forward_rnn: Any
    backward_rnn: Any
    merge_fn: Callable[[Array, Array], Array] = _concatenate
    time_major: bool = False
    return_carry: bool = False

    def __call__(self, inputs: Array, *, initial_carry: Any = None,
                 init_key: Optional[PRNGKey] = None, seq_lengths: Optional[Array] = None,
                 return_carry: Optional[bool] = None, time_major: Optional[bool] = None,
                 reverse: Optional[bool] = None, keep_order: Optional[bool] = None) -> Any:
        time_major = self.time_major if time_major is None else time_major
        return_carry = self.return_carry if return_carry is None else return_carry
        keys = (None, None) if init_key is None else tuple(random.split(init_key))
        carries = (None, None) if initial_carry is None else initial_carry
        common = dict(seq_lengths=seq_lengths, return_carry=True, time_major=time_major)
        carry_f, out_f = self.forward_rnn(inputs, initial_carry=carries[0], init_key=keys[0],
                                          reverse=False, **common)
        carry_b, out_b = self.backward_rnn(inputs, initial_carry=carries[1], init_key=keys[1],
                                           reverse=True, keep_order=True, **common)
        outputs = tree_util.tree_map(self.merge_fn, out_f, out_b)
        carry = (carry_f, carry_b)
        return (carry, outputs) if return_carry else outputs

