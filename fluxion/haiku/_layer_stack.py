"""`hk.layer_stack`: apply the same layer function `num_layers` times with separate parameters, via `lax.scan`.

The layer function is transformed on its own (`transform_with_state`); its parameters for all layers are created
by scanning its `init` over the layers (each with its own key) inside `lift_with_state`, so every parameter gets a
leading axis of size `num_layers` and lives under `<name>/<layer module>` (`__layer_stack_no_per_layer/...` by
default). The forward pass scans the layer's `apply` over the stacked parameters, state and per-layer keys. Key
splitting follows Haiku (`split(rng, 3)` per layer at init, `split(next_rng_key(), num_layers)` at apply), so
stacked parameters equal Haiku's for the same seed.

With a `transparency_map`, the lifted parameters are stored per layer under the names the map gives (e.g. the
names an unrolled loop would produce), and stacked again for the scan.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple, Protocol

import fluxion.numpy as jnp
from fluxion import lax, random, tree_util

from ._base import maybe_next_rng_key
from ._lift import lift_with_state, transparent_lift_with_state
from ._transform import transform_with_state

__all__ = ["layer_stack", "LayerStackTransparencyMapping"]


class LayerStackTransparencyMapping(Protocol):
    """Maps between stacked module names and per-layer (flat) names for `layer_stack(transparent=True)`."""

    def stacked_to_flat(self, stacked_module_name: str, scan_idx: int) -> str:
        """The flat name of layer `scan_idx` of `stacked_module_name`."""

    def flat_to_stacked(self, unstacked_module_name: str) -> tuple[str, int] | None:
        """`(stacked name, layer index)` of a flat name, or None if it is not part of the stack."""


class _Carry(NamedTuple):
    x: Any


class _Scanned(NamedTuple):
    params: Any
    rng: Any
    state: Any
    args_ys: Any


def _check_no_varargs(f: Callable) -> None:
    params = list(inspect.signature(f).parameters.values())
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        raise ValueError("The function `f` should not have any `varargs` (that is *args) argument. Instead, it "
                         "should only use explicit positional arguments")


def _split_params(stacked: dict, num_layers: int, name_map: LayerStackTransparencyMapping) -> dict:
    out: dict = {}
    for module_name, bundle in stacked.items():
        for i in range(num_layers):
            flat = name_map.stacked_to_flat(module_name, i)
            if flat in out:
                raise ValueError(f"Found conflicting unstacked module name for {module_name} at {flat}.")
            out[flat] = {k: v[i] for k, v in bundle.items()}
    return out


def _stack_params(flat: dict, num_layers: int, name_map: LayerStackTransparencyMapping) -> dict:
    per_layer: list[dict] = [{} for _ in range(num_layers)]
    for module_name, bundle in flat.items():
        found = name_map.flat_to_stacked(module_name)
        if found is None:
            continue
        stacked_name, idx = found
        target = per_layer[idx].setdefault(stacked_name, {})
        for k, v in bundle.items():
            if k in target:
                raise ValueError(f"Found conflicting values for param {stacked_name}/{k} at index {idx}.")
            target[k] = v
    return tree_util.tree_map(lambda *xs: jnp.stack(xs, axis=0), *per_layer)


class _LayerStack:
    def __init__(self, layer_fn: Callable, count: int, unroll: int, pass_reverse: bool,
                 transparency_map: LayerStackTransparencyMapping | None, name: str):
        # layer_fn(x, *per_layer_args, **kwargs) -> (new_x, per_layer_output)
        self._layer_fn = layer_fn
        self._count = count
        self._unroll = unroll
        self._pass_reverse = pass_reverse
        self._map = transparency_map
        self._name = name

    def __call__(self, x: Any, *args_ys, reverse: bool = False) -> tuple[Any, Any]:
        init_fn, apply_fn = transform_with_state(self._layer_fn)

        def per_layer_init(carry, args):
            c, rng = carry
            rng, next_rng, apply_rng = (None, None, None) if rng is None else random.split(rng, 3)
            params, state = init_fn(rng, c, *args)
            (c, _), state = apply_fn(params, state, apply_rng, c, *args)
            return (c, next_rng), (params, state)

        def scanned_init(x, rng):
            _, (params, state) = lax.scan(per_layer_init, (x, rng), args_ys, length=self._count)
            if self._map is not None:
                return _split_params(params, self._count, self._map), _split_params(state, self._count, self._map)
            return params, state

        rng = maybe_next_rng_key()
        if self._map is not None:
            params_and_state, updater = transparent_lift_with_state(scanned_init, allow_reuse=True)
        else:
            params_and_state, updater = lift_with_state(scanned_init, allow_reuse=True, name=self._name)
        params, state = params_and_state(x, rng)

        kwargs = {"reverse": reverse} if self._pass_reverse else {}

        def layer(carry, scanned):
            (out_x, z), new_state = apply_fn(scanned.params, scanned.state, scanned.rng, carry.x,
                                             *scanned.args_ys, **kwargs)
            return _Carry(out_x), (z, new_state)

        key = maybe_next_rng_key()
        keys = None if key is None else random.split(key, self._count)
        if self._map is not None:
            params = _stack_params(params, self._count, self._map)
            state = _stack_params(state, self._count, self._map)
        carry, (zs, states) = lax.scan(layer, _Carry(x), _Scanned(params, keys, state, args_ys), length=self._count,
                                       unroll=self._unroll, reverse=reverse)
        updater.update(states)
        return carry.x, zs


def layer_stack(num_layers: int, with_per_layer_inputs: bool = False, unroll: int = 1,
                pass_reverse_to_layer_fn: bool = False, transparent: bool = False,
                transparency_map: LayerStackTransparencyMapping | None = None,
                name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator: `layer_stack(n)(f)` applies `f` `n` times, each time with its own parameters.

    Without per-layer inputs `f(*xs) -> xs` (same structure in and out); with `with_per_layer_inputs=True`,
    `f(x, *ys_i) -> (x, z_i)` and the wrapped function `(x, *ys) -> (x, zs)` slices every `ys` along axis 0 and
    stacks the `z_i`.

    Raises:
        ValueError: `transparent=True` without a `transparency_map`; `f` taking `*args`.
        AssertionError: a per-layer input whose leading axis is not `num_layers`.
    """
    if transparent and transparency_map is None:
        raise ValueError("transparency_map must be provided with transparent=True.")
    if not name:
        name = "__layer_stack_with_per_layer" if with_per_layer_inputs else "__layer_stack_no_per_layer"

    def make(layer_fn):
        return _LayerStack(layer_fn, num_layers, unroll, pass_reverse_to_layer_fn, transparency_map, name)

    def iterate(f: Callable) -> Callable:
        if with_per_layer_inputs:
            @functools.wraps(f)
            def wrapped(x, *args, **kwargs):
                for ys in tree_util.tree_leaves(args):
                    assert ys.shape[0] == num_layers, f"{ys.shape[0]} != {num_layers}"
                return make(lambda x, *a, **k: f(x, *a, **k))(x, *args, **kwargs)
            return wrapped

        _check_no_varargs(f)

        def no_per_layer(xs, **kwargs):
            out = f(*xs, **kwargs)
            return (out if len(xs) != 1 else (out,)), None

        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            out = make(no_per_layer)(args, **kwargs)[0]
            return out[0] if len(args) == 1 else out
        return wrapped

    return iterate
