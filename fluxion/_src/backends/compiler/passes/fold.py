"""Constant folding: equations whose operands are all known at compile time are evaluated once, at compile time.

Known values are literals and the closed jaxpr's constants. Results become literals (scalars) or new constants
(small arrays); results larger than `FOLD_MAX_ELEMENTS` are left to run time, so folding never turns a cheap
broadcast into a large stored constant. Folding uses the backend's own implementations, so folded values are
bit-identical to what the program would compute.
"""

from __future__ import annotations

import numpy as np

from ....core import ClosedJaxpr, Jaxpr, Literal, Var
from .. import ir

# Larger results are computed at run time (a stored constant costs memory and loses broadcasting views).
FOLD_MAX_ELEMENTS = 1 << 14


def _raw(c):
    return getattr(c, "_value", c)


def fold_constants(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Evaluates equations with known operands at compile time (recursively inside sub-jaxprs).

    Args:
      closed: the program.

    Returns:
      The program with folded equations removed; their results are literals or new constants.
    """
    j = closed.jaxpr
    known: dict = {v: _raw(c) for v, c in zip(j.constvars, closed.consts)}
    constvars, consts = list(j.constvars), list(closed.consts)
    ren = ir.Renamer()
    eqns: list = []
    changed = False

    def value_of(v):
        if type(v) is Literal:
            return ir.literal_value(v)
        return known.get(v, _MISSING)

    for eqn in j.eqns:
        eqn = ren.eqn(eqn)
        if ir.has_sub_jaxprs(eqn):
            new_params = ir.map_sub_jaxprs(eqn.params, fold_constants)
            if new_params is not eqn.params:
                eqn = eqn._replace(params=new_params)
                changed = True
            eqns.append(eqn)
            continue
        vals = [value_of(v) for v in eqn.invars]
        impl = eqn.primitive.impl
        small = all(ir.size(v) <= FOLD_MAX_ELEMENTS for v in eqn.outvars)
        if impl is None or ir.is_effectful(eqn) or not small or any(x is _MISSING for x in vals):
            eqns.append(eqn)
            continue
        try:
            with np.errstate(all="ignore"):
                out = impl(*vals, **eqn.params)
        except Exception:  # noqa: BLE001 -- a primitive that refuses these values is left for run time
            eqns.append(eqn)
            continue
        outs = out if eqn.primitive.multiple_results else [out]
        if not all(np.shape(o) == v.aval.shape and np.asarray(o).dtype == v.aval.dtype
                   for o, v in zip(outs, eqn.outvars)):
            eqns.append(eqn)
            continue
        for v, o in zip(eqn.outvars, outs):
            if v.aval.shape == ():
                ren.set(v, ir.make_literal(o, v.aval))
            else:
                nv = Var(v.aval)
                o = np.array(o, copy=True)  # own the buffer: impls may return views of their operands
                o.flags.writeable = False
                constvars.append(nv)
                consts.append(o)
                known[nv] = o
                ren.set(v, nv)
            known[v] = o
        changed = True
    outvars = ren.outvars(j.outvars)
    if not changed:
        return closed
    return ir.prune_constvars(ClosedJaxpr(Jaxpr(constvars, j.invars, outvars, eqns), consts))


class _Missing:
    __repr__ = lambda self: "<unknown>"  # noqa: E731


_MISSING = _Missing()
