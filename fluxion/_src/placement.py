"""Placing arrays on shardings: `device_put(x, sharding)`, `with_sharding_constraint`, `reshard`, jit's
`in_shardings`/`out_shardings`, the `make_array_from_*` constructors and `visualize_array_sharding`.

A placed Array keeps one global NumPy buffer and records its sharding (`Array.sharding`); `addressable_shards` are
views of that buffer (see `sharding.py`). So placement never changes a value: every function here returns the
values of the unsharded computation. Under tracing (`jit`, `grad`, `vmap`) the constraint is checked against the
traced shape and the value passes through unchanged; the sharding is attached to concrete results only.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from . import devices as devices_mod
from .api_util import as_value
from .core import Array, Tracer
from .lax.sharding_rules import reshard_traced  # also installs the explicit-mode hooks
from .sharding import (EXPLICIT_IN_USE, AxisType, Mesh, NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding,
                       as_sharding, get_abstract_mesh, sharding_layout_text, type_sharding, use_abstract_mesh)
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
    aval = core.get_aval(value)
    _check_fits(sharding, aval.shape, what)
    if isinstance(value, Tracer):
        if EXPLICIT_IN_USE[0]:  # explicit sharding mode: the sharding is part of the traced value's type
            typed = type_sharding(sharding, aval.ndim)
            if typed != aval.sharding:
                return reshard_traced(value, typed)
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
    if EXPLICIT_IN_USE[0]:
        _assert_explicit_constraints(x, shardings)
    return place_tree(x, shardings, "with_sharding_constraint arguments")


def _assert_explicit_constraints(x: Any, shardings: Any) -> None:
    """On a mesh whose axes are all Explicit the sharding is the value's type, so a constraint only checks it
    (JAX's rule: use `reshard` to change it).

    Raises:
      AssertionError: a leaf's type sharding differs from its constraint (JAX raises the same class).
    """
    leaves = tree_flatten(x)[0]
    flat = ([shardings] * len(leaves) if _is_spec_leaf(shardings)
            else tree_broadcast_prefix(shardings, x, is_leaf=_is_spec_leaf))
    for leaf, s in zip(leaves, flat):
        if s is None:
            continue
        target = as_sharding(s, "with_sharding_constraint arguments")
        if not isinstance(target, NamedSharding) or not target.mesh.axis_names or \
                set(target.mesh.explicit_axes) != set(target.mesh.axis_names):
            continue
        aval = core.get_aval(as_value(leaf))
        have = aval.sharding.spec if aval.sharding is not None else PartitionSpec(*(None,) * aval.ndim)
        want = type_sharding(target, aval.ndim)
        if (want.spec if want is not None else PartitionSpec(*(None,) * aval.ndim)) != have:
            raise AssertionError(f"`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
                                 f"`Explicit`. The array sharding: {have} did not match the sharding provided: "
                                 f"{target.spec}. Please use `fluxion.sharding.reshard` to shard your input to the "
                                 "sharding you want.")


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


def _region_mesh(axes, axis_type: AxisType, who: str, shardings: Any = None):
    """(previous abstract mesh, the same mesh with `axes` (default: all) switched to `axis_type`, those axes) for
    `auto_axes`/`explicit_axes`, or None when neither a current mesh nor a NamedSharding in `shardings` gives one.

    Raises:
      ValueError: the shardings' meshes differ from each other or from the current mesh.
      NotImplementedError: an axis is Manual (inside shard_map), which cannot become Auto or Explicit (as in JAX).
    """
    current = get_abstract_mesh()
    given = None
    for s in tree_flatten(shardings, is_leaf=_is_spec_leaf)[0]:
        if isinstance(s, NamedSharding):
            m = s.mesh.abstract_mesh
            if given is not None and given != m:
                raise ValueError(f"Shardings passed to {who} should have the same mesh. Got one mesh {given} and "
                                 f"another {s.mesh}")
            given = m
    if given is None and current.empty:
        return None
    if given is not None and not current.empty and given != current:
        raise ValueError(f"Context mesh {current} must match the mesh passed to shardings {given}. Recommended "
                         "approach is to use `fluxion.set_mesh` context manager.")
    mesh = current if not current.empty else given
    names = mesh.axis_names if axes is None else ((axes,) if isinstance(axes, str) else tuple(axes))
    for a in names:
        if mesh._name_to_type[a] == AxisType.Manual:
            raise NotImplementedError(f"{who}: going from the Manual axis type to {axis_type.name} is not allowed "
                                      f"(axis {a!r})")
    return mesh, mesh.update_axis_types({a: axis_type for a in names}), names


def _keyword(value: Any, kwargs: dict, name: str) -> Any:
    if value is not None:
        return value
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def auto_axes(f: Callable | None = None, /, *, axes=None, out_sharding=None) -> Callable:
    """Runs `f` with mesh axes `axes` (default: all axes of the current mesh) of type `Auto` (the compiler chooses
    how values are split along them), then places the result on `out_sharding` (given here or as a keyword
    argument of the call). Inside `f`, `fluxion.sharding.get_abstract_mesh()` shows the changed axis types.

    In fluxion axis types never change values, so this is `reshard(f(*args), out_sharding)`; with no current mesh
    and no NamedSharding in `out_sharding` it is `f(*args)`, as in JAX.

    Raises:
      TypeError: no `out_sharding` was given. ValueError: meshes disagree (see `_region_mesh`).
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        target = _keyword(out_sharding, kwargs, "out_sharding")
        region = _region_mesh(axes, AxisType.Auto, "auto_axes", target)
        if region is None or set(region[0].auto_axes) == set(region[2]):
            return f(*args, **kwargs)
        with use_abstract_mesh(region[1]):
            out = f(*args, **kwargs)
        return reshard(out, target)

    return wrapped


def explicit_axes(f: Callable | None = None, /, *, axes=None, in_sharding=None) -> Callable:
    """Runs `f` with mesh axes `axes` (default: all axes of the current mesh) of type `Explicit`, after placing the
    positional arguments on `in_sharding` (given here or as a keyword argument of the call; a tree prefix of the
    arguments tuple). Values are unchanged.

    Raises:
      TypeError: no `in_sharding` was given. ValueError: there is no current mesh (set one with `set_mesh`).
    """
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        target = _keyword(in_sharding, kwargs, "in_sharding")
        region = _region_mesh(axes, AxisType.Explicit, "explicit_axes")
        if region is None:
            raise ValueError("Context mesh cannot be empty. Please use `fluxion.set_mesh` API to enter into a mesh "
                             "context when using `explicit_axes` API.")
        with use_abstract_mesh(region[1]):
            args = reshard(args, target)
            return f(*args, **kwargs)

    return wrapped


def propagate_shardings(inputs: Any, outputs: Any) -> Any:
    """The fallback rule for the shardings of an eager `jit` call's outputs, used when the traced program is not
    at hand (`propagate_traced` is the rule otherwise):

    when some inputs are Arrays placed with a NamedSharding, every output that is not placed yet takes the sharding
    of the first such input with the same shape, or else is replicated (`P()`) on the first such input's mesh.
    Outputs already placed (e.g. by `out_shardings` or `with_sharding_constraint`) keep theirs. Without placed
    inputs the outputs stay unplaced (`SingleDeviceSharding` on device 0).
    """
    by_shape: dict = {}
    mesh = None
    for x in tree_flatten(inputs)[0]:
        s = getattr(x, "_sharding", None) if isinstance(x, Array) else None
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            mesh = s.mesh if mesh is None else mesh
            by_shape.setdefault(x.shape, s)
    if mesh is None:
        return outputs
    replicated = NamedSharding(mesh, PartitionSpec())
    leaves, treedef = tree_flatten(outputs)
    placed = [Array(y._value, y.weak_type, by_shape.get(y.shape, replicated))
              if type(y) is Array and y._sharding is None else y for y in leaves]
    return tree_unflatten(treedef, placed)


def propagate_traced(closed, in_values: list, outputs: Any) -> Any:
    """The shardings fluxion gives the outputs of an eager `jit` call on arrays placed on a mesh with Auto axes:
    the program's equations are followed from the inputs' specs by `sharding_rules.infer_auto_entries` (the
    explicit-mode rules, made lenient), so `x @ w` with `w` split on its output dimension comes out split on it,
    as XLA's propagation gives. `in_values` are the program's inputs (constants first); outputs already placed
    keep their sharding; a result with no split dimension is replicated (`P()`) on the inputs' mesh. Without
    placed inputs the outputs stay unplaced.
    """
    from .lax.sharding_rules import infer_auto_entries
    mesh = None
    for x in in_values:
        s = x._sharding if type(x) is Array else None
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh):
            mesh = s.mesh
            break
    if mesh is None:
        return outputs
    entries = []
    for x in in_values:
        s = x._sharding if type(x) is Array else None
        ok = isinstance(s, NamedSharding) and s.mesh == mesh and x.ndim >= len(s.spec)
        entries.append(tuple(None if e is None or e is PartitionSpec.UNCONSTRAINED else e
                             for e in s.spec.axes_per_dim(x.ndim)) if ok else None)
    entries = [None if e is None else tuple(None if not a else a[0] if len(a) == 1 else a for a in e)
               for e in entries]
    leaves, treedef = tree_flatten(outputs)
    key = ("auto_shardings", tuple(entries), mesh.abstract_mesh)  # one walk of the program per layout
    outs = closed.memo.get(key)
    if outs is None:
        outs = closed.memo[key] = infer_auto_entries(closed.jaxpr, entries, mesh.abstract_mesh)
    if len(outs) != len(leaves):
        return propagate_shardings(in_values, outputs)
    # Spelling, as JAX's outputs spell it: an input's own sharding when the layout is the same, else the spec
    # without trailing Nones.
    known = {}
    for x, e in zip(in_values, entries):
        if e is not None:
            known.setdefault((len(e), _trimmed(e)), x._sharding)
    replicated = NamedSharding(mesh, PartitionSpec())

    def sharding_for(e):
        if e is None:
            return replicated
        key = _trimmed(e)
        return known.get((len(e), key)) or NamedSharding(mesh, PartitionSpec(*key))

    placed = [Array(y._value, y.weak_type, sharding_for(e)) if type(y) is Array and y._sharding is None else y
              for y, e in zip(leaves, outs)]
    return tree_unflatten(treedef, placed)


