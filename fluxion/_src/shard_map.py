"""`shard_map`: run a function on each device's block of its arguments, with collectives over mesh axis names.

How it is built (a transformation, not the threaded pmap runtime): each argument is reshaped so that every mesh
axis its in_spec names becomes a separate leading dimension (a dimension split over `('x', 'y')` of size D becomes
`(n_x, n_y, D / (n_x n_y))`), then `f` runs under one `vmap` per manual mesh axis, nested in mesh order (the first
mesh axis outermost), each with `axis_name=` that mesh axis. Inside, `f` therefore sees exactly one block, and the
collectives (`psum`, `all_gather`, `ppermute`, `axis_index`, ... over one or several mesh axes) use their batching
rules, which give the values the per-device programs would. Outputs are put back together by the inverse reshape
according to `out_specs`. Because it is vmap underneath, `shard_map` composes with `jit`, `grad` and `vmap` like any
other traced code, and its values equal the per-device semantics of `jax.shard_map`.

`check_vma=True`: an output whose out_spec does not name a manual mesh axis must not vary along that axis (it must
be replicated, e.g. a `psum` result); this is checked through vmap's batching (a value that depends on a mapped
input or `axis_index` varies). With `check_vma=False` such an output is the value of the block at index 0 of that
axis (JAX leaves it to the program to make it replicated). The check is more permissive than JAX's varying-manual-
axes types in one respect: fluxion treats every collective result that is equal on all devices (`all_gather`,
`psum`, ...) as replicated, while JAX types `all_gather`'s result as still varying (it offers
`all_gather_invariant`), so JAX may ask for `check_vma=False` where fluxion does not.

Differences from JAX: `in_specs` may be omitted only when every argument is an Array placed with a NamedSharding on
the same mesh; mesh axes outside `axis_names` (auto axes) are simply not mapped (the blocks are whole along them);
results carry `NamedSharding(mesh, out_spec)` only when `shard_map` runs eagerly (a `jit` of it returns arrays
without a recorded sharding unless `out_shardings` is given).
"""

from __future__ import annotations

import functools
import math
from typing import Callable

from . import core
from .api import vmap
from .api_util import as_value
from .core import Array, Tracer
from .lax import structural as st
from .lax.sharding_rules import reshard_traced
from .sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec, _check_spec, get_mesh
from .tree_util import tree_broadcast_prefix, tree_flatten, tree_map, tree_unflatten

_INFER = object()
# vmap's messages for an output that varies where out_axes is None, and for out_axes that do not fit the outputs.
_REPLICATION_ERROR = "out_axes is None"
_PREFIX_ERROR = "pytree prefix mismatch"


def _is_spec(x) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _fun_name(f) -> str:
    return getattr(f, "__name__", str(f))


def _axes_of(spec: PartitionSpec, ndim: int) -> list[tuple]:
    return spec.axes_per_dim(ndim)


def _check_leaf_spec(f, mesh, manual: tuple, spec: PartitionSpec, shape: tuple, what: str, k: int) -> None:
    for axes in spec.axes_per_dim(len(spec)):
        for a in axes:
            if a not in manual:
                raise ValueError(f"shard_map {what}_specs argument must refer to an axis marked as manual "
                                 f"({frozenset(manual)}), but {what}_specs[{k}] = {spec} refers to {a!r} (the mesh "
                                 f"has axes {mesh.axis_names}). Check the {what}_specs values passed to shard_map.")
    _check_spec(mesh, spec)
    if len(spec) > len(shape):
        raise ValueError(f"shard_map applied to the function '{_fun_name(f)}' was given an {what}_specs entry which "
                         f"is too long to be compatible with the corresponding {what}put value from the function: "
                         f"{what}_specs[{k}] = {spec} has length {len(spec)}, but the value has rank {len(shape)} "
                         f"(shape {shape}). Entries in {what}_specs must be no longer than the value's rank.")


