"""Lifted transformations on scopes (mirrors ``flax.core.lift``).

A fluxion transformation (``lax.scan``, ``fluxion.vmap``, ``fluxion.jit``)
works on pure functions of arrays, but a Linen computation reads and writes
variables and draws PRNG keys through a :class:`~.scope.Scope`. *Lifting*
bridges the two:

1. **Pack.** The variables at the scope's path are split into *groups* by
   collection filters (each collection goes to the first filter matching
   it), and the PRNG streams likewise. Each group gets its own treatment
   (scanned over an axis, broadcast, carried, vmapped, ...).
2. **Inner scope.** Inside the transformed function a fresh scope is built
   with the same path, flags and stream paths, holding the (traced) group
   values. Its mutability is the intersection of the outer call's and the
   groups'. Writes go to the inner scope only.
3. **Publish.** After the transformation, the mutable collections of the
   inner scope come out as function outputs and are written back into the
   outer scope.

PRNG streams follow Flax exactly, so a scanned or vmapped module gets the
same parameters as in Flax for the same key: a *split* stream has its root
key replaced by ``random.split(root_key, n)[i]`` for the i-th iteration or
batch element, keeping its path; the per-path draw counters continue the
outer ones. A transformation may trace its body several times; every trace
starts from the counters as they were before it, and the outer counters
end as after one trace. ``scan`` runs its body once more outside the loop
(like Flax) to compute the broadcast collections (parameters shared by all
iterations), so a draw in the body that is not a parameter initialization
advances the counters twice, as in Flax.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, random, tree_util

from . import meta
from .scope import AllOf, DenyList, Filter, Scope, _copy_tree, _RngStream, _Root, in_filter


class _Broadcast:
    """The axis marker of values that are not scanned over but shared by every iteration."""

    def __repr__(self) -> str:
        return 'broadcast'


broadcast = _Broadcast()


def _group(names: Sequence[str], filters: Sequence[Filter]) -> list[list[str]]:
    """Assigns each name to the first filter matching it; unmatched names are dropped."""
    groups: list[list[str]] = [[] for _ in filters]
    for name in names:
        for i, filt in enumerate(filters):
            if in_filter(filt, name):
                groups[i].append(name)
                break
    return groups


def _nest(path: tuple, tree: Any) -> Any:
    for name in reversed(path):
        tree = {name: tree}
    return tree


class _Packed:
    """The variables and PRNG streams of one scope, grouped for a transformation.

    Attributes:
        variable_groups: one ``{collection: tree at the scope's path}`` per
            input filter.
        rng_groups: one ``{stream: root key}`` per PRNG filter.
    """

    def __init__(self, scope: Scope, in_filters: Sequence[Filter],
                 out_filters: Sequence[Filter], rng_filters: Sequence[Filter],
                 fork_rngs: bool = False):
        self.scope = scope
        # Flax's jit first draws one key per stream at the jitted scope and
        # folds only the names below that scope into it.
        self.fork_rngs = fork_rngs
        self.out_filters = list(out_filters)
        tree = scope.variables()
        self.variable_groups = [{c: tree[c] for c in names}
                                for names in _group(list(tree), in_filters)]
        forked = {s: scope.make_rng(s) for s in list(scope.rngs)} if fork_rngs else None
        self.rng_groups = [{s: forked[s] if forked else scope.rngs[s].key for s in names}
                           for names in _group(list(scope.rngs), rng_filters)]
        # The inner scope may write only what the outer call and the groups allow.
        self.mutable = AllOf((scope.mutable, tuple(out_filters)))

    def inner_scope(self, variable_groups: Sequence[Mapping], rng_groups: Sequence[Mapping],
                    counters: Any, mutable: Filter = True) -> Scope:
        """A scope at the same path holding the given group values and root keys."""
        scope = self.scope
        variables = {}
        for group in variable_groups:
            for col, tree in group.items():
                variables[col] = _nest(scope.path, _copy_tree(tree))
        rngs = {}
        for group in rng_groups:
            for stream, key in group.items():
                path = () if self.fork_rngs else scope.rngs[stream].path
                rngs[stream] = _RngStream(key, path)
        root = _Root(variables, AllOf((self.mutable, mutable)), scope.flags)
        return Scope(root, rngs, counters, name=scope.name, parent=None, path=scope.path)

    def mutable_anything(self) -> bool:
        """Whether the outer call may write any collection at all."""
        return self.scope.mutable is not False and self.scope.mutable != ()

    def outputs(self, inner: Scope) -> list[dict]:
        """The inner scope's mutable collections, grouped by the output filters.

        Raises:
            ValueError: a collection was written that no output filter covers.
        """
        written = inner.mutable_variables()
        groups = _group(list(written), self.out_filters)
        covered = {c for names in groups for c in names}
        stray = sorted(set(written) - covered)
        if stray:
            raise ValueError(f'Collections {stray} were written inside a lifted transformation '
                             'but no variable filter of the transformation covers them.')
        return [{c: written[c] for c in names} for names in groups]

    def publish(self, groups: Sequence[Mapping]) -> None:
        """Writes the transformed variables back into the outer scope (mutable collections only)."""
        for group in groups:
            for col, tree in group.items():
                if not self.scope.is_mutable_collection(col):
                    continue
                for name, value in tree.items():
                    self.scope.put_variable(col, name, value)


class _Counters:
    """Runs traces from a saved PRNG counter state, then advances the real counters once."""

    def __init__(self, scope: Scope):
        self.live = scope.rng_counters
        self.start = scope.rng_counters.copy()
        self.last = None

    def fresh(self) -> Any:
        self.last = self.start.copy()
        return self.last

    def commit(self) -> None:
        if self.last is not None:
            self.live.assign(self.last)


def _leaf_axes(axes: Any, tree: Any, what: str) -> list:
    """The axis of every leaf of ``tree``, given ``axes`` as a prefix of it.

    ``axes`` is an int, None, ``broadcast``, or a tuple/list/dict of those
    mirroring the top levels of ``tree``.
    """
    if axes is None or axes is broadcast or isinstance(axes, int):
        return [axes] * len(tree_util.tree_leaves(tree))
    if isinstance(axes, (tuple, list)):
        if not isinstance(tree, (tuple, list)) or len(tree) != len(axes):
            raise ValueError(f'{what} {axes!r} does not match the structure of the values '
                             f'({type(tree).__name__} of length {len(tree) if hasattr(tree, "__len__") else "?"}).')
        return [ax for a, t in zip(axes, tree) for ax in _leaf_axes(a, t, what)]
    if isinstance(axes, Mapping):
        if not isinstance(tree, Mapping) or set(tree) != set(axes):
            raise ValueError(f'{what} {axes!r} does not match the keys of the values.')
        return [ax for k in sorted(tree) for ax in _leaf_axes(axes[k], tree[k], what)]
    raise TypeError(f'{what} must be an int, None, broadcast or a tuple/list/dict of those; '
                    f'got {axes!r}.')


def _split_rngs(rng_groups: list[dict], splits: Sequence[bool], n: int) -> list[dict]:
    return [{s: random.split(k, n) for s, k in g.items()} if split else g
            for g, split in zip(rng_groups, splits)]


def scan(fn: Callable[..., Any], variable_axes: Mapping[Filter, int] = {},
         variable_broadcast: Filter = False, variable_carry: Filter = False,
         split_rngs: Mapping[Filter, bool] = {}, in_axes: Any = 0, out_axes: Any = 0,
         length: int | None = None, reverse: bool = False, unroll: int = 1,
         metadata_params: Mapping[Any, Any] = {}) -> Callable[..., Any]:
    """Lifts ``fn(scope, carry, *xs) -> (carry, ys)`` to a loop over ``xs`` (like ``lax.scan``).

    Args:
        fn: the body; reads and writes variables through the scope it gets.
        variable_axes: ``{collection filter: axis}``: these collections get one
            slice per iteration (stacked along ``axis`` outside the loop).
        variable_broadcast: collections shared by all iterations; they may be
            created (during ``init``) but not depend on the carry or ``xs``.
        variable_carry: collections threaded through the loop like the carry.
        split_rngs: ``{stream filter: bool}``: True gives each iteration its
            own key (``random.split(key, length)[i]``), False the same key.
            Streams no filter matches are not available in the body.
        in_axes: the scanned axis of each positional ``xs`` (int or
            ``broadcast``), a prefix of the arguments.
        out_axes: the axis of ``ys`` along which iterations are stacked, or
            ``broadcast`` for outputs that do not depend on the iteration.
        length: the number of iterations (needed when nothing is scanned).
        reverse, unroll: as in ``lax.scan``.
        metadata_params: passed to ``add_axis``/``remove_axis`` of boxed
            (e.g. ``Partitioned``) variables of the ``variable_axes`` collections.

    Returns:
        ``scan_fn(scope, init, *xs) -> (final carry, ys)``.

    Raises:
        ValueError: inconsistent or missing lengths; a broadcast collection
            or output that depends on the loop; a written collection no
            filter covers.
    """
    axes_filters = list(variable_axes.keys())
    var_axes = list(variable_axes.values())
    rng_filters = list(split_rngs.keys())
    rng_splits = list(split_rngs.values())
    filters = [variable_broadcast, variable_carry] + axes_filters

    def wrapper(scope: Scope, init: Any, *args: Any) -> tuple[Any, Any]:
        packed = _Packed(scope, filters, filters, rng_filters)
        arg_leaves, arg_tree = tree_util.tree_flatten(args)
        arg_axes = _leaf_axes(in_axes, args, 'in_axes')
        lengths = {jnp.shape(x)[ax] for x, ax in zip(arg_leaves, arg_axes) if ax is not broadcast}
        if len(lengths) > 1:
            raise ValueError(f'scan: inconsistent lengths {sorted(lengths)} of the scanned inputs.')
        if lengths and length is not None and lengths != {length}:
            raise ValueError(f'scan: length={length} but the scanned inputs have length '
                             f'{lengths.pop()}.')
        if not lengths and length is None:
            raise ValueError('scan: nothing is scanned over; pass length=.')
        n = length if length is not None else lengths.pop()

        bvars, cvars = packed.variable_groups[:2]
        svars = [tree_util.tree_map(lambda x, a=ax: jnp.moveaxis(x, a, 0),
                                    meta.remove_axis(g, ax, dict(metadata_params)))
                 for g, ax in zip(packed.variable_groups[2:], var_axes)]
        rngs = _split_rngs(packed.rng_groups, rng_splits, n)
        xs = [jnp.moveaxis(x, ax, 0) for x, ax in zip(arg_leaves, arg_axes) if ax is not broadcast]

        def body(b, c_vars, s_vars, rng_slice, carry, x_slice, counters):
            x_iter = iter(x_slice)
            leaves = [x if ax is broadcast else next(x_iter) for x, ax in zip(arg_leaves, arg_axes)]
            inner = packed.inner_scope([b, c_vars, *s_vars], rng_slice, counters)
            carry, ys = fn(inner, carry, *tree_util.tree_unflatten(arg_tree, leaves))
            return packed.outputs(inner), carry, ys

        def first(tree):
            return tree_util.tree_map(lambda x: x[0], tree)

        split_groups = [g for g, split in zip(rngs, rng_splits) if split]

        def merge_rngs(split_slices):
            slices = iter(split_slices)
            return [next(slices) if split else g for g, split in zip(rngs, rng_splits)]

        # One run outside the loop (on the first slice) gives the broadcast
        # collections; they must not depend on the loop, so any slice will do.
        outs, _, ys_once = body(bvars, cvars, [first(g) for g in svars],
                                merge_rngs([first(g) for g in split_groups]), init,
                                [x[0] for x in xs], scope.rng_counters)
        b_final = {**bvars, **outs[0]}
        y_leaves_once, y_tree = tree_util.tree_flatten(ys_once)
        y_axes = _leaf_axes(out_axes, ys_once, 'out_axes')

        counters = _Counters(scope)

        def step(loop_carry, x):
            c_vars, carry = loop_carry
            s_vars, split_slices, x_slice = x
            outs, carry, ys = body(b_final, c_vars, s_vars, merge_rngs(split_slices), carry,
                                   x_slice, counters.fresh())
            scanned = [y for y, ax in zip(tree_util.tree_leaves(ys), y_axes) if ax is not broadcast]
            return (outs[1], carry), (scanned, outs[2:])

        (c_out, carry), (scanned, s_out) = lax.scan(
            step, (cvars, init), (svars, split_groups, xs), length=n, reverse=reverse,
            unroll=unroll)
        counters.commit()

        s_out = [meta.add_axis(tree_util.tree_map(lambda v, a=ax: jnp.moveaxis(v, 0, a), g), ax,
                               dict(metadata_params))
                 for g, ax in zip(s_out, var_axes)]
        packed.publish([outs[0], c_out, *s_out])
        s_iter = iter(scanned)
        y_leaves = [once if ax is broadcast else jnp.moveaxis(next(s_iter), 0, ax)
                    for once, ax in zip(y_leaves_once, y_axes)]
        return carry, tree_util.tree_unflatten(y_tree, y_leaves)
    return wrapper


def vmap(fn: Callable[..., Any], variable_axes: Mapping[Filter, Any],
         split_rngs: Mapping[Filter, bool], in_axes: Any = 0, out_axes: Any = 0,
         axis_size: int | None = None, axis_name: Any = None,
         metadata_params: Mapping[Any, Any] = {}) -> Callable[..., Any]:
    """Lifts ``fn(scope, *args)`` over a batch axis (like ``fluxion.vmap``).

    Args:
        variable_axes: ``{collection filter: axis or None}``: the batch axis of
            each collection (None: shared by the whole batch). Collections no
            filter matches are not visible inside.
        split_rngs: ``{stream filter: bool}``: True gives each batch element
            its own key (``random.split(key, size)[i]``), False shares it.
        in_axes, out_axes, axis_size, axis_name: as in ``fluxion.vmap``.
        metadata_params: passed to ``add_axis``/``remove_axis`` of boxed
            variables of collections with an integer axis.

    Returns:
        ``vmapped(scope, *args) -> output``.

    Raises:
        ValueError: no mapped input and no ``axis_size``.
    """
    filters = list(variable_axes.keys())
    var_axes = list(variable_axes.values())
    rng_filters = list(split_rngs.keys())
    rng_splits = list(split_rngs.values())

    def wrapper(scope: Scope, *args: Any) -> Any:
        packed = _Packed(scope, filters, filters, rng_filters)
        size = axis_size
        if size is None:
            leaves = tree_util.tree_leaves(args)
            axes = _leaf_axes(in_axes, args, 'in_axes')
            sizes = {jnp.shape(x)[ax] for x, ax in zip(leaves, axes) if ax is not None}
            if not sizes:
                raise ValueError('vmap: no input is mapped; pass axis_size=.')
            size = sizes.pop()
        rngs = _split_rngs(packed.rng_groups, rng_splits, size)
        rng_axes = [0 if split else None for split in rng_splits]
        counters = _Counters(scope)

        def mapped(variable_groups, rng_groups, inputs):
            inner = packed.inner_scope(variable_groups, rng_groups, counters.fresh())
            out = fn(inner, *inputs)
            return out, packed.outputs(inner)

        params = dict(metadata_params)
        unstacked = [g if ax is None else meta.remove_axis(g, ax, params)
                     for g, ax in zip(packed.variable_groups, var_axes)]
        out, groups = fluxion.vmap(
            mapped, in_axes=(var_axes, rng_axes, in_axes), out_axes=(out_axes, var_axes),
            axis_size=size, axis_name=axis_name)(unstacked, rngs, args)
        groups = [g if ax is None else meta.add_axis(g, ax, params)
                  for g, ax in zip(groups, var_axes)]
        counters.commit()
        packed.publish(groups)
        return out
    return wrapper


def jit(fn: Callable[..., Any], variables: Filter = True, rngs: Filter = True,
        static_argnums: int | Sequence[int] = (), donate_argnums: int | Sequence[int] = ()
        ) -> Callable[..., Any]:
    """Lifts ``fn(scope, *args)`` into a ``fluxion.jit``-compiled function.

    The variables matching ``variables`` and the streams matching ``rngs``
    are passed to the compiled function as inputs; written collections come
    back as outputs. ``static_argnums`` counts the positional ``args`` (the
    scope is not counted).

    As in Flax, every PRNG stream first draws one key at the jitted scope
    (``scope.make_rng(stream)``); inside, keys fold only the names *below*
    the jitted scope into that key. So a jitted module's parameters differ
    from the same module's without ``jit`` (and equal Flax's ``nn.jit``).

    Differences from Flax: the compiled function is built per call, so every
    call traces anew (the values are the same as Flax's; only the compile
    cache is not reused across calls).
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    donated = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)

    def wrapper(scope: Scope, *args: Any) -> Any:
        packed = _Packed(scope, [variables], [variables], [rngs], fork_rngs=True)
        counters = _Counters(scope)

        def pure(variable_groups, rng_groups, *inputs):
            inner = packed.inner_scope(variable_groups, rng_groups, counters.fresh())
            out = fn(inner, *inputs)
            return out, packed.outputs(inner)

        compiled = fluxion.jit(pure, static_argnums=tuple(i + 2 for i in statics),
                               donate_argnums=tuple(i + 2 for i in donated))
        out, groups = compiled(packed.variable_groups, packed.rng_groups, *args)
        counters.commit()
        packed.publish(groups)
        return out
    return wrapper