def _trimmed(entries: tuple) -> tuple:
    entries = list(entries)
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


def check_in_shardings(args: tuple, in_shardings: Any) -> None:
    """jit's `in_shardings` check: every positional argument's shape must fit its sharding."""
    place_tree(tuple(args), tuple(in_shardings) if isinstance(in_shardings, list) else in_shardings,
               "pjit arguments")


# ----------------------------------------------------------------------------------------------------------------
# Building global arrays from blocks
# ----------------------------------------------------------------------------------------------------------------

def _index_key(index: tuple) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def _assemble(shape: tuple, dtype, blocks: list, sharding: Sharding, what: str) -> Array:
    """The global array of `shape` from this process's `blocks` ((index, ndarray) pairs), placed on `sharding`.

    When the sharding spans several processes, the processes exchange their blocks over MPI (one collective: every
    process must call the constructor with the same sharding), so each one holds the global buffer.
    """
    if not blocks:
        raise ValueError(f"{what}: the sharding has no device in this process")
    dtype = np.dtype(blocks[0][1].dtype if dtype is None else dtype)
    if len({d.process_index for d in sharding.device_set}) > 1:
        from . import distributed
        comm = distributed.communicator()
        mine = [[[[s.start, s.stop] for s in index], list(block.shape)] for index, block in blocks]
        flat = np.concatenate([np.ravel(block).astype(dtype, copy=False) for _, block in blocks])
        headers = comm.allgather_json(mine, what)
        payloads = comm.allgather_array(flat, what)
        blocks = []
        for header, payload in zip(headers, payloads):
            offset = 0
            for bounds, block_shape in header:
                n = int(np.prod(block_shape, dtype=np.int64))
                blocks.append((tuple(slice(a, b) for a, b in bounds),
                               payload[offset:offset + n].reshape(block_shape)))
                offset += n
    out = np.empty(shape, dtype=dtype)
    for index, block in blocks:
        out[index] = block
    return place(Array(out), sharding, what)


