"""Recurrent cores and unrolling: `RNNCore`, `VanillaRNN`, `LSTM`, `GRU`, `ConvNDLSTM`, `DeepRNN`, `ResetCore`,
`IdentityCore`, `static_unroll`, `dynamic_unroll`, `deep_rnn_with_skip_connections`.

A core maps `(inputs, prev_state) -> (outputs, next_state)` for one time step; `initial_state(batch_size)` gives
zeros (with a leading batch axis unless `batch_size` is None). Parameter names follow Haiku: `VanillaRNN` holds two
`Linear`s (`linear`, `linear_1`), `LSTM` one `Linear` of width `4 * hidden` over `[x, h]` with gates in the order
(input, candidate, forget, output) and a forget-gate bias of +1 (Gers et al. 2000; Jozefowicz et al. 2015),
`GRU` raw `w_i`, `w_h`, `b` with gates (update, reset, candidate) (Cho et al. 2014).
"""

from __future__ import annotations

import abc
from typing import Any, NamedTuple, Sequence

import fluxion.numpy as jnp
from fluxion import lax, nn, tree_util

from . import _frame, initializers
from ._base import get_parameter
from ._basic import Linear
from ._conv import ConvND
from ._module import Module
from ._stateful import scan as hk_scan

__all__ = ["RNNCore", "VanillaRNN", "LSTMState", "LSTM", "GRU", "ConvNDLSTM", "Conv1DLSTM", "Conv2DLSTM",
           "Conv3DLSTM", "IdentityCore", "ResetCore", "DeepRNN", "deep_rnn_with_skip_connections",
           "static_unroll", "dynamic_unroll"]


class RNNCore(Module):
    """Base class of recurrent cores: implement `__call__(inputs, prev_state)` and `initial_state(batch_size)`."""

    @abc.abstractmethod
    def __call__(self, inputs: Any, prev_state: Any) -> tuple[Any, Any]:
        """One step: `(outputs, next_state)`."""

    @abc.abstractmethod
    def initial_state(self, batch_size: int | None) -> Any:
        """The state before the first step (batched with a leading `batch_size` axis unless it is None)."""


def _add_batch(tree: Any, batch_size: int | None) -> Any:
    if batch_size is None:
        return tree
    return tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch_size,) + x.shape), tree)


def static_unroll(core: Any, input_sequence: Any, initial_state: Any, time_major: bool = True) -> tuple[Any, Any]:
    """Runs `core` over the time axis with a Python loop (one copy of the step per time step when traced).

    Args:
        input_sequence: pytree of arrays `[T, B, ...]` (or `[B, T, ...]` with `time_major=False`).

    Returns:
        `(outputs stacked along the time axis, final state)`.
    """
    time_axis = 0 if time_major else 1
    leaves, treedef = tree_util.tree_flatten(input_sequence)
    num_steps = leaves[0].shape[time_axis]
    state = initial_state
    outputs = []
    for t in range(num_steps):
        step = tree_util.tree_unflatten(treedef, [lax.index_in_dim(x, t, time_axis, keepdims=False)
                                                  for x in leaves])
        out, state = core(step, state)
        outputs.append(out)
    return tree_util.tree_map(lambda *ys: jnp.stack(ys, axis=time_axis), *outputs), state


def _swap_batch_time(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), tree)


def dynamic_unroll(core: Any, input_sequence: Any, initial_state: Any, time_major: bool = True,
                   reverse: bool = False, return_all_states: bool = False, unroll: int = 1) -> tuple[Any, Any]:
    """Runs `core` over the time axis with `hk.scan` (`lax.scan` outside a transform).

    Returns:
        `(outputs, final_state)`, or `(outputs, all_states)` with `return_all_states` (states stacked along
        the time axis).
    """
    scan = hk_scan if _frame.inside_transform() else lax.scan

    def step(prev_state, inputs):
        outputs, next_state = core(inputs, prev_state)
        return next_state, ((outputs, next_state) if return_all_states else outputs)

    if not time_major:
        input_sequence = _swap_batch_time(input_sequence)
    last_state, ys = scan(step, initial_state, input_sequence, reverse=reverse, unroll=unroll)
    outputs, states = ys if return_all_states else (ys, None)
    if not time_major:
        outputs = _swap_batch_time(outputs)
        if return_all_states:
            states = _swap_batch_time(states)
    return outputs, (states if return_all_states else last_state)


