"""Implementations of the host-callback primitives: call the user's Python function on the operand values."""

from __future__ import annotations

import numpy as np

from ...lax import callback as cb
from ...tree_util import tree_unflatten
from . import register_impl


def _pure_callback(*args, callback, result_avals, vmap_method=None, sharding=None):
    return cb._check_results("pure_callback", callback(*args), result_avals)


def _io_callback(*args, callback, result_avals, ordered=False, sharding=None):
    return cb._check_results("io_callback", callback(*args), result_avals)


def _debug_callback(*args, callback, ordered=False):
    callback(*args)
    return []


def _debug_print(*args, fmt, in_tree, static, ordered=False, np_printoptions=()):
    # Rebuild the format arguments: traced operands as NumPy arrays (as JAX formats them), static ones as given.
    leaves, operands, statics = [], iter(args), dict(static)
    for i in range(in_tree.num_leaves):
        leaves.append(statics[i] if i in statics else np.asarray(next(operands)))
    fargs, fkwargs = tree_unflatten(in_tree, leaves)
    with np.printoptions(**dict(np_printoptions)):
        print(fmt.format(*fargs, **fkwargs), flush=True)
    return []


register_impl(cb.pure_callback_p, _pure_callback)
register_impl(cb.io_callback_p, _io_callback)
register_impl(cb.debug_callback_p, _debug_callback)
register_impl(cb.debug_print_p, _debug_print)