def _check_divisible(f, mesh, spec: PartitionSpec, shape: tuple, k: int) -> None:
    sizes = mesh.shape
    for d, axes in enumerate(_axes_of(spec, len(shape))):
        n = math.prod(sizes[a] for a in axes)
        if shape[d] % n:
            axis = f"axes {axes}" if len(axes) > 1 else f"axis '{axes[0]}'"
            raise ValueError(
                f"shard_map applied to the function '{_fun_name(f)}' was given argument arrays with axis sizes that "
                f"are not evenly divisible by the corresponding mesh axis sizes: the mesh given has shape "
                f"{tuple(sizes.values())} with corresponding axis names {mesh.axis_names}; args[{k}] of shape "
                f"{shape} corresponds to in_specs value {spec}, which maps array axis {d} (of size {shape[d]}) to "
                f"mesh {axis} (of {'total ' if len(axes) > 1 else ''}size {n}), but {n} does not evenly divide "
                f"{shape[d]}")


def _to_blocks(x, spec: PartitionSpec, sizes: dict, order: tuple):
    """Global value -> (n_a for each split axis a, in mesh order) + block shape."""
    aval = core.get_aval(x)
    if aval.sharding is not None:
        # Explicit sharding mode: inside shard_map the mesh axes are Manual, so blocks carry no sharding type
        # (and the block reshapes below must not be typed as reshapes of a split array).
        x = reshard_traced(x, None) if isinstance(x, core.Tracer) else core.Array(x._value, x.weak_type)
    shape = aval.shape
    new_shape, axis_pos, block_pos = [], {}, []
    for d, axes in enumerate(_axes_of(spec, len(shape))):
        n = math.prod(sizes[a] for a in axes)
        for a in axes:
            axis_pos[a] = len(new_shape)
            new_shape.append(sizes[a])
        block_pos.append(len(new_shape))
        new_shape.append(shape[d] // n)
    if not axis_pos:
        return x
    perm = [axis_pos[a] for a in order if a in axis_pos] + block_pos
    return st.transpose(st.reshape(x, tuple(new_shape)), tuple(perm))


def _from_blocks(y, spec: PartitionSpec, lead: tuple):
    """(n_a for a in lead) + block shape -> global value, splitting each dimension as `spec` says."""
    shape = core.get_aval(y).shape
    block = shape[len(lead):]
    if not lead:
        return y
    perm, global_shape = [], []
    for d, axes in enumerate(_axes_of(spec, len(block))):
        perm.extend(lead.index(a) for a in axes)
        perm.append(len(lead) + d)
        global_shape.append(block[d] * math.prod(shape[lead.index(a)] for a in axes))
    return st.reshape(st.transpose(y, tuple(perm)), tuple(global_shape))


def _resolve_mesh(mesh):
    if mesh is None:
        mesh = get_mesh()
        if mesh is None:
            raise ValueError("shard_map requires a mesh: pass mesh=... or set one with fluxion.sharding.use_mesh / "
                             "fluxion.set_mesh")
    if not isinstance(mesh, (Mesh, AbstractMesh)):
        raise TypeError(f"shard_map requires mesh to be a Mesh or AbstractMesh, got {type(mesh).__name__}")
    return mesh


def _infer_in_specs(f, leaves, mesh) -> list:
    specs = []
    for k, x in enumerate(leaves):
        s = getattr(x, "_sharding", None) if isinstance(x, Array) else None
        if not (isinstance(s, NamedSharding) and s.mesh == mesh):
            raise ValueError(f"shard_map applied to the function '{_fun_name(f)}' was called without in_specs, so "
                             f"every argument must be an Array placed with a NamedSharding on the shard_map mesh; "
                             f"args[{k}] is not")
        specs.append(s.spec)
    return specs


def shard_map(f: Callable | None = None, /, *, out_specs, in_specs=_INFER, mesh=None, axis_names=frozenset(),
              check_vma: bool = True):
    """Maps `f` over the blocks of its arguments on a device mesh (see the module docstring for how).

    Args:
      f: the per-block function. Inside it, collectives name mesh axes (`lax.psum(x, 'x')`,
        `lax.all_gather(x, ('x', 'y'))`, `lax.axis_index('y')`, ...).
      out_specs: PartitionSpec (or a tree prefix of the outputs' tree of them) saying how the outputs' blocks form
        global arrays. A manual mesh axis not named by an output's spec means the output is replicated along it.
      in_specs: PartitionSpec tree prefix of the positional arguments' tree (None leaves mean `P()`); omitted: taken
        from the arguments' NamedShardings.
      mesh: a Mesh (default: the current mesh from `use_mesh`/`set_mesh`/`with mesh:`).
      axis_names: the mesh axes to map over manually (default: all).
      check_vma: check that outputs replicated by out_specs really are (ValueError otherwise).

    Returns:
      A function of global arrays returning global arrays; eager results carry `NamedSharding(mesh, out_spec)`.

    Raises:
      ValueError: a spec names an axis not in the mesh or not manual, has more entries than the value's rank, a
        split dimension is not divisible by its mesh axes' total size, or (check_vma) an output declared replicated
        varies along a mesh axis. DuplicateSpecError: a spec uses a mesh axis twice. NameError: a collective names
        an axis that is not a manual mesh axis.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> from fluxion.sharding import PartitionSpec as P
      >>> mesh = fluxion.make_mesh((1,), ("x",))
      >>> f = fluxion.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
      >>> f(jnp.arange(4.0))
      Array([0., 2., 4., 6.], dtype=float32)
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")

    @functools.wraps(f)
    def wrapped(*args):
        m = _resolve_mesh(mesh)
        manual = tuple(n for n in m.axis_names if not axis_names or n in set(axis_names))
        for n in axis_names:
            if n not in m.axis_names:
                raise ValueError(f"shard_map: axis_names contains {n!r}, which is not an axis of the mesh "
                                 f"{m.axis_names}")
        sizes = dict(m.shape)
        leaves, in_tree = tree_flatten(args)
        leaves = [as_value(x) for x in leaves]
        if in_specs is _INFER:
            flat_in = _infer_in_specs(f, leaves, m)
        else:
            try:
                flat_in = tree_broadcast_prefix(in_specs if isinstance(in_specs, (PartitionSpec, type(None)))
                                                else tuple(in_specs) if isinstance(in_specs, list) else in_specs,
                                                tuple(args), is_leaf=_is_spec)
            except (ValueError, TypeError) as e:
                raise ValueError(f"shard_map applied to the function '{_fun_name(f)}': in_specs is not a tree "
                                 f"prefix of the arguments: {e}") from None
        flat_in = [PartitionSpec() if s is None else s for s in flat_in]
        for k, (x, s) in enumerate(zip(leaves, flat_in)):
            shape = core.get_aval(x).shape
            _check_leaf_spec(f, m, manual, s, shape, "in", k)
            _check_divisible(f, m, s, shape, k)
        present = [{a for axes in _axes_of(s, core.get_aval(x).ndim) for a in axes} for x, s in zip(leaves, flat_in)]
        blocks = [_to_blocks(x, s, sizes, manual) for x, s in zip(leaves, flat_in)]

        def body(*flat):
            return f(*tree_unflatten(in_tree, list(flat)))

        def out_axes_for(a):
            def axis(s):
                named = s is not None and any(a in p for p in s.axes_per_dim(len(s)))
                return 0 if (named or not check_vma) else None
            return tree_map(axis, out_specs, is_leaf=_is_spec)

        fn = body
        for a in reversed(manual):
            in_axes = tuple(0 if a in p else None for p in present)
            fn = vmap(fn, in_axes=in_axes, out_axes=out_axes_for(a), axis_name=a, axis_size=sizes[a])
        try:
            outs = fn(*blocks)
        except ValueError as e:
            if _PREFIX_ERROR in str(e):
                raise ValueError(f"shard_map applied to the function '{_fun_name(f)}': out_specs is not a tree "
                                 f"prefix of the outputs ({e})") from None
            if _REPLICATION_ERROR not in str(e):
                raise
            raise ValueError(f"shard_map applied to the function '{_fun_name(f)}' was given out_specs which require "
                             "replicated outputs which are not replicated: an output's out_spec does not name a mesh "
                             "axis its value varies along (psum/pmean/all_gather it over that axis, name the axis in "
                             "out_specs, or pass check_vma=False)") from None
        out_leaves, out_tree = tree_flatten(outs)
        try:
            flat_out = tree_broadcast_prefix(out_specs, outs, is_leaf=_is_spec)
        except (ValueError, TypeError) as e:
            raise ValueError(f"shard_map applied to the function '{_fun_name(f)}': out_specs is not a tree prefix "
                             f"of the outputs: {e}") from None
        results = []
        for k, (y, s) in enumerate(zip(out_leaves, flat_out)):
            s = PartitionSpec() if s is None else s
            y = as_value(y)
            named = {a for axes in s.axes_per_dim(len(s)) for a in axes}
            if not check_vma:
                # Every manual axis is a leading dimension; the ones the spec does not name are taken at block 0.
                for i in reversed(range(len(manual))):
                    if manual[i] not in named:
                        y = y[(slice(None),) * i + (0,)]
            lead = tuple(a for a in manual if a in named)
            block_ndim = core.get_aval(y).ndim - len(lead)
            _check_leaf_spec(f, m, manual, s, (0,) * block_ndim, "out", k)
            g = _from_blocks(y, s, lead)
            if not isinstance(g, Tracer) and isinstance(m, Mesh):
                g = Array(g._value, g.weak_type, NamedSharding(m, s))
            results.append(g)
        return tree_unflatten(out_tree, results)

    return wrapped


def shard_map_legacy(f: Callable, mesh, in_specs, out_specs, check_rep: bool = True, auto=frozenset()):
    """`jax.experimental.shard_map.shard_map`: the older signature (mesh positional, `check_rep` for `check_vma`,
    `auto` = the mesh axes NOT mapped manually)."""
    m = _resolve_mesh(mesh)
    names = frozenset(n for n in m.axis_names if n not in set(auto)) if auto else frozenset()
    return shard_map(f, mesh=m, in_specs=in_specs, out_specs=out_specs, axis_names=names, check_vma=check_rep)


def _axis_to_spec(axis_name, axis) -> PartitionSpec:
    return PartitionSpec() if axis is None else PartitionSpec(*([None] * axis), axis_name)


def smap(f: Callable | None = None, /, *, in_axes=_INFER, out_axes, axis_name):
    """`shard_map` over the one mesh axis `axis_name` of the current mesh, with vmap-style axes: `in_axes` (an int,
    None, or a tuple with one entry per positional argument) says which dimension of each argument is split over
    `axis_name`, `out_axes` where the split dimension of each output is (None: the output is replicated). Omitted
    `in_axes` means: taken from the arguments' NamedShardings. The other mesh axes stay automatic.

    Raises:
      TypeError: `axis_name` is a list/tuple, or `in_axes`/`out_axes` have leaves other than ints and None.
      ValueError: there is no current mesh (plus everything `shard_map` raises).
    """
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not _INFER:
        if in_axes is not None and not isinstance(in_axes, (int, tuple)):
            raise TypeError("smap in_axes must be an int, None, or a tuple of entries corresponding to the "
                            f"positional arguments passed to the function, but got {in_axes}.")
        if not all(isinstance(a, int) for a in tree_flatten(in_axes)[0]):
            raise TypeError(f"smap in_axes must be an int, None, or (nested) container with those types as leaves, "
                            f"but got {in_axes}.")
    if not all(isinstance(a, int) for a in tree_flatten(out_axes)[0]):
        raise TypeError(f"smap out_axes must be an int, None, or (nested) container with those types as leaves, but "
                        f"got {out_axes}.")
    to_spec = functools.partial(_axis_to_spec, axis_name)
    in_specs = _INFER if in_axes is _INFER else tree_map(to_spec, in_axes, is_leaf=lambda x: x is None)
    out_specs = tree_map(to_spec, out_axes, is_leaf=lambda x: x is None)
    return shard_map(f, mesh=None, in_specs=in_specs, out_specs=out_specs, axis_names=frozenset({axis_name}))