class VanillaRNN(RNNCore):
    """`h_t = relu(W_i x_t + b_i + W_h h_{t-1} + b_h)`; outputs `h_t`. `double_bias=False` drops `b_h`."""

    def __init__(self, hidden_size: int, double_bias: bool = True, name: str | None = None):
        super().__init__(name=name)
        self.hidden_size = hidden_size
        self.double_bias = double_bias

    def __call__(self, inputs: Any, prev_state: Any) -> tuple[Any, Any]:
        inputs, prev_state = jnp.asarray(inputs), jnp.asarray(prev_state)
        input_to_hidden = Linear(self.hidden_size)
        hidden_to_hidden = Linear(self.hidden_size, with_bias=self.double_bias)
        out = nn.relu(input_to_hidden(inputs) + hidden_to_hidden(prev_state))
        return out, out

    def initial_state(self, batch_size: int | None) -> Any:
        return _add_batch(jnp.zeros([self.hidden_size]), batch_size)


class LSTMState(NamedTuple):
    """LSTM state: `hidden` (the output) and `cell`."""

    hidden: Any
    cell: Any


def _lstm_update(gates: Any, cell: Any) -> tuple[Any, LSTMState]:
    i, g, f, o = jnp.split(gates, 4, axis=-1)
    f = nn.sigmoid(f + 1)  # forget-gate bias of 1
    c = f * cell + nn.sigmoid(i) * jnp.tanh(g)
    h = nn.sigmoid(o) * jnp.tanh(c)
    return h, LSTMState(h, c)


class LSTM(RNNCore):
    """Long short-term memory (Hochreiter & Schmidhuber 1997) without peepholes.

    Inputs `[B, D]` or `[D]`; one `Linear(4 * hidden_size)` named `linear` over `concat([x, h])`.

    Raises:
        ValueError: inputs of rank other than 1 or 2.
    """

    def __init__(self, hidden_size: int, name: str | None = None):
        super().__init__(name=name)
        self.hidden_size = hidden_size

    def __call__(self, inputs: Any, prev_state: LSTMState) -> tuple[Any, LSTMState]:
        inputs = jnp.asarray(inputs)
        prev_state = tree_util.tree_map(jnp.asarray, prev_state)
        if inputs.ndim > 2 or not inputs.shape:
            raise ValueError("LSTM input must be rank-1 or rank-2.")
        x_and_h = jnp.concatenate([inputs, prev_state.hidden], axis=-1)
        return _lstm_update(Linear(4 * self.hidden_size)(x_and_h), prev_state.cell)

    def initial_state(self, batch_size: int | None) -> LSTMState:
        zeros = jnp.zeros([self.hidden_size])
        return _add_batch(LSTMState(zeros, zeros), batch_size)


class ConvNDLSTM(RNNCore):
    """Convolutional LSTM (Shi et al. 2015): the gates are `ConvND`s named `input_to_hidden` and
    `hidden_to_hidden` (each `4 * output_channels` wide, SAME padding) over channels-last inputs.

    Args:
        input_shape: the spatial shape (without batch and channels), used by `initial_state`.
    """

    def __init__(self, num_spatial_dims: int, input_shape: Sequence[int], output_channels: int,
                 kernel_shape: int | Sequence[int], name: str | None = None):
        super().__init__(name=name)
        self.num_spatial_dims = num_spatial_dims
        self.input_shape = tuple(input_shape)
        self.output_channels = output_channels
        self.kernel_shape = kernel_shape

    def __call__(self, inputs: Any, state: LSTMState) -> tuple[Any, LSTMState]:
        inputs = jnp.asarray(inputs)
        state = tree_util.tree_map(jnp.asarray, state)

        def conv(name):
            return ConvND(num_spatial_dims=self.num_spatial_dims, output_channels=4 * self.output_channels,
                          kernel_shape=self.kernel_shape, name=name)

        gates = conv("input_to_hidden")(inputs) + conv("hidden_to_hidden")(state.hidden)
        return _lstm_update(gates, state.cell)

    def initial_state(self, batch_size: int | None) -> LSTMState:
        shape = self.input_shape + (self.output_channels,)
        return _add_batch(LSTMState(jnp.zeros(shape), jnp.zeros(shape)), batch_size)