def make_array_from_callback(shape: Sequence[int], sharding: Sharding, data_callback: Callable,
                             dtype=None) -> Array:
    """The array of global `shape` whose block on each addressable device is `data_callback(index)` (index: the
    device's tuple of slices). The callback is called once per distinct block of this process; across processes
    the blocks are exchanged over MPI (every process must make the same call).

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
    _check_fits(sharding, shape, "make_array_from_callback")
    blocks, done = [], set()
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
        blocks.append((index, block))
        done.add(key)
    return _assemble(shape, dtype, blocks, sharding, "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *,
                                         dtype=None) -> Array:
    """The global array of `shape` assembled from one block per addressable device of `sharding` (`arrays` in the
    order of `sharding.addressable_devices_indices_map`, i.e. the mesh's device order). Across processes each
    passes its own devices' blocks and they are exchanged over MPI.

    Raises:
      ValueError: the number of blocks differs from the number of addressable devices, or a block's shape is not
        the shard shape.
    """
    shape = tuple(int(s) for s in shape)
    sharding = as_sharding(sharding, "make_array_from_single_device_arrays")
    _check_fits(sharding, shape, "make_array_from_single_device_arrays")
    index_map = sharding.addressable_devices_indices_map(shape)
    order = [d for d in sharding._device_order() if d in index_map]
    arrays = list(arrays)
    if len(arrays) != len(order):
        raise ValueError(f"Expected {len(order)} per-device arrays (one per addressable device of the sharding) "
                         f"but make_array_from_single_device_arrays got {len(arrays)}")
    blocks = []
    for device, block in zip(order, arrays):
        block = np.asarray(block)
        index = index_map[device]
        expected = np.empty(shape, dtype=np.bool_)[index].shape
        if block.shape != expected:
            raise ValueError(f"Expected shard shape {expected} doesn't match the single device array shape "
                             f"{block.shape} (make_array_from_single_device_arrays, array for {device})")
        blocks.append((index, block))
    return _assemble(shape, dtype, blocks, sharding, "make_array_from_single_device_arrays")


def _process_boxes(sharding: Sharding, shape: tuple) -> dict:
    """{process index: the smallest box (tuple of slices) holding every block of that process's devices}."""
    spans: dict = {}
    for device, index in sharding.devices_indices_map(shape).items():
        ranges = [s.indices(n)[:2] for s, n in zip(index, shape)]
        old = spans.get(device.process_index)
        spans[device.process_index] = ranges if old is None else [
            (min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(old, ranges)]
    return {p: tuple(slice(a, b) for a, b in r) for p, r in spans.items()}


def _inferred_global_shape(sharding: Sharding, local_shape: tuple) -> tuple:
    """The global shape when each process holds an equal share of every split dimension: a dimension split into
    `k` blocks of which this process holds `j` is `local * k / j` long."""
    if not isinstance(sharding, NamedSharding):
        return local_shape
    sharding.check_shape((0,) * len(local_shape))
    parts = tuple(sharding._num_parts(len(local_shape)))
    box = _process_boxes(sharding, parts)[devices_mod.process_index()]  # one element per block
    return tuple(n * k // (b.stop - b.start) for n, k, b in zip(local_shape, parts, box))


def make_array_from_process_local_data(sharding: Any, local_data: Any, global_shape=None) -> Any:
    """The global array of which this process supplies the part its devices hold.

    Dimension by dimension: where `global_shape` equals `local_data`'s size, the local data spans the whole
    dimension; elsewhere it is the process's slice of it (the smallest range covering its devices' blocks, e.g.
    rows 8:16 of 32 for the second of four processes splitting the rows). `global_shape` defaults to the shape
    that gives every process an equal share. In a multi-process run (`fluxion.distributed.initialize()`) the
    processes exchange their parts over MPI, so every process ends up with the global array (and its
    `addressable_shards` are the blocks of its own devices); every process must call this with the same sharding.
    `local_data` may be a pytree of arrays: `sharding` is then a tree prefix of it (a bare PartitionSpec resolves
    against the current mesh) and `global_shape` a prefix whose leaves are shape tuples or None.

    Raises:
      ValueError: `local_data`'s rank differs from `global_shape`'s, a dimension of it matches neither the global
        size nor the process's slice, or the spec does not fit `global_shape`.
    """
    leaves, treedef = tree_flatten(local_data)
    if not leaves or (len(leaves) == 1 and leaves[0] is local_data):
        return _from_process_local_data(sharding, local_data, global_shape)
    shardings = ([sharding] * len(leaves) if _is_spec_leaf(sharding)
                 else tree_broadcast_prefix(sharding, local_data, is_leaf=_is_spec_leaf))
    shapes = ([global_shape] * len(leaves) if global_shape is None or isinstance(global_shape, tuple)
              else tree_broadcast_prefix(global_shape, local_data,
                                         is_leaf=lambda x: x is None or isinstance(x, tuple)))
    return tree_unflatten(treedef, [_from_process_local_data(s, x, g) for s, x, g in zip(shardings, leaves, shapes)])


def _from_process_local_data(sharding: Any, local_data: Any, global_shape) -> Array:
    sharding = as_sharding(sharding, "make_array_from_process_local_data")
    data = np.asarray(local_data)
    if devices_mod.process_count() == 1 and global_shape is not None and tuple(global_shape) != data.shape:
        raise ValueError("When calling `make_array_from_process_local_data` on a single process, global_shape should "
                         f"be None or equal to local_data.shape. Got global_shape={tuple(global_shape)} and "
                         f"local_data.shape={data.shape}.")
    shape = (_inferred_global_shape(sharding, data.shape) if global_shape is None
             else tuple(int(n) for n in global_shape))
    if len(shape) != data.ndim:
        raise ValueError(f"make_array_from_process_local_data: global_shape {shape} and the local data's shape "
                         f"{data.shape} have different ranks")
    _check_fits(sharding, shape, "make_array_from_process_local_data")
    boxes = _process_boxes(sharding, shape)
    here = devices_mod.process_index()
    if here not in boxes:
        raise ValueError("make_array_from_process_local_data: the sharding has no device in this process")
    box = list(boxes[here])
    for d, (n, b) in enumerate(zip(data.shape, box)):
        if n == shape[d]:
            box[d] = slice(0, n)  # this process supplies the whole dimension
        elif n != b.stop - b.start:
            raise ValueError(f"make_array_from_process_local_data: dimension {d} of the local data has size {n}, "
                             f"but this process's devices hold {b.start}:{b.stop} of the global size {shape[d]} "
                             f"(local data shape {data.shape}, global_shape {shape}, sharding {sharding!r})")
    return _assemble(shape, None, [(tuple(box), data)], sharding, "make_array_from_process_local_data")


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = True, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map=None) -> None:
    """Prints the layout of an array of `shape` placed on `sharding`: the table of `sharding.sharding_layout_text`
    (the text JAX prints through `rich` when the output is not a terminal). `use_color` and `color_map` are
    accepted and ignored: the table has no colours.

    Raises:
      ValueError: `shape` is not 1-D or 2-D.
    """
    print(sharding_layout_text(tuple(shape), sharding, scale=scale, min_width=min_width, max_width=max_width))


def visualize_array_sharding(arr: Any, **kwargs) -> None:
    """`visualize_sharding(arr.shape, arr.sharding, **kwargs)` (an array never placed is on device 0).

    Raises:
      ValueError: the array is not 1-D or 2-D, or is a traced value (its sharding is unknown while tracing).
    """
    if isinstance(arr, Tracer):
        raise ValueError("visualize_array_sharding needs a concrete array (it was given a traced value)")
    arr = as_value(arr)
    sharding = arr.sharding if isinstance(arr, Array) else SingleDeviceSharding(devices_mod.local_devices()[0])
    visualize_sharding(arr.shape, sharding, **kwargs)
