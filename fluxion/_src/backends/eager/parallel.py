"""NumPy implementations of the collectives (`psum`, `all_gather`, `ppermute`, ...) for `pmap` replicas.

Under `pmap` each replica runs its program on its own thread (or process); a collective's implementation hands its
operands to the replica group of the named axis (`fluxion._src.interpreters.spmd.ReplicaGroup.exchange`), which waits for every
replica and gives each the combined result. (Under `vmap` the collectives never reach the backend: their batching
rules in `lax.parallel` compute them along the batch dimension.)
"""

from __future__ import annotations

import numpy as np

from ...interpreters import spmd as pmap_runtime
from ...lax import parallel as lp
from . import minmax, register_impl


def _slot(axes):
    """This thread's place in the replica group of the named axis `axes[0]`."""
    return pmap_runtime.current_replica(axes[0])


def _reduce(np_op, what):
    def impl(*xs, axes, axis_index_groups=None):
        xs = [np.asarray(x) for x in xs]

        def combine(vals):
            outs = []
            for k, x in enumerate(xs):
                acc = np.array(vals[0][k], dtype=x.dtype, copy=True)  # fresh: never alias a replica's operand
                for v in vals[1:]:
                    np_op(acc, v[k], out=acc)
                outs.append(acc)
            return outs

        return _slot(axes).exchange(xs, what, combine)
    return impl


register_impl(lp.psum_p, _reduce(np.add, "psum"))
register_impl(lp.pmax_p, _reduce(minmax.maximum_into, "pmax"))  # XLA's signed zeros (see minmax)
register_impl(lp.pmin_p, _reduce(minmax.minimum_into, "pmin"))


def all_gather(x, *, axes, dimension, size):
    return _slot(axes).exchange([np.asarray(x)], "all_gather",
                                lambda vals: np.concatenate([v[0] for v in vals], axis=dimension))


register_impl(lp.all_gather_p, all_gather)


def psum_scatter(x, *, axes, dimension, size):
    slot = _slot(axes)
    x = np.asarray(x)

    def combine(vals):
        block = x.shape[dimension] // size
        index = (slice(None),) * dimension + (slice(slot.index * block, (slot.index + 1) * block),)
        acc = np.array(vals[0][0][index], dtype=x.dtype, copy=True)
        for v in vals[1:]:
            np.add(acc, v[0][index], out=acc)
        return acc

    return slot.exchange([x], "psum_scatter", combine)


register_impl(lp.psum_scatter_p, psum_scatter)


def all_to_all(x, *, axes, split_axis, concat_axis, size):
    slot = _slot(axes)

    def combine(vals):
        return np.concatenate([np.split(v[0], size, axis=split_axis)[slot.index] for v in vals], axis=concat_axis)

    return slot.exchange([np.asarray(x)], "all_to_all", combine)


register_impl(lp.all_to_all_p, all_to_all)


def ppermute(x, *, axes, perm):
    slot = _slot(axes)
    x = np.asarray(x)
    source = {dst: src for src, dst in perm}.get(slot.index)

    def combine(vals):
        return np.zeros_like(x) if source is None else np.array(vals[source][0], copy=True)

    return slot.exchange([x], "ppermute", combine)


register_impl(lp.ppermute_p, ppermute)


def axis_index(*, axes):
    return np.int32(_slot(axes).index)


register_impl(lp.axis_index_p, axis_index)
