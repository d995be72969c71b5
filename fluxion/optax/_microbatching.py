"""Microbatching: evaluate a batched function in sequential chunks to bound memory.

``microbatch(fun, argnums, microbatch_size)`` splits the batch axis of the
chosen arguments into ``batch // microbatch_size`` microbatches, runs ``fun``
on each inside a ``lax.fori_loop`` and combines the outputs with an
accumulator (sum, mean, running mean or concatenation). Microbatch ``i``
holds the examples ``i, i + n, i + 2n, ...`` (``n`` microbatches), the
strided split optax uses (a Fortran-order reshape), so concatenated outputs
come back in the original order.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

Function = Callable[..., Any]
IndividualOutputs = collections.namedtuple('Aux', ['values', 'metrics', 'aux'])


@dataclasses.dataclass(frozen=True)
class Accumulator:
    """How microbatch outputs are combined.

    Attributes:
        init: output shape/dtype struct -> initial carry.
        update: ``(carry, value, index) -> carry``.
        finalize: carry -> result.
        aggregate: reduces a leading axis of stacked values (used by ``micro_vmap``).
    """
    init: Callable[[Any], Any]
    update: Callable[[Any, Any, Any], Any]
    finalize: Callable[[Any], Any]
    aggregate: Callable[[Any], Any]


class AccumulationType(enum.Enum):
    """Built-in accumulators."""
    MEAN = enum.auto()
    SUM = enum.auto()
    RUNNING_MEAN = enum.auto()
    CONCAT = enum.auto()


def _zeros_for(struct: Any) -> Any:
    return jnp.zeros(struct.shape, struct.dtype)


def _require_floating(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(struct):
        if not jnp.issubdtype(struct.dtype, jnp.floating):
            raise ValueError('microbatch: MEAN and RUNNING_MEAN accumulators need floating '
                             f'outputs, got {struct.dtype}.')
        return fn(struct)
    return wrapped


def _lift(acc: Accumulator) -> Accumulator:
    """Applies a per-array accumulator to every leaf of a pytree output."""
    return Accumulator(
        lambda value: tree_util.tree_map(acc.init, value),
        lambda carry, value, i: tree_util.tree_map(lambda c, v: acc.update(c, v, i), carry, value),
        lambda carry: tree_util.tree_map(acc.finalize, carry),
        lambda values: tree_util.tree_map(acc.aggregate, values))


def _sum() -> Accumulator:
    return _lift(Accumulator(_zeros_for, lambda c, v, _: c + v, lambda c: c,
                             functools.partial(jnp.sum, axis=0)))


def _mean(n: int) -> Accumulator:
    if n <= 0:
        raise ValueError(f'microbatch: num_microbatches must be positive, got {n}.')
    return _lift(Accumulator(_require_floating(_zeros_for), lambda c, v, _: c + v,
                             lambda c: c / n, functools.partial(jnp.mean, axis=0)))


def _running_mean() -> Accumulator:
    def update(carry, value, index):
        keep = index / (index + 1)
        return carry * keep + value * (1 - keep)
    return _lift(Accumulator(_require_floating(_zeros_for), update, lambda c: c,
                             functools.partial(jnp.mean, axis=0)))


def _concat(n: int) -> Accumulator:
    if n <= 0:
        raise ValueError(f'microbatch: num_microbatches must be positive, got {n}.')

    def init(struct):
        return jnp.zeros((n,) + tuple(struct.shape), struct.dtype)

    def finalize(carry):
        # Undo the strided split: (n, mb, ...) -> (mb * n, ...) in original order.
        return jnp.reshape(jnp.swapaxes(carry, 0, 1), (-1,) + tuple(carry.shape[2:]))

    return _lift(Accumulator(init, lambda c, v, i: c.at[i].set(v), finalize, lambda x: x))


def _is_acc_leaf(x: Any) -> bool:
    return isinstance(x, (Accumulator, AccumulationType))


def _canonicalize(spec: Any, n: Optional[int]) -> Accumulator:
    def one(acc):
        if isinstance(acc, Accumulator):
            return acc
        if acc == AccumulationType.MEAN:
            return _mean(n)
        if acc == AccumulationType.SUM:
            return _sum()
        if acc == AccumulationType.RUNNING_MEAN:
            return _running_mean()
        if acc == AccumulationType.CONCAT:
            return _concat(n)
        raise ValueError(f'microbatch: unknown accumulator {acc!r}.')

    accs = tree_util.tree_map(one, spec, is_leaf=_is_acc_leaf)

    def each(fn, *trees):
        return tree_util.tree_map(lambda a, *xs: fn(a, *xs), accs, *trees, is_leaf=_is_acc_leaf)

    return Accumulator(lambda v: each(lambda a, x: a.init(x), v),
                       lambda c, v, i: each(lambda a, x, y: a.update(x, y, i), c, v),
                       lambda c: each(lambda a, x: a.finalize(x), c),
                       lambda v: each(lambda a, x: a.aggregate(x), v))


def reshape_batch_axis(tree: Any, microbatch_size: int, axis: int = 0) -> Any:
    """Splits ``axis`` (size B) of every leaf into ``(B // microbatch_size, microbatch_size)``.

    Element ``b`` goes to microbatch ``b % n`` at position ``b // n`` (the
    Fortran-order reshape optax uses).
    """
    def split(x):
        b = x.shape[axis]
        tmp = jnp.reshape(x, x.shape[:axis] + (microbatch_size, b // microbatch_size)
                          + x.shape[axis + 1:])
        return jnp.swapaxes(tmp, axis, axis + 1)
    return tree_util.tree_map(split, tree)


def _batch_size(args: Sequence[Any], axes: Sequence[int]) -> int:
    sizes = [x.shape[ax] for a, ax in zip(args, axes) for x in tree_util.tree_leaves(a)]
    if len(set(sizes)) > 1:
        raise ValueError(f'microbatch: batch arguments must share one batch size, got {sizes}.')
    return sizes[0]


def microbatch(fun: Function, argnums: Union[int, Sequence[int]],
               microbatch_size: Optional[int], accumulator: Any = AccumulationType.SUM, *,
               argnames: Union[str, Sequence[str]] = (), in_axes: Union[int, Sequence[int]] = 0,
               num_real_microbatches: Optional[Any] = None) -> Function:
    """Returns ``fun`` evaluated microbatch by microbatch and accumulated.

    Args:
        fun: the function of a full batch.
        argnums / argnames: positional indices / keyword names of batched arguments.
        microbatch_size: examples per microbatch (None: return ``fun`` unchanged).
        accumulator: an ``AccumulationType``, an ``Accumulator``, or a pytree of
            them matching ``fun``'s output.
        in_axes: batch axis of each batched argument.
        num_real_microbatches: process only this many microbatches (may be traced).

    Raises:
        ValueError: unequal batch sizes or a batch not divisible by ``microbatch_size``.
    """
    if microbatch_size is None:
        return fun
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    argnames = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    if isinstance(in_axes, int):
        in_axes = (in_axes,) * (len(argnums) + len(argnames))
    in_axes = tuple(in_axes)

    def wrapped(*args, **kwargs):
        batched = [args[i] for i in argnums] + [kwargs[k] for k in argnames]
        batch = _batch_size(batched, in_axes)
        if batch % microbatch_size:
            raise ValueError(f'microbatch: batch size {batch} is not divisible by '
                             f'microbatch_size={microbatch_size}.')
        n = batch // microbatch_size
        args, kwargs = list(args), dict(kwargs)
        for i, ax in zip(argnums, in_axes):
            args[i] = reshape_batch_axis(args[i], microbatch_size, ax)
        for k, ax in zip(argnames, in_axes[len(argnums):]):
            kwargs[k] = reshape_batch_axis(kwargs[k], microbatch_size, ax)
        acc = _canonicalize(accumulator, n)

        def call(index):
            a, kw = list(args), dict(kwargs)
            for i, ax in zip(argnums, in_axes):
                a[i] = tree_util.tree_map(lambda x, ax=ax: jnp.take(x, index, axis=ax), a[i])
            for k, ax in zip(argnames, in_axes[len(argnums):]):
                kw[k] = tree_util.tree_map(lambda x, ax=ax: jnp.take(x, index, axis=ax), kw[k])
            return fun(*a, **kw)

        carry = acc.init(fluxion.eval_shape(call, 0))
        bound = n if num_real_microbatches is None else num_real_microbatches
        carry = lax.fori_loop(0, bound, lambda i, c: acc.update(c, call(i), i), carry)
        return acc.finalize(carry)

    return wrapped


def micro_vmap(fun: Function, in_axes: Union[int, Sequence[Optional[int]]] = 0,
               out_axes: Any = 0, *, microbatch_size: Optional[int] = None,
               vmap_fn: Callable[..., Any] = fluxion.vmap,
               accumulator: Any = AccumulationType.CONCAT,
               num_real_microbatches: Optional[Any] = None) -> Function:
    """``vmap(fun)`` evaluated microbatch by microbatch.

    Each microbatch is vmapped, reduced with the accumulator's ``aggregate``
    (the identity for CONCAT), then accumulated. Keyword arguments are
    batched along axis 0.

    Raises:
        NotImplementedError: for ``out_axes != 0``.
    """
    if out_axes != 0:
        raise NotImplementedError('micro_vmap: only out_axes=0 is supported.')
    in_axes = (in_axes,) if isinstance(in_axes, int) else tuple(in_axes)
    mapped_args = tuple(i for i, ax in enumerate(in_axes) if ax is not None)

    def vmap_then_reduce(*args, kwargs):
        names = sorted(kwargs)
        n_pos = len(args)

        def positional(*all_args):
            return fun(*all_args[:n_pos], **dict(zip(names, all_args[n_pos:])))

        axes = tuple(in_axes[i] if i < len(in_axes) else None for i in range(n_pos)) + \
            (0,) * len(names)
        out = vmap_fn(positional, axes, out_axes)(*args, *[kwargs[k] for k in names])
        size = tree_util.tree_leaves(out)[0].shape[0]
        return _canonicalize(accumulator, size).aggregate(out)

    inner = microbatch(vmap_then_reduce, argnums=mapped_args, argnames='kwargs',
                       microbatch_size=microbatch_size, accumulator=accumulator,
                       in_axes=tuple(ax for ax in in_axes if ax is not None) + (0,),
                       num_real_microbatches=num_real_microbatches)

    def wrapped(*args, **kwargs):
        return inner(*args, kwargs=kwargs)

    return wrapped


def micro_grad(fun: Function, has_aux: bool = False, argnums: Union[int, Sequence[int]] = 0, *,
               batch_argnums: Union[int, Sequence[int]] = 1, keep_batch_dim: bool = True,
               microbatch_size: Optional[int] = None, accumulator: Any = AccumulationType.SUM,
               transform_fn: Callable[[Any], Any] = lambda x: x,
               metrics_fn: Callable[[Any], Any] = lambda x: None,
               num_real_microbatches: Optional[Any] = None) -> Function:
    """Per-example gradients, transformed (e.g. clipped) and accumulated by microbatches.

    Returns a function returning ``(accumulated transform_fn(grad),
    IndividualOutputs(values, metrics, aux))`` where the per-example values,
    metrics and aux are concatenated. With ``keep_batch_dim`` each example is
    passed with a batch axis of size 1.
    """
    batch_argnums = (batch_argnums,) if isinstance(batch_argnums, int) else tuple(batch_argnums)
    fun_aux = fun if has_aux else (lambda *a, **k: (fun(*a, **k), None))
    value_and_grad = fluxion.value_and_grad(fun_aux, argnums, has_aux=True)

    def per_example(*args, **kwargs):
        (value, aux), grad = value_and_grad(*args, **kwargs)
        return transform_fn(grad), IndividualOutputs(values=value, metrics=metrics_fn(grad),
                                                     aux=aux)

    axes = [None] * (max(batch_argnums) + 1)
    for i in batch_argnums:
        axes[i] = 0
    micro = micro_vmap(per_example, in_axes=axes,
                       accumulator=(accumulator, AccumulationType.CONCAT),
                       microbatch_size=microbatch_size,
                       num_real_microbatches=num_real_microbatches)
    if not keep_batch_dim:
        return micro

    def with_example_axis(*args, **kwargs):
        args = list(args)
        for i in batch_argnums:
            args[i] = tree_util.tree_map(lambda x: jnp.expand_dims(x, 1), args[i])
        return micro(*args, **kwargs)

    return with_example_axis