def checkpoint(fn: Callable[..., Any], variables: Filter = True, rngs: Filter = True, concrete: bool = False,
               prevent_cse: bool = True, static_argnums: int | Sequence[int] = (),
               policy: Callable[..., bool] | None = None) -> Callable[..., Any]:
    """Lifts ``fn(scope, *args)`` into a ``fluxion.checkpoint``-ed (rematerialized) function: reverse mode
    recomputes its intermediates instead of storing them. Variables matching ``variables`` and streams matching
    ``rngs`` pass through as inputs, written collections come back as outputs; keys are drawn as without the
    transform. ``static_argnums`` counts the positional ``args``; ``concrete`` is accepted for compatibility (Flax
    deprecates it; fluxion never needs concrete values here).
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    def wrapper(scope: Scope, *args: Any) -> Any:
        packed = _Packed(scope, [variables], [variables], [rngs])
        counters = _Counters(scope)

        def pure(variable_groups, rng_groups, *inputs):
            inner = packed.inner_scope(variable_groups, rng_groups, counters.fresh())
            out = fn(inner, *inputs)
            return out, packed.outputs(inner)

        rematted = fluxion.checkpoint(pure, prevent_cse=prevent_cse, policy=policy,
                                      static_argnums=tuple(i + 2 for i in statics))
        out, groups = rematted(packed.variable_groups, packed.rng_groups, *args)
        counters.commit()
        packed.publish(groups)
        return out
    return wrapper


remat = checkpoint


def remat_scan(body_fn: Callable[..., Any], lengths: Sequence[int], policy: Callable[..., bool] | None = None,
               variable_broadcast: Filter = False, variable_carry: Filter = False,
               variable_axes: Mapping[Filter, int] = {True: 0},  # noqa: B006 -- read-only default, as Flax's
               split_rngs: Mapping[Filter, bool] = {True: True}) -> Callable[..., Any]:  # noqa: B006
    """``body_fn(scope, carry) -> carry`` applied ``prod(lengths)`` times as nested scans (one per entry of
    ``lengths``, outermost first), each level rematerialized: reverse mode stores only each level's carries, so
    memory grows with ``sum(lengths)`` instead of their product. Variables get one leading axis per level."""
    lengths = tuple(lengths)
    if not lengths:
        raise ValueError("remat_scan needs at least one length")

    def level(fn: Callable[..., Any], length: int) -> Callable[..., Any]:
        step = checkpoint(lambda scope, carry: (fn(scope, carry), ()), policy=policy)
        looped = scan(step, variable_axes=variable_axes, variable_broadcast=variable_broadcast,
                      variable_carry=variable_carry, split_rngs=split_rngs, length=length)
        return lambda scope, carry: looped(scope, carry)[0]

    fn = body_fn
    for length in reversed(lengths):
        fn = level(fn, length)
    return fn


def _pure_branches(packed: _Packed, scope: Scope, branches: Sequence[Callable[..., Any]],
                   operands: tuple) -> list[Callable[..., Any]]:
    """The branches as pure functions ``(*operands) -> (out, written variables)``.

    Flax's branches share the PRNG counters and JAX traces them in order
    (``true_fun`` before ``false_fun`` for ``cond``), so branch ``j``
    draws after everything branches ``0..j-1`` drew, and the variables a
    branch creates during ``init`` depend on which branch runs. To give the
    same keys whatever order fluxion traces in, each branch is first traced
    abstractly in JAX's order to find the counter state it starts from.
    """
    def run(branch, counters, *ops):
        inner = packed.inner_scope(packed.variable_groups, packed.rng_groups, counters)
        out = branch(inner, *ops)
        return out, packed.outputs(inner)

    starts = []
    for branch in branches:
        starts.append(scope.rng_counters.copy())
        fluxion.eval_shape(functools.partial(run, branch, scope.rng_counters), *operands)
    return [lambda *ops, b=b, c=c: run(b, c.copy(), *ops) for b, c in zip(branches, starts)]


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], scope: Scope,
         *operands: Any, variables: Filter = True, rngs: Filter = True) -> Any:
    """``lax.cond`` over two functions of a scope: ``true_fun(scope, *operands)`` or ``false_fun``.

    Both branches are traced, so variables created in them must have the
    same structure in both. During ``init`` the created values come from
    the branch taken, and (as in Flax) the two branches draw different keys.
    Written collections are published.
    """
    packed = _Packed(scope, [variables], [variables], [rngs])
    true_pure, false_pure = _pure_branches(packed, scope, (true_fun, false_fun), operands)
    out, groups = lax.cond(pred, true_pure, false_pure, *operands)
    packed.publish(groups)
    return out


def switch(index: Any, branches: Sequence[Callable[..., Any]], scope: Scope, *operands: Any,
           variables: Filter = True, rngs: Filter = True) -> Any:
    """``lax.switch`` over functions of a scope; see :func:`cond` for the variable rules."""
    packed = _Packed(scope, [variables], [variables], [rngs])
    out, groups = lax.switch(index, _pure_branches(packed, scope, branches, operands), *operands)
    packed.publish(groups)
    return out


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], scope: Scope,
               init: Any, carry_variables: Filter = False, broadcast_variables: Filter = True,
               split_rngs: Mapping[Filter, bool] = {}) -> Any:
    """``lax.while_loop`` with ``cond_fn(scope, c)`` and ``body_fn(scope, c) -> c``.

    ``carry_variables`` may be written by the body (threaded through the
    loop); ``broadcast_variables`` are read-only. A split stream's key in
    iteration ``i`` is ``random.fold_in(key, i)`` in the body and
    ``fold_in(key, -i)`` in ``cond_fn`` (Flax's choice). ``cond_fn`` may not
    write variables.
    """
    rng_filters = list(split_rngs.keys())
    rng_splits = list(split_rngs.values())
    packed = _Packed(scope, [carry_variables, broadcast_variables], [carry_variables],
                     rng_filters)
    carry_vars, broadcast_vars = packed.variable_groups

    def loop_rngs(i):
        return [{s: random.fold_in(k, i) for s, k in g.items()} if split else g
                for g, split in zip(packed.rng_groups, rng_splits)]

    def cond_wrapper(c):
        i, c_vars, carry = c
        inner = packed.inner_scope([c_vars, broadcast_vars], loop_rngs(-i), scope.rng_counters,
                                   mutable=False)
        return cond_fn(inner, carry)

    def body_wrapper(c):
        i, c_vars, carry = c
        inner = packed.inner_scope([c_vars, broadcast_vars], loop_rngs(i), scope.rng_counters)
        carry = body_fn(inner, carry)
        return i + 1, packed.outputs(inner)[0], carry

    _, c_vars, carry = lax.while_loop(cond_wrapper, body_wrapper,
                                      (jnp.asarray(0, jnp.int32), carry_vars, init))
    packed.publish([c_vars])
    return carry


def map_variables(fn: Callable[..., Any], mapped_collections: Filter,
                  map_in_fn: Callable[..., Any] = lambda x: x,
                  map_out_fn: Callable[..., Any] = lambda x: x, init: bool = False,
                  mutable: bool = False, rngs: Filter = True, variables: Filter = True
                  ) -> Callable[..., Any]:
    """Runs ``fn(scope, *args)`` seeing the ``mapped_collections`` through ``map_in_fn``.

    ``map_in_fn`` maps each mapped collection's tree (at the scope's path)
    before ``fn`` reads it; ``map_out_fn`` maps what ``fn`` wrote back
    before it is stored. Unless ``init`` or ``mutable`` is True the mapped
    collections are read-only inside. With ``init=True`` during
    initialization, ``fn`` first runs once to create the variables, which
    are then passed through ``map_out_fn`` and ``map_in_fn`` for the real
    run (as Flax does).
    """
    target_out = mutable or init
    in_filters = [mapped_collections, variables]
    out_filters = in_filters if target_out else [False, AllOf((variables,
                                                               DenyList(mapped_collections)))]

    def wrapper(scope: Scope, *args: Any, **kwargs: Any) -> Any:
        packed = _Packed(scope, in_filters, out_filters, [rngs])
        target, others = packed.variable_groups
        if init and packed.mutable_anything():
            first = packed.inner_scope([target, others], packed.rng_groups, scope.rng_counters)
            fn(first, *args, **kwargs)
            target = {col: tree for col, tree in first.variables().items()
                      if in_filter(mapped_collections, col)}
            target = map_out_fn(target)
        target = map_in_fn(_copy_tree(target))
        inner_mutable = True if target_out else DenyList(mapped_collections)
        inner = packed.inner_scope([target, others], packed.rng_groups, scope.rng_counters,
                                   mutable=inner_mutable)
        out = fn(inner, *args, **kwargs)
        groups = packed.outputs(inner)
        if target_out:
            groups[0] = map_out_fn(groups[0])
        packed.publish(groups)
        return out
    return wrapper


def _call(fn: Callable[..., Any], inner: Scope, args: tuple, has_aux: bool) -> tuple:
    if has_aux:
        return fn(inner, *args)
    return fn(inner, *args), ()


def vjp(fn: Callable[..., Any], scope: Scope, *primals: Any, has_aux: bool = False,
        vjp_variables: Filter = 'params', variables: Filter = True, rngs: Filter = True
        ) -> tuple:
    """``fluxion.vjp`` of ``fn(scope, *primals)`` with respect to the variables and the primals.

    Returns:
        ``(y, bwd)`` (or ``(y, bwd, aux)`` with ``has_aux``), where
        ``bwd(cotangent) -> (variable grads, *primal grads)`` and the variable
        grads are ``{collection: tree}`` for the ``vjp_variables``.
    """
    packed = _Packed(scope, [vjp_variables, variables], [variables], [rngs])
    differentiated, others = packed.variable_groups

    def wrapper(diff_vars, *args):
        inner = packed.inner_scope([diff_vars, others], packed.rng_groups, scope.rng_counters)
        y, aux = _call(fn, inner, args, has_aux)
        return y, (aux, packed.outputs(inner))

    y, bwd, (aux, groups) = fluxion.vjp(wrapper, differentiated, *primals, has_aux=True)
    packed.publish(groups)
    return (y, bwd, aux) if has_aux else (y, bwd)


def value_and_grad(fn: Callable[..., Any], scope: Scope, *primals: Any, has_aux: bool = False,
                   variables: Filter = True, rngs: Filter = True) -> tuple:
    """Value of ``fn(scope, *primals)`` and its gradient with respect to the primals (not the variables).

    Returns:
        ``(y, primal grads)``, or ``(y, aux, primal grads)`` with ``has_aux``;
        the grads are a tuple with one entry per primal.
    """
    packed = _Packed(scope, [variables], [variables], [rngs])

    def wrapper(*args):
        inner = packed.inner_scope(packed.variable_groups, packed.rng_groups, scope.rng_counters)
        y, aux = _call(fn, inner, args, has_aux)
        return y, (aux, packed.outputs(inner))

    y, bwd, (aux, groups) = fluxion.vjp(wrapper, *primals, has_aux=True)
    grads = bwd(jnp.ones_like(y))
    packed.publish(groups)
    return (y, aux, grads) if has_aux else (y, grads)


def jvp(fn: Callable[..., Any], scope: Scope, primals: Sequence[Any], tangents: Sequence[Any],
        variable_tangents: Mapping[str, Any], variables: Filter = True, rngs: Filter = True
        ) -> tuple:
    """``fluxion.jvp`` of ``fn(scope, *primals)``, with tangents for primals and some collections.

    Args:
        variable_tangents: ``{collection: tangent tree}``; those collections
            (the non-empty entries) are differentiated along the given
            tangents, the others held constant.

    Returns:
        ``(y, tangent of y)``.
    """
    tangent_vars = {col: t for col, t in variable_tangents.items() if t}
    packed = _Packed(scope, [tuple(tangent_vars), variables], [variables], [rngs])
    differentiated, others = packed.variable_groups

    def wrapper(diff_vars, args):
        inner = packed.inner_scope([diff_vars, others], packed.rng_groups, scope.rng_counters)
        return fn(inner, *args), packed.outputs(inner)

    y, y_dot, groups = fluxion.jvp(wrapper, (differentiated, tuple(primals)),
                                   (tangent_vars, tuple(tangents)), has_aux=True)
    packed.publish(groups)
    return y, y_dot


def fold_rngs(fn: Callable[..., Any], variables: Filter = True, rngs: Filter = True
              ) -> Callable[..., Any]:
    """Runs ``fn(scope, *args)`` with PRNG streams forked as :func:`jit` does, without compiling.

    Every stream first draws one key at the scope (``scope.make_rng``);
    inside, keys fold only the names below the scope into it. Useful to
    give a module the same keys as under ``nn.jit`` without compiling it.
    """
    def wrapper(scope: Scope, *args: Any) -> Any:
        packed = _Packed(scope, [variables], [variables], [rngs], fork_rngs=True)
        inner = packed.inner_scope(packed.variable_groups, packed.rng_groups, scope.rng_counters)
        out = fn(inner, *args)
        packed.publish(packed.outputs(inner))
        return out
    return wrapper


def custom_vjp(fn: Callable[..., Any], forward_fn: Callable[..., Any],
               backward_fn: Callable[..., Any], grad_vars: Filter = 'params',
               nondiff_argnums: Sequence[int] = ()) -> Callable[..., Any]:
    """``fluxion.custom_vjp`` for a function of a scope, with custom gradients for variables too.

    Args:
        fn: ``fn(scope, *args) -> y``, the primal computation.
        forward_fn: ``forward_fn(scope, *args) -> (y, residuals)``.
        backward_fn: ``backward_fn(*nondiff args, residuals, y cotangent) ->
            (grads of the grad_vars collections, *grads of args)``; the first
            entry is ``{collection: tree}`` like the variables.
        grad_vars: the collections that get gradients.
        nondiff_argnums: as in ``custom_vjp``, counted over
            ``(grad variables, *args)`` (position 0 is the variables, as in Flax).

    Returns:
        ``wrapper(scope, *args) -> y``.
    """
    def wrapper(scope: Scope, *args: Any) -> Any:
        packed = _Packed(scope, [grad_vars, True], [grad_vars, True], [True])
        differentiated, others = packed.variable_groups

        def run(body, diff_vars, inputs):
            inner = packed.inner_scope([diff_vars, others], packed.rng_groups,
                                       scope.rng_counters)
            return body(inner, *inputs), packed.outputs(inner)

        def primal(diff_vars, *inputs):
            return run(fn, diff_vars, inputs)

        def forward(diff_vars, *inputs):
            (y, residuals), groups = run(forward_fn, diff_vars, inputs)
            return (y, groups), residuals

        def backward(*bwd_args):
            residuals, (y_cotangent, _) = bwd_args[-2:]
            return tuple(backward_fn(*bwd_args[:-2], residuals, y_cotangent))

        lifted = fluxion.custom_vjp(primal, nondiff_argnums=tuple(nondiff_argnums))
        lifted.defvjp(forward, backward)
        y, groups = lifted(differentiated, *args)
        packed.publish(groups)
        return y
    return wrapper
