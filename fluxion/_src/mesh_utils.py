"""Arranging devices into mesh-shaped arrays (`jax.experimental.mesh_utils`'s counterparts).

JAX orders accelerator devices so that neighbouring mesh positions are neighbours on the chip interconnect. CPU
devices have no interconnect topology, so fluxion keeps the order it is given (`fluxion.devices()` lists devices by
id, process by process), as JAX does for CPU devices. `device_kind_handler_dict` lets a program register its own
arrangement for a device kind, which `create_device_mesh` then uses first.
"""

from __future__ import annotations

import collections
import math
from typing import Any, Callable, Sequence

import numpy as np

from . import devices as devices_mod

# device_kind -> handler(mesh_shape, devices, *, contiguous_submeshes) returning an ndarray of devices, or None to
# fall back to the default order. Empty: fluxion's only device kind, "cpu", has no topology to optimise for.
device_kind_handler_dict: dict[str, Callable[..., Any]] = {}


def _canonical_axis_sizes(axis_shapes, who: str, arg: str = "mesh_shape") -> tuple:
    try:
        sizes = tuple(axis_shapes)
    except TypeError:
        sizes = None
    if sizes is None or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in sizes):
        raise ValueError(f"`{arg}` passed to `{who}` should be a sequence of ints. Got {axis_shapes}")
    return tuple(int(s) for s in sizes)


def _as_grid(devices: Sequence, shape: tuple) -> np.ndarray:
    out = np.empty(len(devices), dtype=object)
    out[:] = list(devices)
    return out.reshape(shape)


def create_device_mesh(mesh_shape: Sequence[int], devices=None, *, contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """An `np.ndarray` of devices of shape `mesh_shape`: a handler registered in `device_kind_handler_dict` for the
    last device's kind decides if there is one (and returns non-None), else the devices keep their given order
    (default `fluxion.devices()`). `allow_split_physical_axes` is accepted and has no effect (no physical axes).

    Raises:
      ValueError: `mesh_shape` is not a sequence of ints, or its product differs from the number of devices.
    """
    devs = devices_mod.devices() if devices is None else list(devices)
    shape = _canonical_axis_sizes(mesh_shape, "create_device_mesh")
    if math.prod(shape) != len(devs):
        raise ValueError(f"Number of devices {len(devs)} must equal the product of mesh_shape {shape}")
    handler = device_kind_handler_dict.get(devs[-1].device_kind) if devs else None
    if handler is not None:
        result = handler(shape, devs, contiguous_submeshes=contiguous_submeshes)
        if result is not None:
            return result
    return _as_grid(devs, shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int], devices=None, *,
                              process_is_granule: bool = False, should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh for two-level parallelism: devices are grouped into granules (processes when `process_is_granule`;
    slices otherwise, which fluxion's CPU devices do not have), each granule becomes a `mesh_shape` block, and the
    blocks are tiled in a `dcn_mesh_shape` grid. The result has shape `mesh_shape * dcn_mesh_shape` elementwise,
    e.g. `create_hybrid_device_mesh((2, 2), (2, 1), process_is_granule=True)` on 2 processes of 4 devices is a 4 x 2
    grid whose top half is process 0.

    Raises:
      ValueError: `process_is_granule` is False (CPU devices have no `slice_index`, as in JAX), the number of
        granules differs from `prod(dcn_mesh_shape)`, or a granule's device count differs from `prod(mesh_shape)`.
    """
    devs = devices_mod.devices() if devices is None else list(devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devs[0], attr):
        raise ValueError(f"Device {devs[0]} does not have attribute {attr}. See `process_is_granule` option.")
    groups: dict = collections.defaultdict(list)
    for d in devs:
        groups[getattr(d, attr)].append(d)
    granules = [groups[k] for k in sorted(groups)] if should_sort_granules_by_key else list(groups.values())
    dcn_shape = _canonical_axis_sizes(dcn_mesh_shape, "create_hybrid_device_mesh")
    if math.prod(dcn_shape) != len(granules):
        raise ValueError(f"Number of slices {len(granules)} must equal the product of dcn_mesh_shape {dcn_shape}")
    blocks = [create_device_mesh(mesh_shape, g, allow_split_physical_axes=allow_split_physical_axes)
              for g in granules]
    grid = np.empty(len(blocks), dtype=object)
    grid[:] = blocks
    return np.block(grid.reshape(dcn_shape).tolist())
