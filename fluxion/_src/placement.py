"""Placing arrays on shardings: `device_put(x, sharding)`, `with_sharding_constraint`, `reshard`, jit's
`in_shardings`/`out_shardings`, the `make_array_from_*` constructors and `visualize_array_sharding`.

A placed Array keeps one global NumPy buffer and records its sharding (`Array.sharding`); `addressable_shards` are
views of that buffer (see `sharding.py`). So placement never changes a value: every function here returns the
values of the unsharded computation. Under tracing (`jit`, `grad`, `vmap`) the constraint is checked against the
traced shape and the value passes through unchanged; the sharding is attached to concrete results only.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import core
from . import devices as devices_mod
from .api_util import as_value
from .core import Array, Tracer
from .sharding import (NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding, as_sharding,
                       sharding_layout_text)
from .tree_util import tree_flatten, tree_broadcast_prefix, tree_unflatten


def _is_spec_leaf(x) -> bool:
    return x is None or isinstance(x, (Sharding, PartitionSpec, devices_mod.Device))


# `what` names the caller in messages; callers in this set check as `device_put` does (a plain ValueError for a
# dimension the blocks do not divide), the others as jit does (rank errors name the annotation, divisibility raises
# IndivisibleError), matching where JAX raises which.
_EAGER_CALLERS = {"device_put", "make_array_from_callback", "make_array_from_single_device_arrays",
                  "make_array_from_process_local_data"}


def _check_fits(sharding: Sharding, shape: tuple, what: str = "device_put") -> None:
    if not isinstance(sharding, NamedSharding):
        return
    if what in _EAGER_CALLERS:
        sharding.check_shape(shape)
        return
    if len(shape) < len(sharding.spec):
        try:
            sharding.check_shape(shape)
        except ValueError as e:
            raise ValueError(f"One of {what} is incompatible with its sharding annotation {sharding!r}: {e}") from None
    sharding.shard_shape(shape)


def place(x: Any, sharding: Any, what: str) -> Any:
    """One leaf placed on `sharding` (a Sharding, Device or PartitionSpec; None leaves `x` as it is).

    Raises:
      ValueError: the spec does not fit the shape (rank or divisibility), naming `what`.
    """
    if sharding is None:
        return x
    sharding = as_sharding(sharding, what)
    value = as_value(x)
    _check_fits(sharding, core.get_aval(value).shape, what)
    if isinstance(value, Tracer):
        return value
    return Array(value._value, value.weak_type, sharding)


def place_tree(tree: Any, shardings: Any, what: str) -> Any:
    """Places every leaf of `tree` on the matching leaf of `shardings` (a tree prefix of `tree`)."""
    leaves, treedef = tree_flatten(tree)
    if _is_spec_leaf(shardings):
        flat = [shardings] * len(leaves)
    else:
        try:
            flat = tree_broadcast_prefix(shardings, tree, is_leaf=_is_spec_leaf)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{what} must be a tree prefix of the value's tree: {e}") from None
    return tree_unflatten(treedef, [place(x, s, what) for x, s in zip(leaves, flat)])


def device_put_sharded_value(x: Any, device_or_sharding: Any) -> Any:
    """`device_put`'s placement: a Device, Sharding or PartitionSpec (or a tree prefix of them) for `x`."""
    return place_tree(x, device_or_sharding, "device_put")


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Asks for `x` (a pytree) to be laid out as `shardings` (a Sharding, a PartitionSpec resolved against the
    current mesh, or a tree prefix of them). Values are unchanged; concrete results carry the sharding.

    Raises:
      ValueError: a spec does not fit its leaf's shape, or a PartitionSpec is given with no current mesh.
    """
    return place_tree(x, shardings, "with_sharding_constraint arguments")


def reshard(xs: Any, out_shardings: Any) -> Any:
    """Moves `xs` to `out_shardings` (same rules as `with_sharding_constraint`; JAX's `jax.reshard`).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> from fluxion.sharding import NamedSharding, PartitionSpec as P
      >>> mesh = fluxion.make_mesh((1,), ("x",))
      >>> y = fluxion.reshard(jnp.arange(4.0), NamedSharding(mesh, P("x")))
      >>> y.sharding.spec, y
      (P('x',), Array([0., 1., 2., 3.], dtype=float32))
    """
    return place_tree(xs, out_shardings, "reshard")


def check_in_shardings(args: tuple, in_shardings: Any) -> None:
    """jit's `in_shardings` check: every positional argument's shape must fit its sharding."""
    place_tree(tuple(args), tuple(in_shardings) if isinstance(in_shardings, list) else in_shardings,
               "pjit arguments")


# ----------------------------------------------------------------------------------------------------------------
# Building global arrays from blocks
# ----------------------------------------------------------------------------------------------------------------

def _index_key(index: tuple) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def make_array_from_callback(shape: Sequence[int], sharding: Sharding, data_callback: Callable,
                             dtype=None) -> Array:
    """The array of global `shape` whose block on each addressable device is `data_callback(index)` (index: the
    device's tuple of slices). The callback is called once per distinct block.

    Raises:
      ValueError: a block returned by the callback does not have the sharding's shard shape.

    Examples:
      >>> import numpy as np
      >>> import fluxion
      >>> from fluxion.sharding import NamedSharding, PartitionSpec as P
      >>> mesh = fluxion.make_mesh((1,), ("x",))
      >>> data = np.arange(8.0, dtype=np.float32).reshape(4, 2)
      >>> arr = fluxion.make_array_from_callback(data.shape, NamedSharding(mesh, P("x")), lambda idx: data[idx])
      >>> arr.shape, float(arr.sum())
      ((4, 2), 28.0)
    """
    shape = tuple(int(s) for s in shape)
    sharding = as_sharding(sharding, "make_array_from_callback")
    _check_fits(sharding, shape)
    out = None
    done = {}
    for device, index in sharding.addressable_devices_indices_map(shape).items():
        key = _index_key(index)
        if key in done:
            continue
        block = np.asarray(data_callback(index))
        if dtype is not None:
            block = block.astype(dtype)
        expected = np.empty(shape, dtype=np.bool_)[index].shape
        if block.shape != expected:
            raise ValueError(f"Expected shard shape {expected} doesn't match the shape {block.shape} of the block "
                             f"make_array_from_callback's callback returned for index {index} on {device}")
        if out is None:
            out = np.empty(shape, dtype=block.dtype)
        out[index] = block
        done[key] = True
    if out is None:
        raise ValueError("make_array_from_callback: the sharding has no device in this process")
    return place(Array(out), sharding, "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *,
                                         dtype=None) -> Array:
    """The global array of `shape` assembled from one block per addressable device of `sharding` (`arrays` in the
    order of `sharding.addressable_devices_indices_map`, i.e. the mesh's device order).

    Raises:
      ValueError: the number of blocks differs from the number of addressable devices, or a block's shape is not
        the shard shape.
    """
    shape = tuple(int(s) for s in shape)
    sharding = as_sharding(sharding, "make_array_from_single_device_arrays")
    _check_fits(sharding, shape)
    index_map = sharding.addressable_devices_indices_map(shape)
    order = [d for d in sharding._device_order() if d in index_map]
    arrays = list(arrays)
    if len(arrays) != len(order):
        raise ValueError(f"Expected {len(order)} per-device arrays (one per addressable device of the sharding) "
                         f"but make_array_from_single_device_arrays got {len(arrays)}")
    out = None
    for device, block in zip(order, arrays):
        block = np.asarray(block)
        index = index_map[device]
        expected = np.empty(shape, dtype=np.bool_)[index].shape
        if block.shape != expected:
            raise ValueError(f"Expected shard shape {expected} doesn't match the single device array shape "
                             f"{block.shape} (make_array_from_single_device_arrays, array for {device})")
        if out is None:
            out = np.empty(shape, dtype=dtype or block.dtype)
        out[index] = block
    return place(Array(out), sharding, "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Sharding, local_data: Any, global_shape=None) -> Array:
    """The global array whose part owned by this process is `local_data`. In a single process the local data is
    the whole array, so this is `device_put(local_data, sharding)` after checking `global_shape`.

    Raises:
      ValueError: `global_shape` differs from the local data's shape; NotImplementedError: more than one process.
    """
    if devices_mod.process_count() > 1:
        raise NotImplementedError("make_array_from_process_local_data: fluxion supports it in a single process only")
    data = np.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != data.shape:
        raise ValueError(f"make_array_from_process_local_data: global_shape {tuple(global_shape)} differs from "
                         f"the local data's shape {data.shape} (a single process holds the whole array)")
    return place(Array(data.copy()), sharding, "make_array_from_process_local_data")


def visualize_array_sharding(arr: Any, *, use_color: bool = False, scale: float = 1.0, min_width: int = 9,
                             max_width: int = 80, color_map=None) -> None:
    """Prints the blocks of a 1-D or 2-D array and the devices holding each as a plain-text grid (see
    `sharding.sharding_layout_text`; JAX draws it with `rich`). `use_color`, `scale`, `min_width`, `max_width` and
    `color_map` are accepted for compatibility and ignored: the text grid has no colours and equal-width cells.

    Raises:
      ValueError: the array has rank > 2.
    """
    if isinstance(arr, Tracer):
        raise ValueError("visualize_array_sharding needs a concrete array (it was given a traced value)")
    arr = as_value(arr)
    sharding = arr.sharding if isinstance(arr, Array) else SingleDeviceSharding(devices_mod.local_devices()[0])
    print(sharding_layout_text(arr.shape, sharding))
