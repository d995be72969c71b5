"""`pmap`: one program run as one replica per CPU device, concurrently on threads, meeting at collectives.

How a top-level call runs:

1. The leading (`in_axes`) axis of every mapped argument is the replica axis; its size `n` picks the devices (the
   first `n` local devices, or exactly `devices=`).
2. The function is traced once per signature into a jaxpr of one replica (the mapped axis removed), with
   `axis_name` bound to the global replica count so collectives (`fluxion.lax.psum`, ...) know their axis size.
3. The jaxpr runs on `n` threads, replica `i` on device `i`'s thread, each on a view of its slice of the inputs (no
   copies). A collective deposits its operand in a shared slot and waits at a barrier for the other replicas (and,
   after `fluxion.distributed.initialize()`, exchanges with the other processes over MPI); every replica then reduces
   the same list in the same order, so replicated results are bitwise identical.
4. Outputs are stacked along `out_axes` into one `Array` whose leading axis holds the replicas' values. It prints,
   converts with `np.asarray`, indexes like any array, and a following `pmap` slices it into per-device views
   without copying.

Under another transformation (`jit`, `grad`, `vmap`, or with traced arguments), `pmap(f)` has exactly the meaning of
`vmap(f, axis_name=...)`, so that is what runs: the collectives' batching rules give the same values.

Across processes, each process passes its *local* shards (leading axis = number of devices it uses) and gets its
local shards back; the named axis spans all processes (global index = process_index * n + local index).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import core
from . import devices as devices_mod
from .api import vmap
from .api_util import PerFunction, as_output
from .api_util import arg_names as _arg_names, as_value as _as_value, fun_name as _fun_name, fun_src as _fun_src
from . import backends
from .core import Array, ShapedArray, Tracer
from .interpreters import partial_eval as pe
from .interpreters import spmd
from .config import trace_context_key
from .jit_trace import leaf_signature as _leaf_aval_and_raw
from .tree_util import tree_broadcast_prefix, tree_flatten, tree_map, tree_unflatten

class _Compiled(NamedTuple):
    executable: Callable
    consts_raw: list
    out_tree: Any
    out_axes: list
    out_weak: list


_caches = PerFunction(dict)  # function -> {signature: compiled program}


def clear_all_caches() -> None:
    """Forgets every compiled program of every pmapped function (emptied in place: wrappers share these dicts)."""
    for cache in _caches.values():
        cache.clear()


def _normalize_argnums(nums, what: str) -> tuple[int, ...]:
    if nums is None:
        return ()
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    for k in nums:
        if not isinstance(k, int):
            raise TypeError(f"pmap: {what} must be an int or a sequence of ints, got {nums!r}")
    return nums


def _slice_along(v: np.ndarray, axis: int, i: int) -> np.ndarray:
    return v[(slice(None),) * axis + (i,)]


class PmapWrapped:
    """What `pmap(f, ...)` returns: call it like `f`, with the mapped axis added to the mapped arguments."""

    # Attributes carry a `_pmap` prefix: `jit(pmap(f))` copies this object's __dict__ onto the jit wrapper
    # (functools.update_wrapper), which must not overwrite the jit wrapper's own `_fun`, `_cache`, ...
    def __init__(self, fun: Callable, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices,
                 axis_size, donate_argnums):
        self._pmap_fun = fun
        self._pmap_axis_name = axis_name
        self._pmap_in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self._pmap_out_axes = out_axes
        self._pmap_statics = _normalize_argnums(static_broadcasted_argnums, "static_broadcasted_argnums")
        self._pmap_donate = _normalize_argnums(donate_argnums, "donate_argnums")
        self._pmap_devices = None if devices is None else list(devices)
        self._pmap_axis_size = axis_size
        self._pmap_name = _fun_name(fun)
        functools.update_wrapper(self, fun)
        self._pmap_cache = _caches.get(fun)
        out_leaves, out_def = tree_flatten(out_axes, is_leaf=lambda x: x is None)
        self._pmap_options = (axis_name, tuple(out_leaves), out_def, self._pmap_statics)

    def __repr__(self) -> str:
        return f"<pmapped function {self._pmap_name}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _cache_size(self) -> int:
        return len(self._pmap_cache)

    # -- arguments --------------------------------------------------------------------------------------------
    def _split(self, args: tuple):
        nargs = len(args)
        statics = []
        for k in self._pmap_statics:
            if not -nargs <= k < nargs:
                raise ValueError(f"pmap: static_broadcasted_argnums={self._pmap_statics} refers to argument {k}, but "
                                 f"{self._pmap_name} was called with {nargs} positional arguments")
            statics.append(k % nargs)
        static_pos = tuple(sorted(set(statics)))
        for k in static_pos:
            try:
                hash(args[k])
            except TypeError:
                raise ValueError(f"pmap: static_broadcasted_argnums argument {k} of {self._pmap_name} must be "
                                 f"hashable, got a {type(args[k]).__name__}") from None
        dyn_pos = [i for i in range(nargs) if i not in static_pos]
        if isinstance(self._pmap_in_axes, tuple):
            if len(self._pmap_in_axes) != nargs:
                raise ValueError(f"pmap in_axes specification must be a tree prefix of the corresponding value: "
                                 f"in_axes has {len(self._pmap_in_axes)} entries but {self._pmap_name} was called with "
                                 f"{nargs} positional arguments")
            dyn_axes = tuple(self._pmap_in_axes[i] for i in dyn_pos)
        elif self._pmap_in_axes is None or isinstance(self._pmap_in_axes, int):
            dyn_axes = (self._pmap_in_axes,) * len(dyn_pos)
        else:
            raise TypeError(f"pmap in_axes must be an int, None, or a tuple with one entry per positional argument, "
                            f"got {self._pmap_in_axes!r}")
        statics_key = tuple((k, args[k]) for k in static_pos)
        return statics_key, [args[i] for i in dyn_pos], dyn_axes

    def _rebuild(self, nargs: int, statics_key, dyn_args):
        static_map = dict(statics_key)
        it = iter(dyn_args)
        return [static_map[i] if i in static_map else next(it) for i in range(nargs)]

    def _mapped_size(self, leaves, axes) -> int:
        sizes = {}
        for leaf, ax in zip(leaves, axes):
            if ax is not None:
                sizes.setdefault(core.get_aval(leaf).shape[ax], []).append(core.get_aval(leaf).shape)
        if len(sizes) > 1:
            detail = "; ".join(f"size {s} from argument(s) of shape {', '.join(map(str, shp))}"
                               for s, shp in sizes.items())
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {detail}")
        if not sizes:
            if self._pmap_axis_size is None:
                raise ValueError(f"pmap of {self._pmap_name}: no argument is mapped (in_axes are all None); pass "
                                 "axis_size= to say how many replicas to run")
            return int(self._pmap_axis_size)
        size = next(iter(sizes))
        if self._pmap_axis_size is not None and int(self._pmap_axis_size) != size:
            raise ValueError(f"pmap: axis_size={self._pmap_axis_size} does not match the mapped axis size {size}")
        return size

    def _normalize_axes(self, leaves, axes) -> list:
        out = []
        for leaf, ax in zip(leaves, axes):
            if ax is None:
                out.append(None)
                continue
            if not isinstance(ax, int):
                raise TypeError(f"pmap in_axes entries must be ints or None, got {ax!r}")
            shape = core.get_aval(leaf).shape
            if not -len(shape) <= ax < len(shape):
                raise ValueError(f"pmap was requested to map an argument along axis {ax}, but the argument has "
                                 f"shape {shape} (rank {len(shape)}); scalars cannot be mapped (use in_axes=None "
                                 "to broadcast them)")
            out.append(ax % len(shape))
        return out

    def _devices_for(self, n: int) -> list:
        if n < 1:
            raise ValueError(f"pmap of {self._pmap_name}: the mapped axis has size {n}; at least one replica is needed")
        if self._pmap_devices is not None:
            if devices_mod.process_count() > 1:
                raise NotImplementedError("pmap(devices=...) is only supported in a single-process run; after "
                                          "fluxion.distributed.initialize() each process uses its first n local "
                                          "devices")
            if len(self._pmap_devices) != n:
                raise ValueError(f"pmap of {self._pmap_name}: the mapped axis has size {n} but devices= lists "
                                 f"{len(self._pmap_devices)} device(s); they must be equal")
            local = set(devices_mod.local_devices())
            for d in self._pmap_devices:
                if d not in local:
                    raise ValueError(f"pmap: device {d!r} in devices= is not a device of this process "
                                     f"(local devices: {sorted(local, key=lambda x: x.id)})")
            return list(self._pmap_devices)
        local = devices_mod.local_devices()
        if n > len(local):
            raise ValueError(f"pmap of {self._pmap_name}: the mapped axis has size {n}, but only {len(local)} local "
                             f"CPU device(s) are available (local_device_count() == {len(local)}). The size must be at "
                             "most the number of devices: set FLUXION_NUM_CPU_DEVICES (or "
                             "fluxion.config.update('jax_num_cpu_devices', N), or XLA_FLAGS="
                             "--xla_force_host_platform_device_count=N) to have more devices.")
        return local[:n]

    # -- calls --------------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        statics_key, dyn_args, dyn_axes = self._split(args)
        tree_args = (tuple(dyn_args), kwargs)
        leaves, in_tree = tree_flatten(tree_args)
        flat_axes = tree_broadcast_prefix((dyn_axes, 0), tree_args, is_leaf=lambda x: x is None)
        leaves = [_as_value(x) for x in leaves]
        axes = self._normalize_axes(leaves, flat_axes)
        n = self._mapped_size(leaves, axes)
        devs = self._devices_for(n)
        if not core.is_eager() or any(isinstance(x, Tracer) for x in leaves):
            return self._call_as_vmap(len(args), statics_key, in_tree, leaves, axes, n)
        return self._call_replicated(len(args), statics_key, in_tree, leaves, axes, devs)

    def _call_as_vmap(self, nargs, statics_key, in_tree, leaves, axes, n):
        """Inside another transformation: pmap means vmap with the same axis name (same values)."""
        def flat_fun(*xs):
            dyn, kw = tree_unflatten(in_tree, xs)
            return self._pmap_fun(*self._rebuild(nargs, statics_key, dyn), **kw)

        name = self._pmap_axis_name
        return vmap(flat_fun, in_axes=tuple(axes), out_axes=self._pmap_out_axes, axis_name=name, axis_size=n)(*leaves)

    def _call_replicated(self, nargs, statics_key, in_tree, leaves, axes, devs):
        n = len(devs)
        nproc = devices_mod.process_count()
        sig, raws = [], []
        for leaf, ax in zip(leaves, axes):
            (shape, dt, weak), raw = _leaf_aval_and_raw(leaf)
            if ax is not None:
                shape = shape[:ax] + shape[ax + 1:]
            sig.append((shape, dt, weak, ax))
            raws.append(raw)
        key = (self._pmap_options, in_tree, tuple(sig), statics_key, tuple(d.id for d in devs), nproc,
               trace_context_key())
        compiled = self._pmap_cache.get(key)
        if compiled is None:
            compiled = self._compile(nargs, statics_key, in_tree, leaves, sig, n * nproc)
            self._pmap_cache[key] = compiled
        per_replica = [[raw if ax is None else _slice_along(raw, ax, i) for raw, (*_, ax) in zip(raws, sig)]
                       for i in range(n)]
        comm = None
        if nproc > 1:
            from . import distributed
            comm = distributed.communicator()
        core.float_checks.check_execution(f"pmap({self._pmap_name})")
        results = spmd.run_replicas(compiled.executable, compiled.consts_raw, per_replica, devs, self._pmap_axis_name,
                               devices_mod.process_index() * n, n * nproc, comm)
        outs = []
        for k, (ax, weak) in enumerate(zip(compiled.out_axes, compiled.out_weak)):
            if ax is None:
                outs.append(Array(np.asarray(results[0][k]), weak))
            else:
                outs.append(Array(np.stack([np.asarray(r[k]) for r in results], axis=ax), weak))
        return tree_unflatten(compiled.out_tree, outs)

    def _compile(self, nargs, statics_key, in_tree, leaves, sig, global_size) -> _Compiled:
        avals = [ShapedArray(shape, dt, weak) for shape, dt, weak, _ in sig]
        box = []

        def flat_fun(*xs):
            dyn, kw = tree_unflatten(in_tree, xs)
            out = self._pmap_fun(*self._rebuild(nargs, statics_key, dyn), **kw)
            flat_out, out_tree = tree_flatten(out)
            box.append((out_tree, out))
            return [as_output(o, self._pmap_fun, "pmap") for o in flat_out]

        dyn_args, kwargs = tree_unflatten(in_tree, leaves)
        info = pe.DebugInfo("pmap", self._pmap_name, _fun_src(self._pmap_fun),
                            _arg_names(self._pmap_fun, dyn_args, kwargs))
        pushed = self._pmap_axis_name is not None
        if pushed:
            spmd.push_axis_frame(spmd.AxisFrame(self._pmap_axis_name, global_size, len(core.thread_state().stack)))
        try:
            with core.new_base_main():
                closed, out_avals = pe.trace_to_closed_jaxpr(flat_fun, avals, info)
        finally:
            if pushed:
                spmd.pop_axis_frame()
        out_tree, out = box[0]
        if isinstance(self._pmap_out_axes, int) or self._pmap_out_axes is None:
            out_axes = [self._pmap_out_axes] * len(out_avals)
        else:
            out_axes = tree_broadcast_prefix(self._pmap_out_axes, out, is_leaf=lambda x: x is None)
        norm = []
        for ax, a in zip(out_axes, out_avals):
            if ax is not None:
                if not isinstance(ax, int) or not -(a.ndim + 1) <= ax <= a.ndim:
                    raise ValueError(f"pmap out_axes entry {ax!r} is out of range for an output of shape {a.shape}")
                ax %= a.ndim + 1
            norm.append(ax)
        exe = backends.compile(closed, name=self._pmap_name)
        return _Compiled(lambda _consts, args: list(exe(*args)), [], out_tree, norm, [a.weak_type for a in out_avals])


def pmap(fun: Callable | None = None, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence | None = None,
         backend: str | None = None, axis_size: int | None = None, donate_argnums: int | Sequence[int] = (),
         global_arg_shapes=None):
    """Runs `fun` once per device on slices of the mapped axis, concurrently, with collectives over `axis_name`.

    Args:
      fun: a function of pytrees of arrays.
      axis_name: a hashable naming the mapped axis for collectives (`lax.psum(x, axis_name)`, ...).
      in_axes: int, None, or a tuple with one entry per positional argument (each an int, None or a pytree
        prefix of that argument): the mapped axis of each input. None broadcasts the input to every replica.
        Keyword arguments are always mapped along axis 0.
      out_axes: int, None or a pytree prefix of the output: where the replica axis goes in each output. None
        returns replica 0's value (for outputs equal on every replica).
      static_broadcasted_argnums: positional arguments passed unchanged to every replica as Python values (they
        must be hashable; each new value retraces).
      devices: the devices to run on (their number must equal the mapped size). Default: the first `n` local
        devices, where `n` is the mapped size.
      backend: accepted for JAX compatibility; only "cpu" exists.
      axis_size: the number of replicas when no input is mapped.
      donate_argnums: accepted for JAX compatibility (NumPy buffers are never reused in place).
      global_arg_shapes: accepted for JAX compatibility; must be None.

    Returns:
      A callable returning outputs with the replica axis at `out_axes` (a plain `fluxion.Array`).

    Raises:
      ValueError: mapped sizes disagree, the mapped size exceeds the number of local devices (both numbers are
        named), or differs from `len(devices)`.
      NameError: a collective names an axis that no enclosing pmap/vmap binds.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> n = fluxion.local_device_count()
      >>> fluxion.pmap(lambda x: fluxion.lax.psum(x, "i"), axis_name="i")(jnp.ones(n)).shape == (n,)
      True
    """
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums, devices=devices,
                                 backend=backend, axis_size=axis_size, donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"pmap: expected a callable, got {fun!r}")
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap: unknown backend {backend!r}; fluxion only has 'cpu'")
    if global_arg_shapes is not None:
        raise NotImplementedError("pmap: global_arg_shapes is not supported")
    return PmapWrapped(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, axis_size,
                       donate_argnums)


# --------------------------------------------------------------------------------------------------------------
# Placing values on devices
# --------------------------------------------------------------------------------------------------------------

def _check_devices(devices: Sequence, fname: str) -> list:
    devs = list(devices) if devices is not None else []
    if not devs:
        raise ValueError(f"{fname}: `devices` must be a non-empty sequence of devices, got {devices!r}")
    for d in devs:
        if not isinstance(d, devices_mod.Device):
            raise TypeError(f"{fname}: expected fluxion devices (from fluxion.devices()), got {d!r}")
    return devs


def _leaf_array(x: Any, fname: str) -> Array:
    v = _as_value(x)
    if isinstance(v, Tracer):
        raise TypeError(f"{fname} needs concrete arrays, got a tracer {v!r} (call it outside jit/grad/vmap)")
    return v


def device_put_replicated(x: Any, devices: Sequence) -> Any:
    """Replicates every leaf of `x` on `devices`: each leaf gains a leading axis of size `len(devices)`.

    The result is what `pmap` takes for a replicated value (e.g. the parameters of data-parallel training).

    Raises:
      ValueError: `devices` is empty.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> x = fluxion.device_put_replicated(jnp.arange(3), fluxion.local_devices())
      >>> x.shape == (fluxion.local_device_count(), 3)
      True
    """
    devs = _check_devices(devices, "device_put_replicated")

    def rep(leaf):
        a = _leaf_array(leaf, "device_put_replicated")
        raw = np.asarray(a)
        return Array(np.stack([raw] * len(devs)), a.weak_type)

    return tree_map(rep, x)


def device_put_sharded(shards: Sequence[Any], devices: Sequence) -> Any:
    """Stacks a list of pytrees (one per device, same structure and shapes) into one pytree of stacked arrays.

    Raises:
      ValueError: the number of shards differs from the number of devices, or the shards' structures, shapes or
        dtypes differ (naming the shard and the shapes).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> devices = fluxion.local_devices()
      >>> x = fluxion.device_put_sharded([jnp.full(2, i) for i in range(len(devices))], devices)
      >>> x.shape == (len(devices), 2)
      True
    """
    devs = _check_devices(devices, "device_put_sharded")
    shards = list(shards)
    if len(shards) != len(devs):
        raise ValueError(f"device_put_sharded: got {len(shards)} shards for {len(devs)} devices; they must be equal")
    flat0, tree0 = tree_flatten(shards[0])
    columns = [[_leaf_array(v, "device_put_sharded")] for v in flat0]
    for s, shard in enumerate(shards[1:], start=1):
        flat, tree = tree_flatten(shard)
        if tree != tree0:
            raise ValueError(f"device_put_sharded: shard {s} has structure {tree}, shard 0 has {tree0}")
        for col, v in zip(columns, flat):
            a = _leaf_array(v, "device_put_sharded")
            if (a.shape, a.dtype) != (col[0].shape, col[0].dtype):
                raise ValueError(f"device_put_sharded: shard {s} has a leaf of shape {a.shape} and dtype "
                                 f"{a.dtype}, shard 0 has {col[0].shape} {col[0].dtype}")
            col.append(a)
    stacked = [Array(np.stack([np.asarray(a) for a in col]), col[0].weak_type) for col in columns]
    return tree_unflatten(tree0, stacked)


def replicate(tree: Any, devices: Sequence | None = None) -> Any:
    """`device_put_replicated(tree, devices or local_devices())` (flax.jax_utils.replicate's meaning)."""
    return device_put_replicated(tree, devices if devices is not None else devices_mod.local_devices())


def unreplicate(tree: Any) -> Any:
    """The first replica of every leaf (`x[0]`): the inverse of `replicate` for replicated values."""
    return tree_map(lambda x: x[0], tree)