class Conv1DLSTM(ConvNDLSTM):
    """`ConvNDLSTM` with one spatial dimension."""

    def __init__(self, input_shape: Sequence[int], output_channels: int, kernel_shape: int | Sequence[int],
                 name: str | None = None):
        super().__init__(1, input_shape, output_channels, kernel_shape, name=name)


class Conv2DLSTM(ConvNDLSTM):
    """`ConvNDLSTM` with two spatial dimensions."""

    def __init__(self, input_shape: Sequence[int], output_channels: int, kernel_shape: int | Sequence[int],
                 name: str | None = None):
        super().__init__(2, input_shape, output_channels, kernel_shape, name=name)


class Conv3DLSTM(ConvNDLSTM):
    """`ConvNDLSTM` with three spatial dimensions."""

    def __init__(self, input_shape: Sequence[int], output_channels: int, kernel_shape: int | Sequence[int],
                 name: str | None = None):
        super().__init__(3, input_shape, output_channels, kernel_shape, name=name)


class GRU(RNNCore):
    """Gated recurrent unit (Cho et al. 2014): `z, r = sigmoid(x W_i[:, :2H] + h W_h[:, :2H] + b[:2H])`,
    `a = tanh(x W_i[:, 2H:] + (r * h) W_h[:, 2H:] + b[2H:])`, `h' = (1 - z) h + z a`.

    Parameters `w_i [D, 3H]`, `w_h [H, 3H]` (default `VarianceScaling()`), `b [3H]` (zeros).

    Raises:
        ValueError: inputs of rank other than 1 or 2.
    """

    def __init__(self, hidden_size: int, w_i_init: Any = None, w_h_init: Any = None, b_init: Any = None,
                 name: str | None = None):
        super().__init__(name=name)
        self.hidden_size = hidden_size
        self.w_i_init = w_i_init or initializers.VarianceScaling()
        self.w_h_init = w_h_init or initializers.VarianceScaling()
        self.b_init = b_init or jnp.zeros

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        inputs, state = jnp.asarray(inputs), jnp.asarray(state)
        if inputs.ndim not in (1, 2):
            raise ValueError("GRU input must be rank-1 or rank-2.")
        hidden = self.hidden_size
        w_i = get_parameter("w_i", [inputs.shape[-1], 3 * hidden], inputs.dtype, init=self.w_i_init)
        w_h = get_parameter("w_h", [hidden, 3 * hidden], inputs.dtype, init=self.w_h_init)
        b = get_parameter("b", [3 * hidden], inputs.dtype, init=self.b_init)
        w_h_zr, w_h_a = w_h[:, :2 * hidden], w_h[:, 2 * hidden:]
        b_zr, b_a = b[:2 * hidden], b[2 * hidden:]
        gates_x = jnp.matmul(inputs, w_i)
        zr_x, a_x = gates_x[..., :2 * hidden], gates_x[..., 2 * hidden:]
        zr_h = jnp.matmul(state, w_h_zr)
        z, r = jnp.split(nn.sigmoid(zr_x + zr_h + jnp.broadcast_to(b_zr, zr_h.shape)), 2, axis=-1)
        a_h = jnp.matmul(r * state, w_h_a)
        a = jnp.tanh(a_x + a_h + jnp.broadcast_to(b_a, a_h.shape))
        next_state = (1 - z) * state + z * a
        return next_state, next_state

    def initial_state(self, batch_size: int | None) -> Any:
        return _add_batch(jnp.zeros([self.hidden_size]), batch_size)


class IdentityCore(RNNCore):
    """Returns its inputs and state unchanged; its state is `()`."""

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        return inputs, state

    def initial_state(self, batch_size: int | None) -> Any:
        return ()


