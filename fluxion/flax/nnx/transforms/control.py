"""``nnx.cond`` and ``nnx.switch``: ``fluxion.lax.cond``/``switch`` whose branches may mutate graph objects."""

from __future__ import annotations

from typing import Any

from fluxion import lax

from ..graph import merge
from ._extract import flatten_tree, merge_nodes, resolve_outputs, split_nodes, sync_all, unflatten_tree


def _run_branches(index_or_pred: Any, branches: list, operands: tuple, use_cond: bool) -> Any:
    spec, nodes, dyn = flatten_tree(operands)
    graphdef, state = split_nodes(nodes)
    traced: list = []

    def make(branch: Any) -> Any:
        def run(st: Any, values: list) -> tuple:
            fresh = merge_nodes(graphdef, st)
            out = branch(*unflatten_tree(spec, fresh, values))
            out_spec, out_nodes, out_dyn = flatten_tree(out)
            out_graphdef, out_state = split_nodes([tuple(fresh), tuple(out_nodes)])
            traced.append((out_spec.key(), out_graphdef, out_spec))
            return out_state, out_dyn
        return run

    fns = [make(b) for b in branches]
    if use_cond:
        out_state, out_dyn = lax.cond(index_or_pred, fns[0], fns[1], state, dyn)
    else:
        out_state, out_dyn = lax.switch(index_or_pred, fns, state, dyn)
    if any(t[:2] != traced[0][:2] for t in traced[1:]):
        raise ValueError('the branches must return outputs, and leave graph objects, of the same structure')
    _, out_graphdef, out_spec = traced[0]
    fresh_in, fresh_out = merge(out_graphdef, out_state)
    memo = sync_all(nodes, fresh_in)
    return unflatten_tree(out_spec, resolve_outputs(fresh_out, memo), out_dyn)


def cond(pred: Any, true_fun: Any, false_fun: Any, *operands: Any, graph: Any = None,
         graph_updates: Any = None) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, traced as one ``lax.cond``.

    Graph objects among the operands may be mutated by either branch; the
    taken branch's changes are written back.

    Raises:
      ValueError: the branches give outputs or object structures that differ.
    """
    return _run_branches(pred, [true_fun, false_fun], operands, use_cond=True)


def switch(index: Any, branches: Any, *operands: Any, graph: Any = None, graph_updates: Any = None) -> Any:
    """``branches[index](*operands)`` (index clamped) as one ``lax.switch``; graph mutations are written back.

    Raises:
      ValueError: the branches give outputs or object structures that differ.
    """
    return _run_branches(index, list(branches), operands, use_cond=False)
