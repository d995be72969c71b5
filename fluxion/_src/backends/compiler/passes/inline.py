"""Inlining of nested calls: `jit` calls, custom-derivative calls, and `cond`s whose branch index is a known
constant.

A jitted function called inside another jitted function is a `jit` equation carrying its program; once a program is
staged for execution its custom JVP/VJP rules are no longer needed either (the compiled jaxpr is never
differentiated again), so `jit`, `custom_jvp_call` and `custom_vjp_call` equations are replaced by the equations of
the program they call. Inlining exposes those equations to every other pass (fusion, CSE, folding) and leaves the
executable flat.
"""

from __future__ import annotations

import numpy as np

from ....core import ClosedJaxpr, Jaxpr, Literal, Var
from ....interpreters.custom import custom_jvp_call_p, custom_vjp_call_p
from ....lax.call import jit_p
from ....lax.checkpoint import checkpoint_p
from ....lax.custom_batching import custom_vmap_call_p
from ....lax.control_flow import cond_p
from .. import ir

# Call-like primitives -> the parameter holding the program applied to all of the equation's operands.
# (A `checkpoint` call only matters to reverse mode, which a staged program is past.)
CALL_PRIMITIVES = {jit_p: "jaxpr", checkpoint_p: "jaxpr", custom_jvp_call_p: "call_jaxpr", custom_vjp_call_p: "call_jaxpr",
                   custom_vmap_call_p: "call_jaxpr"}  # (its batching rule, like the custom derivatives, is past too)


def _branch_index(eqn, known: dict) -> int | None:
    idx = eqn.invars[0]
    if type(idx) is Literal:
        raw = ir.literal_value(idx)
    else:
        raw = known.get(idx)
        if raw is None:
            return None
    n = len(eqn.params["branches"])
    return int(np.clip(int(np.asarray(raw)), 0, n - 1))


def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Replaces call equations (and constant-index `cond`s) by the equations of the jaxpr they call, recursively.

    Args:
      closed: the program.

    Returns:
      An equivalent closed jaxpr with no `jit`/`custom_jvp_call`/`custom_vjp_call` equations at any nesting level;
      the callee's constants become constants of the result.
    """
    j = closed.jaxpr
    known = {v: getattr(c, "_value", c) for v, c in zip(j.constvars, closed.consts) if np.ndim(getattr(c, "_value", c)) == 0}
    constvars, consts = list(j.constvars), list(closed.consts)
    ren = ir.Renamer()
    eqns: list = []
    changed = False

    def splice(callee: ClosedJaxpr, operands: list, outvars: list) -> None:
        callee = inline_calls(callee)
        env: dict = {}
        for v, c in zip(callee.jaxpr.constvars, callee.consts):
            nv = Var(v.aval)
            constvars.append(nv)
            consts.append(c)
            env[v] = nv
        for v, a in zip(callee.jaxpr.invars, operands):
            env[v] = a

        def read(v):
            return v if type(v) is Literal else env[v]

        for e in callee.jaxpr.eqns:
            new_outs = [Var(v.aval, v.suffix) for v in e.outvars]
            env.update(zip(e.outvars, new_outs))
            eqns.append(e._replace(invars=[read(v) for v in e.invars], outvars=new_outs))
        for old, new in zip(outvars, callee.jaxpr.outvars):
            ren.set(old, read(new))

    for eqn in j.eqns:
        eqn = ren.eqn(eqn)
        param = CALL_PRIMITIVES.get(eqn.primitive)
        if param is not None:
            splice(eqn.params[param], list(eqn.invars), eqn.outvars)
            changed = True
            continue
        if eqn.primitive is cond_p:
            i = _branch_index(eqn, known)
            if i is not None:
                splice(eqn.params["branches"][i], list(eqn.invars[1:]), eqn.outvars)
                changed = True
                continue
        new_params = ir.map_sub_jaxprs(eqn.params, inline_calls)
        if new_params is not eqn.params:
            eqn = eqn._replace(params=new_params)
            changed = True
        eqns.append(eqn)
    if not changed:
        return closed
    return ClosedJaxpr(Jaxpr(constvars, j.invars, ren.outvars(j.outvars), eqns), consts)
