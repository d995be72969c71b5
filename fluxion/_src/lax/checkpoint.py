"""Rematerialization: `checkpoint_p` calls a program whose intermediate values reverse mode recomputes instead of
storing (mirrors `jax.checkpoint` / `jax.remat`; printed `checkpoint[jaxpr={...} policy=... prevent_cse=...]`).

Reverse mode here is linearize + transpose: the JVP computes primal values and stages a linear tangent program that
reads the primal intermediates it needs as residuals, which stay alive until the backward pass. For a checkpointed
program the JVP rule splits the program's JVP differently from a `jit` call:

* the forward call computes the primal outputs plus only the intermediates the `policy` lets it save (by default
  none);
* the tangent call takes the program's primal *inputs*, those saved values and the tangents, and recomputes every
  other primal intermediate itself before the tangent computation.

So the residuals kept between the forward and the backward pass are the inputs and the saved values only; the
backward pass (the transpose of the tangent call) evaluates the recomputation forward and then transposes the linear
part, exactly as `jax.checkpoint` trades compute for memory.

A policy is a function `(primitive, *avals, **params) -> bool` (True: save the equation's outputs); the standard ones
are in `checkpoint_policies` (fluxion/_src/checkpoint.py). `name_p` tags a value for the name-based policies
(`checkpoint_name`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core import ClosedJaxpr, Jaxpr, Primitive, Var, abstract_eval_rules, param_print_order
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero
from .call import batch_call, memoized, transpose_call
from .utils import standard_primitive


def _checkpoint_weak_types(args: Sequence[Any], params: dict) -> list[bool]:
    return [a.weak_type for a in params["jaxpr"].out_avals]


checkpoint_p = Primitive("checkpoint", multiple_results=True, weak_type=_checkpoint_weak_types)
param_print_order[checkpoint_p] = ("jaxpr", "prevent_cse", "differentiated", "policy")


def checkpoint_call(closed: ClosedJaxpr, args: Sequence[Any], *, prevent_cse: bool = True, policy=None,
                    differentiated: bool = False) -> list:
    """Binds `checkpoint_p`: calls `closed` on `args` with rematerialization in reverse mode."""
    return checkpoint_p.bind(*args, jaxpr=closed, prevent_cse=prevent_cse, differentiated=differentiated,
                             policy=policy)


def _checkpoint_abstract_eval(*avals, jaxpr: ClosedJaxpr, **_):
    if len(avals) != len(jaxpr.in_avals):
        raise TypeError(f"checkpoint call takes {len(jaxpr.in_avals)} arguments, got {len(avals)}")
    return list(jaxpr.out_avals)


abstract_eval_rules[checkpoint_p] = _checkpoint_abstract_eval


class _RematSplit:
    """A program's JVP split into a forward call (primal outputs + saved values) and a tangent call that takes the
    primal inputs, the saved values and the tangents and recomputes the rest."""

    __slots__ = ("forward", "tangent", "out_nonzero", "n_saved")

    def __init__(self, closed: ClosedJaxpr, nonzeros: tuple, policy):
        jvp, self.out_nonzero = ad.jvp_jaxpr(closed, nonzeros, False)
        j = jvp.jaxpr
        n_in, n_out = len(closed.in_avals), len(closed.out_avals)
        primal_in, tangent_in = j.invars[:n_in], j.invars[n_in:]
        primal_out, tangent_out = j.outvars[:n_out], j.outvars[n_out:]
        # Equations that do not depend on a tangent are primal computations: saved if the policy says so, else
        # recomputed by the tangent call.
        tangent_dep = set(tangent_in)
        saved_eqns = []
        for eqn in j.eqns:
            if any(type(v) is Var and v in tangent_dep for v in eqn.invars):
                tangent_dep.update(eqn.outvars)
            elif policy is not None and policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params):
                saved_eqns.append(eqn)
        saved = [v for e in saved_eqns for v in e.outvars]
        dropped = {id(e) for e in saved_eqns}
        rest = [e for e in j.eqns if id(e) not in dropped]
        tangent = pe.dce_jaxpr(Jaxpr(j.constvars, [*primal_in, *saved, *tangent_in], tangent_out, rest))
        used = set(v for e in tangent.eqns for v in e.invars if type(v) is Var) | set(tangent.outvars)
        saved = [v for v in saved if v in used]  # saved values the recomputation does not read are not kept
        tangent = pe.dce_jaxpr(Jaxpr(j.constvars, [*primal_in, *saved, *tangent_in], tangent_out, rest))
        forward = pe.dce_jaxpr(Jaxpr(j.constvars, primal_in, [*primal_out, *saved], j.eqns))
        self.forward = ClosedJaxpr(forward, jvp.consts)
        self.tangent = ClosedJaxpr(tangent, jvp.consts)
        self.n_saved = len(saved)


def _checkpoint_jvp(primals, tangents, *, jaxpr: ClosedJaxpr, prevent_cse, differentiated, policy):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    split = memoized(jaxpr, ("remat_jvp", nonzeros, policy), lambda: _RematSplit(jaxpr, nonzeros, policy))
    n_out = len(jaxpr.out_avals)
    outs = checkpoint_call(split.forward, primals, prevent_cse=prevent_cse, policy=policy, differentiated=True)
    primal_out, saved = outs[:n_out], outs[n_out:]
    nz = [t for t in tangents if type(t) is not Zero]
    it = iter(checkpoint_call(split.tangent, [*primals, *saved, *nz], prevent_cse=prevent_cse, policy=policy,
                              differentiated=True))
    tangent_out = [next(it) if nz_out else Zero(ad.tangent_aval(a))
                   for nz_out, a in zip(split.out_nonzero, jaxpr.out_avals)]
    return primal_out, tangent_out


ad.primitive_jvps[checkpoint_p] = _checkpoint_jvp


def _checkpoint_transpose(cts, *args, jaxpr: ClosedJaxpr, prevent_cse, differentiated, policy):
    # The transposed program starts by recomputing the primal intermediates from the non-linear inputs.
    return transpose_call(jaxpr, cts, args, lambda closed, ops: checkpoint_call(
        closed, ops, prevent_cse=prevent_cse, policy=policy, differentiated=True))


ad.primitive_transposes[checkpoint_p] = _checkpoint_transpose


def _checkpoint_batch_rule(vals, dims, *, jaxpr: ClosedJaxpr, prevent_cse, differentiated, policy,
                           axis_size: int, axis_name: Any = None):
    return batch_call(jaxpr, vals, dims, axis_size, axis_name, lambda closed, ops: checkpoint_call(
        closed, ops, prevent_cse=prevent_cse, policy=policy, differentiated=differentiated))


_checkpoint_batch_rule.needs_axis = True
batching.primitive_batchers[checkpoint_p] = _checkpoint_batch_rule


# --------------------------------------------------------------------------------------------------------------
# name: tag a value for the name-based policies (identity otherwise)
# --------------------------------------------------------------------------------------------------------------

name_p = standard_primitive("name", lambda x, *, name: x, weak_type="first")


def checkpoint_name(x: Any, name: str) -> Any:
    """`x`, tagged with `name` so that `save_only_these_names` and friends can decide whether to save it."""
    return name_p.bind(x, name=str(name))


ad.deflinear(name_p, lambda ct, x, *, name: [ct])


def _name_batch_rule(vals, dims, *, name):
    return name_p.bind(vals[0], name=name), dims[0]


batching.primitive_batchers[name_p] = _name_batch_rule


def policy_is_callable(policy: Callable | None) -> Callable | None:
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be callable (see jax.checkpoint_policies), got {policy!r}")
    return policy
