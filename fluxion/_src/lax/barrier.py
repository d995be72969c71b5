"""`optimization_barrier`: an identity on a pytree of arrays that a compiler may not move computation across.

XLA uses it to pin where values are computed (for example to keep a rematerialized value from being merged with
the original). fluxion's compiler does not reorder across it either: the primitive is opaque to fusion and its
implementation is the identity. Its JVP puts the primal values through the barrier and passes tangents through;
batching keeps each operand's batch dimension.
"""

from __future__ import annotations

from .. import core, tree_util
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import structural as st
from .utils import standard_primitive

optimization_barrier_p = standard_primitive("optimization_barrier", multiple_results=True, weak_type="all")


def optimization_barrier(operand, /):
    """Returns `operand` (a pytree of arrays) unchanged, as one opaque operation that computations are not moved
    across. Differentiable (the tangents pass through) and batchable."""
    leaves, treedef = tree_util.tree_flatten(operand)
    leaves = [st._as_array(x) for x in leaves]
    if not leaves:
        return operand
    return tree_util.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))


def _optimization_barrier_abstract_eval(*avals):
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


abstract_eval_rules[optimization_barrier_p] = _optimization_barrier_abstract_eval


def _optimization_barrier_jvp(primals, tangents):
    outs = optimization_barrier_p.bind(*primals)
    return outs, [Zero(core.get_aval(o)) if type(t) is Zero else t for o, t in zip(outs, tangents)]


ad.primitive_jvps[optimization_barrier_p] = _optimization_barrier_jvp


def _optimization_barrier_batch_rule(vals, dims):
    return optimization_barrier_p.bind(*vals), list(dims)


batching.primitive_batchers[optimization_barrier_p] = _optimization_barrier_batch_rule