def _conform_reset(should_reset: Any, state: Any) -> Any:
    if should_reset.shape == state.shape[:should_reset.ndim]:
        return jnp.reshape(should_reset, should_reset.shape + (1,) * (state.ndim - should_reset.ndim))
    raise ValueError(f"should_reset signal shape {should_reset.shape} is not compatible with state shape "
                     f"{state.shape}")


class ResetCore(RNNCore):
    """Wraps `core`; inputs are `(inputs, should_reset)` and where `should_reset` is true the state is replaced
    by `core.initial_state` before the step (e.g. at episode boundaries).

    Raises:
        ValueError: `should_reset` whose shape is not a prefix of a state leaf's shape.
    """

    def __init__(self, core: Any, name: str | None = None):
        super().__init__(name=name)
        self.core = core

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        inputs, should_reset = inputs
        inputs = tree_util.tree_map(jnp.asarray, inputs)
        should_reset = tree_util.tree_map(jnp.asarray, should_reset)
        state = tree_util.tree_map(jnp.asarray, state)
        if tree_util.treedef_is_leaf(tree_util.tree_structure(should_reset)):
            should_reset = tree_util.tree_map(lambda _: should_reset, state)
        should_reset = tree_util.tree_map(_conform_reset, should_reset, state)
        batch_size = tree_util.tree_leaves(inputs)[0].shape[0] if self._is_batched(state) else None
        initial = tree_util.tree_map(lambda s, i: i.astype(s.dtype), state, self.initial_state(batch_size))
        state = tree_util.tree_map(jnp.where, should_reset, initial, state)
        return self.core(inputs, state)

    def initial_state(self, batch_size: int | None) -> Any:
        return self.core.initial_state(batch_size)

    def _is_batched(self, state: Any) -> bool:
        leaves = tree_util.tree_leaves(state)
        if not leaves:
            return False
        batched = tree_util.tree_leaves(self.initial_state(batch_size=1))
        return all(b.shape[1:] == s.shape[1:] for b, s in zip(batched, leaves))


class _DeepRNN(RNNCore):
    """Stacks cores (and plain callables, which carry no state); the state is a tuple, one entry per core."""

    def __init__(self, layers: Sequence[Any], skip_connections: bool, name: str | None = None):
        super().__init__(name=name)
        self.layers = layers
        self.skip_connections = skip_connections
        if skip_connections and not all(isinstance(layer, RNNCore) for layer in layers):
            raise ValueError(f"skip_connections requires for all layers to be `hk.RNNCore`s. Layers is: {layers}")

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, tuple]:
        current = inputs
        next_states, outputs = [], []
        state_idx = 0
        for idx, layer in enumerate(self.layers):
            if self.skip_connections and idx > 0:
                current = tree_util.tree_map(lambda x, *rest: None if x is None else jnp.concatenate((x,) + rest,
                                                                                                    axis=-1),
                                             inputs, current, is_leaf=lambda x: x is None)
            if isinstance(layer, RNNCore):
                current, next_state = layer(current, state[state_idx])
                outputs.append(current)
                next_states.append(next_state)
                state_idx += 1
            else:
                current = layer(current)
        if self.skip_connections:
            current = tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=-1), *outputs)
        return current, tuple(next_states)

    def initial_state(self, batch_size: int | None) -> tuple:
        return tuple(layer.initial_state(batch_size) for layer in self.layers if isinstance(layer, RNNCore))


class DeepRNN(_DeepRNN):
    """Applies `layers` in sequence, each core's output feeding the next layer; outputs the last layer's."""

    def __init__(self, layers: Sequence[Any], name: str | None = None):
        super().__init__(layers, skip_connections=False, name=name)


def deep_rnn_with_skip_connections(layers: Sequence[Any], name: str | None = None) -> RNNCore:
    """A deep RNN where every core after the first also sees the original inputs and the output concatenates
    all cores' outputs (Graves 2013).

    Raises:
        ValueError: a layer that is not an `RNNCore`.
    """
    return _DeepRNN(layers, skip_connections=True, name=name)
