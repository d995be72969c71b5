"""Dead code elimination: equations whose results nobody reads are dropped (unless it has side effects: a callback).

Works inside sub-jaxprs too, without changing their signatures: a `scan` body keeps all of its outputs, but the
equations computing nothing it returns disappear. `scan` outputs (stacked `ys`) that the enclosing program never
reads are removed from the body and the equation, which is where reverse-mode programs carry dead residuals.
"""

from __future__ import annotations

from ....core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from ....lax.control_flow import scan_p
from .. import ir


def _dce_sub(closed: ClosedJaxpr) -> ClosedJaxpr:
    return dce(closed)


def _prune_scan_ys(eqn: JaxprEqn, live: set) -> JaxprEqn:
    """Drops the stacked outputs of a scan that are dead, with the body outputs producing them."""
    p = eqn.params
    num_carry = p["num_carry"]
    ys = eqn.outvars[num_carry:]
    keep = [v in live for v in ys]
    if all(keep):
        return eqn
    body: ClosedJaxpr = p["jaxpr"]
    bj = body.jaxpr
    outs = bj.outvars[:num_carry] + [v for v, k in zip(bj.outvars[num_carry:], keep) if k]
    new_body = ClosedJaxpr(Jaxpr(bj.constvars, bj.invars, outs, bj.eqns), body.consts)
    new_outvars = eqn.outvars[:num_carry] + [v for v, k in zip(ys, keep) if k]
    return eqn._replace(outvars=new_outvars, params=dict(p, jaxpr=new_body))


def dce(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Removes dead equations (recursively in sub-jaxprs) and unused constants.

    Args:
      closed: the program.

    Returns:
      The program without equations whose outputs are never read, unless they have side effects
      (`core.eqn_has_effects`).
    """
    j = closed.jaxpr
    live = {v for v in j.outvars if type(v) is Var}
    kept: list = []
    changed = False
    for eqn in reversed(j.eqns):
        if not any(v in live for v in eqn.outvars) and not ir.is_effectful(eqn):
            changed = True
            continue
        if eqn.primitive is scan_p:
            pruned = _prune_scan_ys(eqn, live)
            changed |= pruned is not eqn
            eqn = pruned
        new_params = ir.map_sub_jaxprs(eqn.params, _dce_sub)
        if new_params is not eqn.params:
            eqn = eqn._replace(params=new_params)
            changed = True
        kept.append(eqn)
        live.update(v for v in eqn.invars if type(v) is not Literal)
    if not changed:
        return ir.prune_constvars(closed)
    kept.reverse()
    return ir.prune_constvars(ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, kept), closed.consts))
