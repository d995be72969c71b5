"""Meshes, partition specs and shardings (`jax.sharding`'s counterparts).

A `Mesh` arranges devices in an n-dimensional grid with one name per grid axis. A `PartitionSpec` says, for each
dimension of an array, which mesh axes (none, one or several) split it; a `NamedSharding(mesh, spec)` combines the
two and answers "which block of a global array lives on which device" (`devices_indices_map`, `shard_shape`).

fluxion computes on the host with NumPy, so a sharded `Array` keeps ONE global buffer and its shards
(`Array.addressable_shards`) are views of it. Values are therefore always those of the unsharded computation; the
sharding is metadata that mirrors what JAX would place on each device.

Differences from JAX: no memory kinds other than "device"; no `PositionalSharding`/`GSPMDSharding`; `make_mesh`
orders devices by id (CPU devices have no physical topology to optimise for).
"""

from __future__ import annotations

import collections
import contextlib
import enum
import math
import threading
from typing import Any, Sequence

import numpy as np

from . import devices as devices_mod
from .mesh_utils import _canonical_axis_sizes, create_device_mesh


class AxisType(enum.Enum):
    """How a mesh axis is treated by the partitioner: `Auto` (the compiler decides), `Explicit` (shardings are part
    of the array types) or `Manual` (inside `shard_map`). fluxion records the type; values never depend on it."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class DuplicateSpecError(Exception):
    """A partition spec names the same mesh axis for two array dimensions (JAX raises this class too)."""

    def __init__(self, message, mesh=None, pspec=None):
        super().__init__(message)
        self.message = message
        self.mesh = mesh
        self.pspec = pspec

    def __str__(self) -> str:
        return self.message


class IndivisibleError(ValueError):
    """A sharding splits a dimension into a number of blocks that does not divide it (raised by `shard_shape`)."""


class AbstractDevice:
    """The kind of device an `AbstractMesh` stands for (`device_kind`, `num_cores`, `platform`), without a device.

    fluxion's devices are all `AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)`; the value is recorded
    (it is part of an AbstractMesh's identity) and never changes what is computed. Equal when all fields are equal.
    """

    __slots__ = ("device_kind", "num_cores", "platform")

    def __init__(self, device_kind: str, num_cores: int | None, platform: str):
        object.__setattr__(self, "device_kind", device_kind)
        object.__setattr__(self, "num_cores", num_cores)
        object.__setattr__(self, "platform", platform)

    def __setattr__(self, name, value):
        raise AttributeError("AbstractDevice is immutable")

    def _repr(self) -> str:
        return f"device_kind={self.device_kind}, num_cores={self.num_cores}, platform={self.platform}"

    def __repr__(self) -> str:
        return f"AbstractDevice({self._repr()})"

    def _key(self):
        return (self.device_kind, self.num_cores, self.platform)

    def __eq__(self, other) -> bool:
        return isinstance(other, AbstractDevice) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class ManualAxisType:
    """How a value relates to the manual mesh axes inside `shard_map`: the axes it `varying` along (differs from
    device to device), and the axes along which it is `unreduced` (a partial sum still to be added up) or `reduced`.

    JAX attaches this to the types of values inside `shard_map`. fluxion's `shard_map` tracks variation through
    vmap instead (see shard_map.py), so this class is the value type only: immutable sets with JAX's validation.

    Raises:
      ValueError: `varying` shares an axis with `unreduced` or `reduced`.
    """

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        varying, unreduced, reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)
        for name, other in (("unreduced", unreduced), ("reduced", reduced)):
            if varying & other:
                raise ValueError(f"varying and {name} cannot have common mesh axes. Got varying={set(varying)} and "
                                 f"{name}={set(other)}")
        object.__setattr__(self, "varying", varying)
        object.__setattr__(self, "unreduced", unreduced)
        object.__setattr__(self, "reduced", reduced)

    def __setattr__(self, name, value):
        raise AttributeError("ManualAxisType is immutable")

    def __repr__(self) -> str:
        return f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, reduced={self.reduced})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ManualAxisType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self.varying, self.unreduced, self.reduced)

    def update(self, **kwargs) -> "ManualAxisType":
        """A copy with some of `varying`, `unreduced`, `reduced` replaced."""
        fields = dict(varying=self.varying, unreduced=self.unreduced, reduced=self.reduced)
        fields.update(kwargs)
        return ManualAxisType(**fields)

    @property
    def empty(self) -> bool:
        return not (self.varying or self.unreduced or self.reduced)

    @property
    def vur(self) -> frozenset:
        """Every axis the value is varying, unreduced or reduced along."""
        return self.varying | self.unreduced | self.reduced

    def invarying(self, mesh) -> frozenset:
        """The manual axes of `mesh` along which the value is the same on every device."""
        return frozenset(mesh.manual_axes) - self.vur


# ----------------------------------------------------------------------------------------------------------------
# PartitionSpec
# ----------------------------------------------------------------------------------------------------------------

class _Unconstrained:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"


_UNCONSTRAINED = _Unconstrained()


def _canonical_entry(p):
    """One spec entry as stored: None, UNCONSTRAINED, a name, or a tuple of >= 2 names (a 1-tuple is its name)."""
    if isinstance(p, list):
        p = tuple(p)
    if isinstance(p, tuple):
        return p[0] if len(p) == 1 else p
    return p


class PartitionSpec:
    """How each dimension of an array is split over mesh axes: one entry per leading dimension, each `None`
    (not split), a mesh axis name, or a tuple of names (split over their product, first name outermost).

    Dimensions past the last entry are not split. Entries are normalised as in JAX (`('x',)` is `'x'`, lists become
    tuples), so `P('x', ('y',)) == P('x', 'y')`; trailing `None`s are kept (`P('x', None) != P('x')`). A spec is
    not equal to a tuple.
    """

    __slots__ = ("_partitions", "unreduced", "reduced")
    UNCONSTRAINED = _UNCONSTRAINED

    def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
        for name, value in (("unreduced", unreduced), ("reduced", reduced)):
            if not isinstance(value, (set, frozenset)):
                raise TypeError(f"{name} argument of PartitionSpec should of type `frozenset` or `set`. Got type "
                                f"{type(value)}")
        object.__setattr__(self, "_partitions", tuple(_canonical_entry(p) for p in partitions))
        object.__setattr__(self, "unreduced", frozenset(unreduced))
        object.__setattr__(self, "reduced", frozenset(reduced))
        if self.unreduced & self.reduced:
            raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. Got unreduced: "
                             f"{self.unreduced} and reduced: {self.reduced}")

    def __setattr__(self, name, value):
        raise AttributeError("PartitionSpec is immutable")

    @property
    def partitions(self) -> tuple:
        return self._partitions

    def __repr__(self) -> str:
        body = repr(self._partitions)[1:-1]
        extra = []
        if self.unreduced:
            extra.append(f"unreduced={set(self.unreduced)!r}")
        if self.reduced:
            extra.append(f"reduced={set(self.reduced)!r}")
        if not extra:
            return f"P({body})"
        body = "" if not body else (f"{body} " if body.endswith(",") else f"{body}, ")
        return f"P({body}{', '.join(extra)})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, PartitionSpec):
            return False
        return (self._partitions == other._partitions and self.unreduced == other.unreduced
                and self.reduced == other.reduced)

    def __hash__(self) -> int:
        return hash((self._partitions, self.unreduced, self.reduced))

    def __getitem__(self, i):
        return self._partitions[i]

    def __iter__(self):
        return iter(self._partitions)

    def __len__(self) -> int:
        return len(self._partitions)

    def __add__(self, other):
        if isinstance(other, PartitionSpec):
            return PartitionSpec(*self._partitions, *other._partitions, unreduced=self.unreduced | other.unreduced,
                                 reduced=self.reduced | other.reduced)
        if isinstance(other, tuple):
            return PartitionSpec(*self._partitions, *other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._partitions)
        return NotImplemented

    def __reduce__(self):
        return (_make_spec, (self._partitions, self.unreduced, self.reduced))

    def index(self, value) -> int:
        return self._partitions.index(_canonical_entry(value))

    def count(self, value) -> int:
        return self._partitions.count(_canonical_entry(value))

    def update(self, partitions=None, unreduced=None, reduced=None) -> "PartitionSpec":
        return PartitionSpec(*(self._partitions if partitions is None else partitions),
                             unreduced=self.unreduced if unreduced is None else unreduced,
                             reduced=self.reduced if reduced is None else reduced)

    def axes_per_dim(self, ndim: int) -> list[tuple]:
        """The mesh axes splitting each of `ndim` dimensions (a tuple per dimension, empty when not split)."""
        out = []
        for d in range(ndim):
            p = self._partitions[d] if d < len(self._partitions) else None
            if p is None or p is _UNCONSTRAINED:
                out.append(())
            else:
                out.append(p if isinstance(p, tuple) else (p,))
        return out


def _make_spec(partitions, unreduced, reduced):
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec


# ----------------------------------------------------------------------------------------------------------------
# Meshes
# ----------------------------------------------------------------------------------------------------------------

def _normalize_axis_types(axis_names: tuple, axis_types, default, who: str) -> tuple:
    if axis_types is None:
        axis_types = (default,) * len(axis_names)
    elif isinstance(axis_types, AxisType):
        axis_types = (axis_types,)
    axis_types = tuple(axis_types)
    if not all(isinstance(a, AxisType) for a in axis_types):
        raise TypeError(f"axis_types passed to {who} must be of type `fluxion.sharding.AxisType`. Got {axis_types}")
    if len(axis_types) != len(axis_names):
        raise ValueError(f"Number of axis names should match the number of axis_types. Got axis_names={axis_names} "
                         f"and axis_types={axis_types}")
    return axis_types


def _normalize_axis_names(axis_names, who: str) -> tuple:
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(set(names)) != len(names):
        raise ValueError(f"{who}: axis_names must be unique, got {names}")
    return names


class _BaseMesh:
    """What `Mesh` and `AbstractMesh` share: named axes with sizes and types."""

    axis_names: tuple
    axis_sizes: tuple
    axis_types: tuple

    @property
    def shape(self) -> "collections.OrderedDict[str, int]":
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    def _shape_repr(self) -> str:
        return ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple) if self.axis_names else "()"

    @property
    def _name_to_type(self) -> dict:
        return dict(zip(self.axis_names, self.axis_types))

    @property
    def manual_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == AxisType.Manual)

    @property
    def explicit_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == AxisType.Explicit)

    @property
    def auto_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == AxisType.Auto)


class AbstractMesh(_BaseMesh):
    """A mesh's axis names, sizes and types without devices (what tracing needs).

    Args:
      axis_sizes: size of each axis. axis_names: one name per axis. axis_types: one `AxisType` per axis
        (default `Auto`). abstract_device: the `AbstractDevice` the mesh stands for (a concrete mesh's
        `abstract_mesh` records its devices' kind); part of the mesh's identity (equality, repr).
    """

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], axis_types=None, *,
                 abstract_device: AbstractDevice | None = None):
        self.abstract_device = abstract_device
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = _normalize_axis_names(axis_names, "AbstractMesh")
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: axis_sizes {self.axis_sizes} and axis_names {self.axis_names} must "
                             "have the same length")
        self.axis_types = _normalize_axis_types(self.axis_names, axis_types, AxisType.Auto, "AbstractMesh")

    def __repr__(self) -> str:
        device = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({self._shape_repr()}, axis_types={self.axis_types}{device})"

    def _key(self):
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __eq__(self, other) -> bool:
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return self

    def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
        types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return AbstractMesh(self.axis_sizes, self.axis_names, types, abstract_device=self.abstract_device)

    def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs) -> "AbstractMesh":
        """A copy with some of the sizes, names, types (or `abstract_device=`) replaced."""
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types,
                            abstract_device=kwargs.get("abstract_device", self.abstract_device))


class Mesh(_BaseMesh):
    """An n-dimensional grid of devices with one name per grid axis.

    Args:
      devices: an array (any nesting of sequences or an `np.ndarray`) of `fluxion.Device`; its shape is the mesh
        shape.
      axis_names: one name per dimension of `devices` (a single string for a 1-D mesh).
      axis_types: one `AxisType` per axis (default `Auto`, as in JAX's constructor; `make_mesh` defaults to
        `Explicit`).

    Used as a context manager (`with mesh:`), it becomes the mesh `shard_map` and `with_sharding_constraint` use when
    they are not given one (the same as `use_mesh(mesh)`).

    Raises:
      ValueError: the number of names differs from `devices.ndim`, names repeat, or a device repeats.
    """

    def __init__(self, devices, axis_names, axis_types=None):
        arr = np.array(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
        if arr.dtype != object:
            arr = arr.astype(object)
        names = _normalize_axis_names(axis_names, "Mesh")
        if arr.ndim != len(names):
            raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
                             f"second argument (`axis_names`), but got devices.ndim == {arr.ndim} and "
                             f"len(axis_names) == {len(names)}.")
        flat = list(arr.flat)
        for d in flat:
            if not isinstance(d, devices_mod.Device):
                raise TypeError(f"Mesh: devices must be fluxion devices, got {d!r}")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh: devices must be unique, got {[d.id for d in flat]}")
        arr = arr.copy()
        arr.flags.writeable = False
        self.devices = arr
        self.axis_names = names
        self.axis_sizes = tuple(arr.shape)
        self.axis_types = _normalize_axis_types(names, axis_types, AxisType.Auto, "Mesh")

    def __repr__(self) -> str:
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
                f"axis_types={self.axis_types})")

    def _short_repr(self) -> str:
        return f"Mesh({self._shape_repr()}, axis_types={self.axis_types})"

    def _key(self):
        return (tuple(d.id for d in self.devices.flat), self.axis_sizes, self.axis_names, self.axis_types)

    def __eq__(self, other) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        here = devices_mod.process_index()
        return [d for d in self.devices.flat if d.process_index == here]

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    @property
    def abstract_mesh(self) -> AbstractMesh:
        if not self.axis_names:
            return AbstractMesh((), ())
        d = self.devices.flat[0]
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=AbstractDevice(d.device_kind, None, d.platform))

    def update(self, devices=None, axis_names=None, axis_types=None) -> "Mesh":
        return Mesh(self.devices if devices is None else devices, self.axis_names if axis_names is None else
                    axis_names, self.axis_types if axis_types is None else axis_types)

    def __enter__(self):
        _MESH_STACK.stack.append(self)
        return self

    def __exit__(self, *exc):
        _MESH_STACK.stack.pop()
        return False


class _MeshStack(threading.local):
    def __init__(self):
        self.stack = []
        self.abstract = []  # use_abstract_mesh


_MESH_STACK = _MeshStack()
_GLOBAL_MESH: list = [None]


def get_mesh():
    """The mesh set by the innermost `with mesh:` / `use_mesh(mesh)` / `set_mesh(mesh)` (None when there is none)."""
    return _MESH_STACK.stack[-1] if _MESH_STACK.stack else _GLOBAL_MESH[0]


def get_abstract_mesh():
    """The mesh set by the innermost `use_abstract_mesh`, else the abstract mesh of `get_mesh()` (an empty
    `AbstractMesh` when no mesh is set)."""
    if _MESH_STACK.abstract:
        return _MESH_STACK.abstract[-1]
    mesh = get_mesh()
    return AbstractMesh((), ()) if mesh is None else mesh.abstract_mesh


class use_abstract_mesh:
    """Context manager: inside the block `get_abstract_mesh()` is `mesh` (what `auto_axes`/`explicit_axes` use to
    change axis types for a region). The concrete mesh (`get_mesh()`) is unchanged.

    Raises:
      ValueError: `mesh` is not an AbstractMesh, or (on entering) it has a different number of devices than a
        non-empty current abstract mesh.
    """

    __slots__ = ("mesh",)

    def __init__(self, mesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"Expected mesh of type `fluxion.sharding.AbstractMesh`. Got type: {type(mesh)}")
        self.mesh = mesh

    def __enter__(self):
        prev = get_abstract_mesh()
        if not prev.empty and not self.mesh.empty and prev.size != self.mesh.size:
            raise ValueError(f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: {self.mesh} with "
                             f"size={self.mesh.size} and prev mesh: {prev} with size={prev.size}")
        _MESH_STACK.abstract.append(self.mesh)
        return self.mesh

    def __exit__(self, *exc):
        _MESH_STACK.abstract.pop()
        return False


@contextlib.contextmanager
def use_mesh(mesh):
    """Makes `mesh` the current mesh inside the `with` block (see `get_mesh`)."""
    if not isinstance(mesh, (Mesh, AbstractMesh)):
        raise ValueError(f"use_mesh: expected a Mesh or AbstractMesh, got {type(mesh).__name__}")
    _MESH_STACK.stack.append(mesh)
    try:
        yield mesh
    finally:
        _MESH_STACK.stack.pop()


class _SetMesh:
    """What `set_mesh` returns: the mesh is already set globally; as a context manager, exiting restores the
    previous one (so `set_mesh` works both as a statement and as `with set_mesh(mesh):`)."""

    def __init__(self, prev):
        self._prev = prev

    def __enter__(self):
        return get_mesh()

    def __exit__(self, *exc):
        _GLOBAL_MESH[0] = self._prev
        return False


def set_mesh(mesh) -> _SetMesh:
    """Sets the process-wide current mesh (`None` clears it); usable as a context manager that restores the previous
    mesh on exit."""
    if mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
        raise ValueError(f"set_mesh: expected a Mesh, AbstractMesh or None, got {type(mesh).__name__}")
    prev = _GLOBAL_MESH[0]
    _GLOBAL_MESH[0] = mesh
    return _SetMesh(prev)


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types=None, *, devices=None) -> Mesh:
    """A `Mesh` of shape `axis_shapes` over the first `prod(axis_shapes)` devices (default `fluxion.devices()`).

    `axis_types` defaults to `Explicit` for every axis, as in JAX.

    Raises:
      ValueError: `axis_shapes` is not a sequence of ints, or asks for more devices than there are.

    Examples:
      >>> import fluxion
      >>> mesh = fluxion.make_mesh((1,), ("data",))
      >>> mesh.axis_names, mesh.shape["data"]
      (('data',), 1)
    """
    devs = devices_mod.devices() if devices is None else list(devices)
    shape = _canonical_axis_sizes(axis_shapes, "make_mesh", "axis_shapes")
    n = math.prod(shape)
    if n > len(devs):
        raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape {shape}")
    names = _normalize_axis_names(axis_names, "make_mesh")
    types = _normalize_axis_types(names, axis_types, AxisType.Explicit, "make_mesh")
    return Mesh(create_device_mesh(shape, devs[:n]), names, types)


# ----------------------------------------------------------------------------------------------------------------
# Shardings
# ----------------------------------------------------------------------------------------------------------------

class Sharding:
    """Base class: which block of a global array each device holds."""

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    def devices_indices_map(self, global_shape: tuple) -> dict:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def memory_kind(self) -> str:
        return "device"

    @property
    def is_fully_addressable(self) -> bool:
        here = devices_mod.process_index()
        return all(d.process_index == here for d in self.device_set)

    @property
    def addressable_devices(self) -> set:
        here = devices_mod.process_index()
        return {d for d in self.device_set if d.process_index == here}

    def addressable_devices_indices_map(self, global_shape: tuple) -> dict:
        here = devices_mod.process_index()
        return {d: idx for d, idx in self.devices_indices_map(global_shape).items() if d.process_index == here}

    def _device_order(self) -> list:
        return sorted(self.device_set, key=lambda d: d.id)

    def shard_shape(self, global_shape: tuple) -> tuple:
        raise NotImplementedError

    def is_equivalent_to(self, other, ndim: int) -> bool:
        """Whether both place the same blocks on the same devices for arrays of rank `ndim` (checked on a shape
        whose dimensions every split divides)."""
        if not isinstance(other, Sharding) or self.device_set != other.device_set:
            return False
        shape = (math.lcm(self.num_devices, other.num_devices),) * ndim
        try:
            return self.devices_indices_map(shape) == other.devices_indices_map(shape)
        except ValueError:
            return False


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device, *, memory_kind=None):
        if not isinstance(device, devices_mod.Device):
            raise TypeError(f"SingleDeviceSharding: expected a fluxion device, got {device!r}")
        self._device = device

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"

    def __eq__(self, other) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(("SingleDeviceSharding", self._device))

    @property
    def device_set(self) -> set:
        return {self._device}

    def devices_indices_map(self, global_shape: tuple) -> dict:
        return {self._device: (slice(None),) * len(global_shape)}

    def shard_shape(self, global_shape: tuple) -> tuple:
        return tuple(global_shape)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def _device_order(self) -> list:
        return [self._device]

    def with_memory_kind(self, kind) -> "SingleDeviceSharding":
        return self


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    """`SingleDeviceSharding(device)`: the whole array on `device`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def _check_spec(mesh, spec: PartitionSpec) -> None:
    seen = set()
    for p in spec.partitions:
        if p is None or p is _UNCONSTRAINED:
            continue
        for name in (p if isinstance(p, tuple) else (p,)):
            if name not in mesh.axis_names:
                raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: {mesh.axis_names}.")
            if name in seen:
                raise DuplicateSpecError(f"A single NamedSharding spec specification can map every mesh axis to at "
                                         f"most one positional dimension, but {spec} has duplicate entries for "
                                         f"`{name}`", mesh, spec)
            seen.add(name)
    for name in spec.unreduced | spec.reduced:
        if name not in mesh.axis_names:
            raise ValueError(f"Unreduced/reduced axis {name} of {spec} is not found in mesh: {mesh.axis_names}.")


# Set once the process makes its first NamedSharding: from then on eager `jit` calls give their outputs shardings
# (placement.propagate_shardings); programs that never shard skip that work.
MESH_IN_USE = [False]

# Set once the process makes its first NamedSharding over a mesh with `Explicit` axes: from then on abstract values
# carry shardings (`type_sharding`) and operations type them (lax/sharding_rules.py). The functions in
# `ON_FIRST_EXPLICIT` (registered by higher layers) run at that moment.
EXPLICIT_IN_USE = [False]
ON_FIRST_EXPLICIT: list = []
# {AbstractMesh: the first concrete Mesh seen with it}: where an eager result typed over an abstract mesh is placed
# when none of its operands is (e.g. a cotangent built from constants, resharded to its primal's type).
CONCRETE_MESHES: dict = {}


def _explicit_in_use() -> None:
    if not EXPLICIT_IN_USE[0]:
        EXPLICIT_IN_USE[0] = True
        for fn in ON_FIRST_EXPLICIT:
            fn()


def _explicit_entry(entry, explicit: tuple):
    """A spec entry restricted to the mesh's Explicit axes (the part of a sharding that belongs to the type)."""
    if entry is None or entry is _UNCONSTRAINED:
        return None
    names = tuple(a for a in (entry if isinstance(entry, tuple) else (entry,)) if a in explicit)
    return None if not names else names[0] if len(names) == 1 else names


def type_sharding(sharding, ndim: int):
    """The sharding an abstract value of rank `ndim` carries for an array placed on `sharding`: a NamedSharding over
    the mesh's `AbstractMesh` whose spec has `ndim` entries naming only Explicit axes; None when no Explicit axis
    splits a dimension (then the type is the unsharded one)."""
    if not isinstance(sharding, NamedSharding):
        return None
    mesh = sharding.mesh
    explicit = mesh.explicit_axes
    if not explicit:
        return None
    parts = sharding.spec.partitions
    entries = tuple(_explicit_entry(parts[d] if d < len(parts) else None, explicit) for d in range(ndim))
    if all(e is None for e in entries):
        return None
    return NamedSharding(mesh.abstract_mesh, PartitionSpec(*entries))


class NamedSharding(Sharding):
    """A sharding given by a mesh and a partition spec.

    Dimension `d` of a global array is cut into `prod(mesh.shape[a] for a in spec[d])` equal blocks; the device at
    mesh position `pos` holds block `sum(pos[a_k] * stride_k)` (first axis of the entry outermost). Mesh axes the
    spec does not name replicate the blocks.

    Raises:
      ValueError: the spec names an axis the mesh does not have; TypeError: `spec` is not a PartitionSpec.
      DuplicateSpecError: a mesh axis is used for two dimensions.
    """

    def __init__(self, mesh, spec, *, memory_kind=None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: mesh must be a Mesh or AbstractMesh, got {type(mesh).__name__}")
        if spec is None:
            spec = PartitionSpec()
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r} of type "
                            f"{type(spec).__name__}")
        _check_spec(mesh, spec)
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = memory_kind
        MESH_IN_USE[0] = True
        if mesh.explicit_axes:
            if not EXPLICIT_IN_USE[0]:
                _explicit_in_use()
            if isinstance(mesh, Mesh) and len(CONCRETE_MESHES) < 64:
                CONCRETE_MESHES.setdefault(mesh.abstract_mesh, mesh)

    def __repr__(self) -> str:
        if isinstance(self.mesh, Mesh):
            return f"NamedSharding(mesh={self.mesh._short_repr()}, spec={self.spec}, memory_kind=device)"
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec})"  # (JAX: no memory kind without devices)

    def __eq__(self, other) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and self.spec == other.spec

    def __hash__(self) -> int:
        return hash(("NamedSharding", self.mesh, self.spec))

    def update(self, *, mesh=None, spec=None, memory_kind=None) -> "NamedSharding":
        """A copy with `mesh` and/or `spec` replaced (a spec may be given as a tuple of entries)."""
        if spec is not None and not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        return NamedSharding(self.mesh if mesh is None else mesh, self.spec if spec is None else spec)

    def with_spec(self, spec) -> "NamedSharding":
        """`update(spec=spec)` (the name older JAX releases used)."""
        return self.update(spec=spec)

    def with_memory_kind(self, kind) -> "NamedSharding":
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def _concrete_mesh(self) -> Mesh:
        if not isinstance(self.mesh, Mesh):
            raise ValueError(f"{self!r} has an AbstractMesh, which has no devices")
        return self.mesh

    @property
    def device_set(self) -> set:
        return set(self._concrete_mesh().devices.flat)

    def _device_order(self) -> list:
        return list(self._concrete_mesh().devices.flat)

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_replicated(self) -> bool:
        sizes = self.mesh.shape
        return all(sizes[a] == 1 for axes in self.spec.axes_per_dim(len(self.spec)) for a in axes)

    def _num_parts(self, ndim: int) -> list[int]:
        sizes = self.mesh.shape
        return [math.prod(sizes[a] for a in axes) for axes in self.spec.axes_per_dim(ndim)]

    def check_shape(self, global_shape: tuple) -> None:
        """Raises ValueError when the spec has more entries than the shape has dimensions, or a split dimension is
        not divisible by its number of blocks."""
        global_shape = tuple(global_shape)
        if len(global_shape) < len(self.spec):
            extra = " For scalars the PartitionSpec should be P()" if not global_shape else ""
            raise ValueError(f"PartitionSpec {self.spec} is only valid for values of rank at least {len(self.spec)}, "
                             f"but was applied to a value of rank {len(global_shape)}.{extra}")
        for d, (size, parts) in enumerate(zip(global_shape, self._num_parts(len(global_shape)))):
            if size % parts:
                raise ValueError(f"Sharding spec {self.spec.axes_per_dim(len(global_shape))[d]} implies that array "
                                 f"axis {d} is partitioned {parts} times, but does not evenly divide the dimension "
                                 f"size {size}. Got shape: {global_shape} and sharding {self!r}")

    def shard_shape(self, global_shape: tuple) -> tuple:
        """The shape of each device's block of an array of `global_shape`.

        Raises:
          ValueError: the spec is longer than the shape's rank. IndivisibleError (a ValueError): a split dimension
            is not divisible by its number of blocks.
        """
        global_shape = tuple(global_shape)
        parts = self._num_parts(len(global_shape)) if len(global_shape) >= len(self.spec) else None
        if parts is None:
            self.check_shape(global_shape)
        for d, (size, p) in enumerate(zip(global_shape, parts)):
            if size % p:
                raise IndivisibleError(f"Sharding {self!r} implies that array axis {d} is partitioned {p} times, but "
                                       f"the dimension size is {size} (full shape: {global_shape}, per-dimension "
                                       f"tiling factors: {parts} should evenly divide the shape)")
        return tuple(size // p for size, p in zip(global_shape, parts))

    def _block_index(self, position: tuple, axes: tuple) -> int:
        sizes = self.mesh.shape
        where = dict(zip(self.mesh.axis_names, position))
        idx = 0
        for a in axes:
            idx = idx * sizes[a] + where[a]
        return idx

    def devices_indices_map(self, global_shape: tuple) -> dict:
        """{device: tuple of slices} giving the block each device holds (unsplit dimensions are `slice(None)`)."""
        block = self.shard_shape(global_shape)
        mesh = self._concrete_mesh()
        per_dim = self.spec.axes_per_dim(len(global_shape))
        out = {}
        for pos in np.ndindex(*mesh.axis_sizes):
            index = []
            for axes, b in zip(per_dim, block):
                if not axes:
                    index.append(slice(None))
                else:
                    k = self._block_index(pos, axes)
                    index.append(slice(k * b, (k + 1) * b))
            out[mesh.devices[pos]] = tuple(index)
        return out


def replica_ids(sharding: Sharding, global_shape: tuple) -> dict:
    """{device: replica id}: devices holding the same block are numbered 0, 1, ... in the sharding's device order."""
    indices = sharding.devices_indices_map(global_shape)
    counts: dict = {}
    out = {}
    for d in sharding._device_order():
        key = tuple((s.start, s.stop) for s in indices[d])
        out[d] = counts.get(key, 0)
        counts[key] = out[d] + 1
    return out


class Shard:
    """One device's block of an Array: `device`, `index` (tuple of slices into the global array), `replica_id`, and
    `data` (the block as an Array; a view of the global buffer)."""

    __slots__ = ("device", "index", "replica_id", "_global")

    def __init__(self, device, index, replica_id, global_value):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self._global = global_value

    @property
    def data(self):
        """The block (None for a device of another process, as in JAX's `global_shards`)."""
        if self._global is None:
            return None
        from .core import Array
        value = self._global[self.index] if self.index else self._global
        return Array(np.asarray(value))

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data})"


