"""PopArt: adaptive target normalization that Preserves the Outputs Precisely (van Hasselt et al. 2016,
"Learning values across many orders of magnitude", https://arxiv.org/abs/1602.07714; multi-task form from Hessel
et al. 2018, https://arxiv.org/abs/1809.04474).

`art` tracks per-output first and second moments of the targets with step size `beta`; `pop` rescales the final
linear layer so that its unnormalized outputs are unchanged by the new statistics.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Mapping, Tuple

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from ._base import one_hot
from ._checks import RLaxInputError

__all__ = ["PopArtState", "PopArtOutput", "normalize", "unnormalize", "unnormalize_linear", "art", "pop", "popart"]

PopArtState = collections.namedtuple("PopArtState", ["shift", "scale", "second_moment"])
PopArtState.__doc__ = """PopArt's running statistics per output (van Hasselt et al. 2016, "Learning values across
many orders of magnitude"): `shift` (the mean), `scale` (the standard deviation) and `second_moment`, each a
float array of shape (num_outputs,). Fields as in RLax."""
PopArtOutput = collections.namedtuple("PopArtOutput", ["normalized", "unnormalized"])


def _scatter_add(source: Any, indices: Any, updates: Any, axis_name: Any) -> Any:
    # Sum the updates per output index (one-hot matmul, so repeated indices accumulate), then across replicas.
    totals = jnp.sum(jnp.reshape(updates, (-1,))[:, None] * one_hot(jnp.reshape(indices, (-1,)), source.shape[0]),
                     axis=0)
    if axis_name is not None:
        for name in ((axis_name,) if isinstance(axis_name, str) else axis_name):
            totals = lax.psum(totals, axis_name=name)
    return source + totals


def _check_indices(fn: str, indices: Any, shape: tuple, what: str) -> None:
    if not jnp.issubdtype(jnp.asarray(indices).dtype, jnp.integer):
        raise RLaxInputError(f"{fn}: `indices` must have an integer dtype, got {jnp.asarray(indices).dtype}")
    if tuple(jnp.shape(indices)) != tuple(shape):
        raise RLaxInputError(f"{fn}: `indices` shape {tuple(jnp.shape(indices))} must equal {what} {tuple(shape)}")


def normalize(state: PopArtState, unnormalized: Any, indices: Any) -> Any:
    """`(unnormalized - shift[indices]) / scale[indices]`."""
    return (unnormalized - state.shift[indices]) / state.scale[indices]


def unnormalize(state: PopArtState, normalized: Any, indices: Any) -> Any:
    """`scale[indices] * normalized + shift[indices]`."""
    return state.scale[indices] * normalized + state.shift[indices]


def unnormalize_linear(state: PopArtState, inputs: Any, indices: Any) -> PopArtOutput:
    """Selects output `indices` of `inputs` `[..., num_outputs]` and returns it normalized and unnormalized.

    Raises:
        RLaxInputError (an AssertionError, as RLax raises): `indices` not integer or not of shape `inputs.shape[:-1]` (as RLax).
    """
    _check_indices("unnormalize_linear", indices, jnp.shape(inputs)[:-1], "inputs.shape[:-1]")
    normalized = jnp.squeeze(jnp.take_along_axis(inputs, indices[..., None], axis=-1), axis=-1)
    return PopArtOutput(normalized, unnormalize(state, normalized, indices))


def art(state: PopArtState, targets: Any, indices: Any, step_size: float, scale_lb: float, scale_ub: float,
        axis_name: Any = None) -> PopArtState:
    """Adaptively Rescaling Targets: moves `shift` and `second_moment` of each indexed output toward the targets,
    `m <- m + step_size (x - m)` (summed over targets sharing an index and over `axis_name` replicas), and sets
    `scale = sqrt(clip(second_moment - shift^2, scale_lb^2, scale_ub^2))`. The new state carries no gradient.

    Raises:
        RLaxInputError (an AssertionError, as RLax raises): `indices` not integer or not of `targets`' shape (as RLax).
    """
    _check_indices("art", indices, jnp.shape(targets), "targets.shape")
    shift = _scatter_add(state.shift, indices, step_size * (targets - state.shift[indices]), axis_name)
    second = _scatter_add(state.second_moment, indices,
                          step_size * (jnp.square(targets) - state.second_moment[indices]), axis_name)
    scale = jnp.sqrt(jnp.clip(second - jnp.square(shift), scale_lb ** 2, scale_ub ** 2))
    return tree_util.tree_map(lax.stop_gradient, PopArtState(shift, scale, second))


def pop(params: Mapping[str, Any], old: PopArtState, new: PopArtState) -> dict:
    """Preserving Outputs Precisely: rescales a linear layer `{"w": (in, out), "b": (out,)}` so that
    `new.scale * (x w' + b') + new.shift == old.scale * (x w + b) + old.shift`."""
    w = params["w"] * jnp.broadcast_to(old.scale / new.scale, params["w"].shape)
    b = (old.scale * params["b"] + old.shift - new.shift) / new.scale
    return dict(w=w, b=b)


def popart(num_outputs: int, step_size: float, scale_lb: float, scale_ub: float,
           axis_name: Any = None) -> Tuple[Callable, Callable]:
    """`(initial_state, update)`: `initial_state()` is `PopArtState(zeros, ones, ones)` of length `num_outputs`;
    `update(params, state, targets, indices)` runs `art` then `pop` and returns `(params, state)` (unchanged when
    `step_size` is None)."""

    def initial_state() -> PopArtState:
        return PopArtState(jnp.zeros([num_outputs]), jnp.ones([num_outputs]), jnp.ones([num_outputs]))

    def popart_update(params, state, targets, indices):
        if step_size is None:
            return params, state
        new_state = art(state, targets, indices, step_size, scale_lb, scale_ub, axis_name)
        return pop(params, state, new_state), new_state

    return initial_state, popart_update
