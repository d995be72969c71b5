"""Recurrent cells and the RNN/Bidirectional wrappers (mirrors ``flax.nnx.nn.recurrent``).

Cells map ``(carry, x_t) -> (new_carry, y_t)``; :class:`RNN` scans a cell over
the time axis with ``nnx.scan`` (the cell's state is carried, so e.g. its RNG
counters persist).  Submodule names and initializers follow Flax NNX 0.12:

==================  =============================================  ================================
cell                submodules (Linear)                            recurrent kernel init
==================  =============================================  ================================
LSTMCell            ii, if_, ig, io (no bias); hi, hf, hg, ho       orthogonal (cast to param_dtype)
OptimizedLSTMCell   dense_i (4h, no bias); dense_h (4h, bias)       orthogonal
GRUCell             dense_i (3h, bias); dense_h (3h, no bias)       orthogonal
SimpleCell          dense_h (no bias); dense_i (bias)               orthogonal
==================  =============================================  ================================

References: Hochreiter & Schmidhuber 1997 (LSTM); Cho et al. 2014 (GRU); Elman 1990.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion.nn import sigmoid

from .. import filters as filterlib
from ..module import Module
from ..rngs import Rngs, RngState, RngStream, split_rngs
from ..transforms.iteration import Carry, StateAxes, scan
from . import initializers
from .dtypes import promote_dtype as default_promote_dtype
from .linear import Linear, default_kernel_init

tanh = jnp.tanh


def modified_orthogonal(key: Any, shape: tuple, dtype: Any = jnp.float32) -> Any:
    """An orthogonal matrix made in float32 then cast to ``dtype`` (half precision friendly)."""
    return initializers.orthogonal()(key, shape).astype(dtype)


class RNNCellBase(Module):
    """Base class of recurrent cells: ``__call__(carry, inputs)``, ``initialize_carry(input_shape, rngs)``."""

    def initialize_carry(self, input_shape: tuple, rngs: Any = None, carry_init: Any = None) -> Any:
        """The initial carry for inputs of ``input_shape`` (subclasses implement it)."""
        raise NotImplementedError

    def __call__(self, carry: Any, inputs: Any) -> tuple:
        raise NotImplementedError

    @property
    def num_feature_axes(self) -> int:
        return 1

    def _carry_stream(self, rngs: Any) -> Any:
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, Rngs):
            rngs = rngs.carry
        if rngs is None:
            raise ValueError('RNGs must be provided to initialize the cell carry.')
        return rngs

    def _carry_init(self, carry_init: Any) -> Any:
        if carry_init is not None:
            return carry_init
        return self.carry_init if self.carry_init is not None else initializers.zeros_init()

    def _keep_rngs(self, keep_rngs: bool, rngs: Rngs) -> None:
        self.rngs = rngs.carry.fork() if keep_rngs else None


def _common(self: Any, in_features: int, hidden_features: int, dtype: Any, param_dtype: Any,
            promote_dtype: Any, carry_init: Any, keep_rngs: bool, rngs: Rngs) -> None:
    if not isinstance(rngs, Rngs):
        raise TypeError(f'{type(self).__name__}: rngs must be an nnx.Rngs, got {type(rngs).__name__}')
    self.in_features = in_features
    self.hidden_features = hidden_features
    self.dtype = dtype
    self.param_dtype = param_dtype
    self.promote_dtype = promote_dtype
    self.carry_init = carry_init
    self._keep_rngs(keep_rngs, rngs)


class _TwoStateCarry(RNNCellBase):
    """LSTM-style carry ``(c, h)``, each ``batch_dims + (hidden_features,)``, drawn with two keys."""

    def initialize_carry(self, input_shape: tuple, rngs: Any = None, carry_init: Any = None) -> tuple:
        """``(c, h)`` for inputs of shape ``batch_dims + (in_features,)`` (zeros unless ``carry_init``).

        Raises:
          ValueError: no RNG stream (argument, ``rngs.carry`` or the cell's own).
        """
        stream = self._carry_stream(rngs)
        init = self._carry_init(carry_init)
        shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        c = init(stream(), shape, self.param_dtype)
        h = init(stream(), shape, self.param_dtype)
        return c, h


class _OneStateCarry(RNNCellBase):
    """A single hidden-state carry ``batch_dims + (hidden_features,)``."""

    def initialize_carry(self, input_shape: tuple, rngs: Any = None, carry_init: Any = None) -> Any:
        """``h`` for inputs of shape ``batch_dims + (in_features,)`` (zeros unless ``carry_init``).

        Raises:
          ValueError: no RNG stream (argument, ``rngs.carry`` or the cell's own).
        """
        stream = self._carry_stream(rngs)
        shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        return self._carry_init(carry_init)(stream(), shape, self.param_dtype)


class LSTMCell(_TwoStateCarry):
    """LSTM: ``i, f, o = gate(W_i x + W_h h + b)``, ``g = act(...)``, ``c' = f*c + i*g``, ``h' = o*act(c')``.

    Eight Linear submodules (input ones without bias, hidden ones with bias).
    """

    def __init__(self, in_features: int, hidden_features: int, *, gate_fn: Any = sigmoid, activation_fn: Any = tanh,
                 kernel_init: Any = default_kernel_init, recurrent_kernel_init: Any = modified_orthogonal,
                 bias_init: Any = initializers.zeros_init(), dtype: Any = None, param_dtype: Any = jnp.float32,
                 carry_init: Any = None, promote_dtype: Any = default_promote_dtype, keep_rngs: bool = False,
                 rngs: Rngs, kernel_metadata: Any = None, recurrent_kernel_metadata: Any = None,
                 bias_metadata: Any = None):
        _common(self, in_features, hidden_features, dtype, param_dtype, promote_dtype, carry_init, keep_rngs, rngs)
        self.gate_fn = gate_fn
        self.activation_fn = activation_fn

        def dense_i() -> Linear:
            return Linear(in_features, hidden_features, use_bias=False, kernel_init=kernel_init, dtype=dtype,
                          param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                          kernel_metadata=kernel_metadata)

        def dense_h() -> Linear:
            return Linear(hidden_features, hidden_features, use_bias=True, kernel_init=recurrent_kernel_init,
                          bias_init=bias_init, dtype=dtype, param_dtype=param_dtype, promote_dtype=promote_dtype,
                          rngs=rngs, kernel_metadata=recurrent_kernel_metadata, bias_metadata=bias_metadata)

        # Creation order fixes the keys drawn: the four input maps first, then the four hidden maps.
        self.ii, self.if_, self.ig, self.io = dense_i(), dense_i(), dense_i(), dense_i()
        self.hi, self.hf, self.hg, self.ho = dense_h(), dense_h(), dense_h(), dense_h()

    def __call__(self, carry: tuple, inputs: Any) -> tuple:
        c, h = carry
        i = self.gate_fn(self.ii(inputs) + self.hi(h))
        f = self.gate_fn(self.if_(inputs) + self.hf(h))
        g = self.activation_fn(self.ig(inputs) + self.hg(h))
        o = self.gate_fn(self.io(inputs) + self.ho(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h


class OptimizedLSTMCell(_TwoStateCarry):
    """The LSTM of :class:`LSTMCell` with the four gates fused into two Linear layers of width ``4h``."""

    def __init__(self, in_features: int, hidden_features: int, *, gate_fn: Any = sigmoid, activation_fn: Any = tanh,
                 kernel_init: Any = default_kernel_init, recurrent_kernel_init: Any = initializers.orthogonal(),
                 bias_init: Any = initializers.zeros_init(), dtype: Any = None, param_dtype: Any = jnp.float32,
                 carry_init: Any = None, promote_dtype: Any = default_promote_dtype, keep_rngs: bool = False,
                 rngs: Rngs, kernel_metadata: Any = None, recurrent_kernel_metadata: Any = None,
                 bias_metadata: Any = None):
        _common(self, in_features, hidden_features, dtype, param_dtype, promote_dtype, carry_init, keep_rngs, rngs)
        self.gate_fn = gate_fn
        self.activation_fn = activation_fn
        self.dense_i = Linear(in_features, 4 * hidden_features, use_bias=False, kernel_init=kernel_init, dtype=dtype,
                              param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                              kernel_metadata=kernel_metadata)
        self.dense_h = Linear(hidden_features, 4 * hidden_features, use_bias=True, kernel_init=recurrent_kernel_init,
                              bias_init=bias_init, dtype=dtype, param_dtype=param_dtype,
                              promote_dtype=promote_dtype, rngs=rngs, kernel_metadata=recurrent_kernel_metadata,
                              bias_metadata=bias_metadata)

    def __call__(self, carry: tuple, inputs: Any) -> tuple:
        c, h = carry
        i, f, g, o = jnp.split(self.dense_i(inputs) + self.dense_h(h), 4, axis=-1)
        new_c = self.gate_fn(f) * c + self.gate_fn(i) * self.activation_fn(g)
        new_h = self.gate_fn(o) * self.activation_fn(new_c)
        return (new_c, new_h), new_h


class GRUCell(_OneStateCarry):
    """GRU: ``r, z = gate(W_i x + b_i + W_h h)``, ``n = act(W_in x + b_in + r * W_hn h)``, ``h' = (1-z)*n + z*h``."""

    def __init__(self, in_features: int, hidden_features: int, *, gate_fn: Any = sigmoid, activation_fn: Any = tanh,
                 kernel_init: Any = default_kernel_init, recurrent_kernel_init: Any = initializers.orthogonal(),
                 bias_init: Any = initializers.zeros_init(), dtype: Any = None, param_dtype: Any = jnp.float32,
                 carry_init: Any = None, promote_dtype: Any = default_promote_dtype, keep_rngs: bool = False,
                 rngs: Rngs, kernel_metadata: Any = None, recurrent_kernel_metadata: Any = None,
                 bias_metadata: Any = None):
        _common(self, in_features, hidden_features, dtype, param_dtype, promote_dtype, carry_init, keep_rngs, rngs)
        self.gate_fn = gate_fn
        self.activation_fn = activation_fn
        self.dense_i = Linear(in_features, 3 * hidden_features, use_bias=True, kernel_init=kernel_init,
                              bias_init=bias_init, dtype=dtype, param_dtype=param_dtype, promote_dtype=promote_dtype,
                              rngs=rngs, kernel_metadata=kernel_metadata, bias_metadata=bias_metadata)
        self.dense_h = Linear(hidden_features, 3 * hidden_features, use_bias=False,
                              kernel_init=recurrent_kernel_init, dtype=dtype, param_dtype=param_dtype,
                              promote_dtype=promote_dtype, rngs=rngs, kernel_metadata=recurrent_kernel_metadata)

    def __call__(self, carry: Any, inputs: Any) -> tuple:
        h = carry
        xr, xz, xn = jnp.split(self.dense_i(inputs), 3, axis=-1)
        hr, hz, hn = jnp.split(self.dense_h(h), 3, axis=-1)
        r = self.gate_fn(xr + hr)
        z = self.gate_fn(xz + hz)
        n = self.activation_fn(xn + r * hn)
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h


class SimpleCell(_OneStateCarry):
    """Elman cell: ``h' = act(W_i x + b + W_h h)`` (``+ h`` inside ``act`` when ``residual``)."""

    def __init__(self, in_features: int, hidden_features: int, *, dtype: Any = jnp.float32,
                 param_dtype: Any = jnp.float32, carry_init: Any = None, residual: bool = False,
                 activation_fn: Any = tanh, kernel_init: Any = initializers.lecun_normal(),
                 recurrent_kernel_init: Any = initializers.orthogonal(), bias_init: Any = initializers.zeros_init(),
                 promote_dtype: Any = default_promote_dtype, keep_rngs: bool = False, rngs: Rngs):
        _common(self, in_features, hidden_features, dtype, param_dtype, promote_dtype, carry_init, keep_rngs, rngs)
        self.residual = residual
        self.activation_fn = activation_fn
        self.dense_h = Linear(hidden_features, hidden_features, use_bias=False, dtype=dtype, param_dtype=param_dtype,
                              kernel_init=recurrent_kernel_init, promote_dtype=promote_dtype, rngs=rngs)
        self.dense_i = Linear(in_features, hidden_features, use_bias=True, dtype=dtype, param_dtype=param_dtype,
                              kernel_init=kernel_init, bias_init=bias_init, promote_dtype=promote_dtype, rngs=rngs)

    def __call__(self, carry: Any, inputs: Any) -> tuple:
        new = self.dense_i(inputs) + self.dense_h(carry)
        if self.residual:
            new = new + carry
        new = self.activation_fn(new)
        return new, new


def flip_sequences(inputs: Any, seq_lengths: Any, num_batch_dims: int, time_major: bool) -> Any:
    """Reverses each sequence along time, keeping padding (positions ``>= seq_length``) at the end."""
    time_axis = 0 if time_major else num_batch_dims
    max_steps = inputs.shape[time_axis]
    if seq_lengths is None:
        return jnp.flip(inputs, axis=time_axis)
    seq_lengths = jnp.expand_dims(seq_lengths, axis=time_axis)
    idxs = jnp.arange(max_steps - 1, -1, -1)
    if time_major:
        idxs = jnp.reshape(idxs, [max_steps] + [1] * num_batch_dims)
    else:
        idxs = jnp.reshape(idxs, [1] * num_batch_dims + [max_steps])
    idxs = (idxs + seq_lengths) % max_steps
    idxs = jnp.reshape(idxs, list(idxs.shape) + [1] * (inputs.ndim - idxs.ndim))
    return jnp.take_along_axis(inputs, idxs, axis=time_axis)


def _select_last_carry(carries: Any, seq_lengths: Any) -> Any:
    last = seq_lengths - 1
    return tree_util.tree_map(lambda x: x[last, jnp.arange(x.shape[1])], carries)


class RNN(Module):
    """Runs a cell over the time axis: ``inputs`` ``(*batch, time, *features)`` (``(time, *batch, ...)`` if
    ``time_major``) -> outputs of the same layout (and the final carry with ``return_carry``).

    The initial carry comes from ``cell.initialize_carry`` with this module's
    ``carry`` RNG stream (``rngs=True``: a stream seeded with 0, as in Flax).
    ``reverse`` runs backwards (``keep_order`` flips the outputs back);
    ``seq_lengths`` handles padded batches.
    """

    def __init__(self, cell: RNNCellBase, *, time_major: bool = False, return_carry: bool = False,
                 reverse: bool = False, keep_order: bool = False, unroll: int = 1, state_axes: Any = None,
                 broadcast_rngs: Any = None, rngs: Any = True):
        self.cell = cell
        self.time_major = time_major
        self.return_carry = return_carry
        self.reverse = reverse
        self.keep_order = keep_order
        self.unroll = unroll
        if rngs is True:
            self.rngs = RngStream(0, tag='carry')
        elif isinstance(rngs, Rngs):
            self.rngs = rngs.carry.fork()
        elif rngs is False:
            self.rngs = None
        else:
            raise ValueError(f'Expected rngs to be a jax.Array, int, Rngs, or bool. Got {type(rngs)}.')
        self.state_axes = state_axes or StateAxes({...: Carry})
        self.broadcast_rngs = broadcast_rngs

    def __call__(self, inputs: Any, *, initial_carry: Any = None, seq_lengths: Any = None, return_carry: Any = None,
                 time_major: Any = None, reverse: Any = None, keep_order: Any = None, rngs: Any = None) -> Any:
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        time_axis = 0 if time_major else inputs.ndim - (self.cell.num_feature_axes + 1)
        if time_axis < 0:
            time_axis += inputs.ndim
        batch_dims = inputs.shape[1:-self.cell.num_feature_axes] if time_major else inputs.shape[:time_axis]
        if reverse:
            inputs = flip_sequences(inputs, seq_lengths, len(batch_dims), time_major)
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, Rngs):
            rngs = rngs.carry.fork()
        carry = (self.cell.initialize_carry(inputs.shape[:time_axis] + inputs.shape[time_axis + 1:], rngs)
                 if initial_carry is None else initial_carry)
        slice_carry = seq_lengths is not None and return_carry
        bcast = filterlib.All(RngState, self.broadcast_rngs)
        pairs = ((bcast, None), *(self.state_axes._pairs if isinstance(self.state_axes, StateAxes)
                                  else tuple(self.state_axes.items())))

        def step(cell: RNNCellBase, carry: Any, x: Any) -> tuple:
            carry, y = cell(carry, x)
            return carry, ((carry, y) if slice_carry else y)

        # Stack per-step outputs on axis 0, then move them to the time axis (carries stay time-major).
        scanned = scan(step, in_axes=(StateAxes(pairs), Carry, time_axis), out_axes=(Carry, 0), unroll=self.unroll)
        with split_rngs(self.cell, splits=1, only=self.broadcast_rngs, squeeze=True):
            carry_out, stacked = scanned(self.cell, carry, inputs)
        if slice_carry:
            carries, outputs = stacked
            carry_out = _select_last_carry(carries, seq_lengths)
        else:
            outputs = stacked
        outputs = tree_util.tree_map(lambda y: jnp.moveaxis(y, 0, time_axis), outputs)
        if reverse and keep_order:
            outputs = flip_sequences(outputs, seq_lengths, len(batch_dims), time_major)
        return (carry_out, outputs) if return_carry else outputs


def _concatenate(a: Any, b: Any) -> Any:
    return jnp.concatenate([a, b], axis=-1)


class Bidirectional(Module):
    """Runs ``forward_rnn`` forwards and ``backward_rnn`` backwards (outputs kept in order) and merges the outputs
    with ``merge_fn`` (default: concatenate features)."""

    def __init__(self, forward_rnn: Any, backward_rnn: Any, *, merge_fn: Any = _concatenate,
                 time_major: bool = False, return_carry: bool = False, rngs: Any = True):
        self.forward_rnn = forward_rnn
        self.backward_rnn = backward_rnn
        self.merge_fn = merge_fn
        self.time_major = time_major
        self.return_carry = return_carry
        if rngs is True:
            self.rngs = RngStream(0, tag='carry')
        elif rngs is False:
            self.rngs = None
        elif isinstance(rngs, Rngs):
            self.rngs = rngs.carry.fork()
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        else:
            raise ValueError(f'Expected rngs to be a jax.Array, int, Rngs, RngStream or bool. Got {type(rngs)}.')

    def __call__(self, inputs: Any, *, initial_carry: Any = None, rngs: Any = None, seq_lengths: Any = None,
                 return_carry: Any = None, time_major: Any = None, reverse: Any = None, keep_order: Any = None) -> Any:
        time_major = self.time_major if time_major is None else time_major
        return_carry = self.return_carry if return_carry is None else return_carry
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, Rngs):
            rngs = rngs.carry
        fwd_init, bwd_init = initial_carry if initial_carry is not None else (None, None)
        carry_f, out_f = self.forward_rnn(inputs, initial_carry=fwd_init, rngs=rngs, seq_lengths=seq_lengths,
                                          return_carry=True, time_major=time_major, reverse=False)
        carry_b, out_b = self.backward_rnn(inputs, initial_carry=bwd_init, rngs=rngs, seq_lengths=seq_lengths,
                                           return_carry=True, time_major=time_major, reverse=True, keep_order=True)
        outputs = tree_util.tree_map(self.merge_fn, out_f, out_b)
        return ((carry_f, carry_b), outputs) if return_carry else outputs