def default_sharding() -> SingleDeviceSharding:
    """The sharding of an array that was never placed: device 0 of this process."""
    return SingleDeviceSharding(devices_mod.local_devices()[0])


def shards_of(value: np.ndarray, sharding: Sharding, *, everywhere: bool = False) -> list[Shard]:
    """The addressable shards of a global buffer under `sharding`, in the sharding's device order; with
    `everywhere`, the shards of every process's devices (those of other processes without data)."""
    shape = value.shape
    indices = sharding.devices_indices_map(shape)
    replicas = replica_ids(sharding, shape)
    here = devices_mod.process_index()
    return [Shard(d, indices[d], replicas[d], value if d.process_index == here else None)
            for d in sharding._device_order() if everywhere or d.process_index == here]


# ----------------------------------------------------------------------------------------------------------------
# Text layout of a sharding (`jax.debug.visualize_array_sharding`)
# ----------------------------------------------------------------------------------------------------------------

def _chunk(size: int, index: slice) -> tuple[int, int]:
    """(block number, block length) of a dimension of `size` cut at `index`."""
    start, stop, _ = index.indices(size)
    return (start // (stop - start) if stop > start else 0), stop - start


def sharding_layout_text(shape: tuple, sharding: Sharding, *, scale: float = 1.0, min_width: int = 9,
                         max_width: int = 80) -> str:
    """The layout `visualize_array_sharding` prints for a 1-D or 2-D array: a table of box-drawing characters with
    one cell per block, labelled with the devices holding it (`CPU 0,4` when replicated on devices 0 and 4).

    Cell sizes follow JAX's rule: the picture is `10 * scale` lines high and `2.5` times as wide (in characters)
    as the array's aspect ratio makes it, each block gets its share, and a cell is at least `min_width` and at most
    `max_width` characters wide; rows of the 1-D picture are one line high. JAX prints the same table with the
    `rich` library (without colour when the output is not a terminal). Difference: when the cells of a row add up
    to more than `max_width` characters, rich narrows them and fluxion does not.

    Raises:
      ValueError: the array is not 1-D or 2-D (as in JAX).
    """
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    cells: dict = {}
    for device, index in sharding.devices_indices_map(shape).items():
        if len(shape) == 2:
            (row, rows), (col, cols) = _chunk(shape[0], index[0]), _chunk(shape[1], index[1])
            height, width = int(rows / shape[0] * base_height), cols / shape[1]
        else:
            row, (col, cols) = 0, _chunk(shape[0], index[0])
            height, width = 1, cols / shape[0]
        width = min(max(int(width * base_width * 2.5), min_width), max_width)
        cells.setdefault((row, col), [set(), width, height])[0].add(device.id)
    nrows = max(r for r, _ in cells) + 1
    ncols = max(c for _, c in cells) + 1
    rendered: dict = {}
    for key, (ids, width, height) in cells.items():
        label = f"{next(iter(sharding.device_set)).platform.upper()} " + ",".join(map(str, sorted(ids)))
        left, extra = divmod(width - len(label) - 2, 2)
        top, extra_v = divmod(height - 2, 2)
        line = " " * max(left, 0) + label + " " * max(left + extra, 0)
        blank = " " * len(line)
        rendered[key] = [blank] * max(top, 0) + [line] + [blank] * max(top + extra_v, 0)
    widths = [max(len(rendered[r, c][0]) for r in range(nrows)) for c in range(ncols)]

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("\u2500" * w for w in widths) + right

    lines = [rule("\u250c", "\u252c", "\u2510")]
    for r in range(nrows):
        height = max(len(rendered[r, c]) for c in range(ncols))
        for k in range(height):
            parts = [(rendered[r, c][k] if k < len(rendered[r, c]) else "").center(widths[c]) for c in range(ncols)]
            lines.append("\u2502" + "\u2502".join(parts) + "\u2502")
        lines.append(rule("\u251c", "\u253c", "\u2524") if r < nrows - 1 else rule("\u2514", "\u2534", "\u2518"))
    return "\n".join(lines)


def as_sharding(value: Any, what: str) -> Sharding:
    """`value` as a Sharding: a Sharding itself or a Device (-> SingleDeviceSharding); a bare PartitionSpec is
    resolved against the current mesh."""
    if isinstance(value, Sharding):
        return value
    if isinstance(value, devices_mod.Device):
        return SingleDeviceSharding(value)
    if isinstance(value, PartitionSpec):
        mesh = get_mesh()
        if mesh is None:
            raise ValueError(f"{what}: a PartitionSpec {value} was given without a mesh; use NamedSharding(mesh, "
                             "spec) or set a mesh with fluxion.sharding.use_mesh / fluxion.set_mesh")
        return NamedSharding(mesh, value)
    raise TypeError(f"{what}: expected a Sharding, a Device or a PartitionSpec, got {type(value).__name__}")
