"""`custom_vmap_call_p`: a call of a program whose batching is given by a user rule (`custom_batching.custom_vmap`).

The equation carries the function's program (`call_jaxpr`, what runs when nothing is batched: eagerly, under `jit`,
and inlined by the compiler) and the rule (`rule`, a `VmapRule` working on flat lists). Its rules:

* batching: batched operands' batch axes are moved to the front and the user's rule is called with the axis size,
  which operands are batched, and the operands; it returns the outputs and which of them are batched.
* JVP: the primal outputs are the call itself (still custom-batched); the tangents are a second custom_vmap call of
  the program's JVP whose rule is the JVP of the user's rule -- so `vmap(jvp(f))` batches with the rule's
  derivative, as in JAX.
* no transpose: like JAX's, a custom_vmap function does not support reverse mode (`ValueError`); wrap it in
  `custom_vjp` for that.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import core
from ..core import ClosedJaxpr, Primitive, abstract_eval_rules, param_print_order
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero
from ..tree_util import tree_flatten, tree_unflatten
from .call import memoized


def _weak_types(args: Sequence[Any], params: dict) -> list[bool]:
    return [a.weak_type for a in params["call_jaxpr"].out_avals]


custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True, weak_type=_weak_types)
param_print_order[custom_vmap_call_p] = ("name", "call_jaxpr", "rule")


class VmapRule:
    """The user's rule `rule(axis_size, in_batched, *args) -> (out, out_batched)` seen on flat lists.

    Attributes:
      rule: the user's function.
      in_tree: the structure of the function's positional arguments (a tuple).
      out_tree: the structure of the function's output.
    """

    __slots__ = ("rule", "in_tree", "out_tree")

    def __init__(self, rule: Callable, in_tree, out_tree):
        self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree

    def flat(self, axis_size: int, in_batched: Sequence[bool], vals: Sequence[Any]) -> tuple[list, list[bool]]:
        args = tree_unflatten(self.in_tree, list(vals))
        batched = tree_unflatten(self.in_tree, list(in_batched))
        out, out_batched = self.rule(axis_size, list(batched), *args)
        flat_out, tree = tree_flatten(out)
        flat_batched, batched_tree = tree_flatten(out_batched)
        name = getattr(self.rule, "__name__", "<unnamed rule>")
        if tree != batched_tree:
            raise ValueError(f"custom_vmap rule {name}: the structure of its output {tree} and of its output "
                             f"batching specification {batched_tree} do not match")
        if tree != self.out_tree:
            raise ValueError(f"custom_vmap rule {name}: its output structure {tree} does not match that of the "
                             f"custom_vmap function {self.out_tree}")
        return flat_out, [bool(b) for b in flat_batched]

    def __repr__(self) -> str:
        return getattr(self.rule, "__name__", "<rule>")


def custom_vmap_call(closed: ClosedJaxpr, args: Sequence[Any], rule, name: str) -> list:
    return custom_vmap_call_p.bind(*args, call_jaxpr=closed, rule=rule, name=name)


def _abstract_eval(*avals, call_jaxpr: ClosedJaxpr, rule, name: str):
    if len(avals) != len(call_jaxpr.in_avals):
        raise TypeError(f"custom_vmap call of {name} takes {len(call_jaxpr.in_avals)} arguments, got {len(avals)}")
    return list(call_jaxpr.out_avals)


abstract_eval_rules[custom_vmap_call_p] = _abstract_eval


def _batch_rule(vals, dims, *, call_jaxpr: ClosedJaxpr, rule, name: str, axis_size: int, axis_name: Any = None):
    in_batched = [d is not batching.not_mapped for d in dims]
    vals = [batching.moveaxis(v, d, 0, axis_size) if b else v for v, d, b in zip(vals, dims, in_batched)]
    outs, out_batched = rule.flat(axis_size, in_batched, vals)
    for k, (o, b, a) in enumerate(zip(outs, out_batched, call_jaxpr.out_avals)):
        expected = (axis_size,) + a.shape if b else a.shape
        if core.get_aval(o).shape != expected:
            raise ValueError(f"custom_vmap rule {rule!r} of {name}: output {k} has shape {core.get_aval(o).shape}, "
                             f"expected {expected} ({'batched' if b else 'not batched'}, as its batching "
                             "specification says)")
    return outs, [0 if b else batching.not_mapped for b in out_batched]


_batch_rule.needs_axis = True
batching.primitive_batchers[custom_vmap_call_p] = _batch_rule


class JVPRule:
    """The batching rule of a custom_vmap call's tangent program: the JVP of the user's rule.

    Operands are (primals..., nonzero tangents...); a primal and its tangent are batched together (the unbatched
    one of a pair is broadcast), and the tangent outputs are batched as the rule says the outputs are.
    """

    __slots__ = ("rule", "nonzeros")

    def __init__(self, rule: VmapRule, nonzeros: tuple):
        self.rule, self.nonzeros = rule, nonzeros

    def flat(self, axis_size: int, in_batched: Sequence[bool], vals: Sequence[Any]) -> tuple[list, list[bool]]:
        n = len(self.nonzeros)
        primals, p_batched = list(vals[:n]), list(in_batched[:n])
        nz_vals, nz_batched = iter(vals[n:]), iter(in_batched[n:])
        tangents: list = []
        t_batched: list = []
        for p, nz in zip(primals, self.nonzeros):
            if nz:
                tangents.append(next(nz_vals))
                t_batched.append(next(nz_batched))
            else:
                tangents.append(Zero(ad.tangent_aval(core.get_aval(p))))
                t_batched.append(False)
        batched = [pb or tb for pb, tb in zip(p_batched, t_batched)]
        for i, (b, pb, tb) in enumerate(zip(batched, p_batched, t_batched)):
            if b and not pb:
                primals[i] = batching.moveaxis(primals[i], None, 0, axis_size)
            if type(tangents[i]) is Zero:  # (re)typed like its primal, which may just have gained the batch axis
                tangents[i] = Zero(ad.tangent_aval(core.get_aval(primals[i])))
            elif b and not tb:
                tangents[i] = batching.moveaxis(tangents[i], None, 0, axis_size)
        box: list = []

        def primal_rule(*ps):
            outs, out_batched = self.rule.flat(axis_size, batched, ps)
            box.append(out_batched)
            return outs

        _, t_out = ad.jvp_flat(primal_rule, primals, tangents)
        return [ad.instantiate_zeros(t) for t in t_out], box[0]

    def __repr__(self) -> str:
        return f"jvp({self.rule!r})"


def _tangent_program(closed: ClosedJaxpr, nonzeros: tuple) -> ClosedJaxpr:
    """(primals..., nonzero tangents...) -> tangent outputs of the program's JVP (the primal outputs dropped)."""
    jvp, _ = ad.jvp_jaxpr(closed, nonzeros, True)
    n_out = len(closed.out_avals)
    jaxpr, consts, _ = pe.trace_to_jaxpr(lambda *a: core.eval_jaxpr(jvp.jaxpr, jvp.consts, *a)[n_out:],
                                         jvp.in_avals)
    return ClosedJaxpr(pe.dce_jaxpr(jaxpr), consts)


def _jvp(primals, tangents, *, call_jaxpr: ClosedJaxpr, rule, name: str):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    primal_out = custom_vmap_call(call_jaxpr, primals, rule, name)
    if not any(nonzeros):
        return primal_out, [Zero(ad.tangent_aval(a)) for a in call_jaxpr.out_avals]
    tangent_program = memoized(call_jaxpr, ("custom_vmap_jvp", nonzeros),
                               lambda: _tangent_program(call_jaxpr, nonzeros))
    nz = [t for t in tangents if type(t) is not Zero]
    tangent_out = custom_vmap_call(tangent_program, [*primals, *nz], JVPRule(rule, nonzeros), f"jvp({name})")
    return primal_out, tangent_out


ad.primitive_jvps[custom_vmap_call_p] = _jvp
