"""Common subexpression elimination: an equation identical to an earlier one (same primitive, operands and
parameters) reuses the earlier results.

Reverse-mode programs recompute many values (`jnp.std` computes the mean `jnp.mean` already computed, the
backward pass re-derives broadcasts of the forward pass); CSE removes them. Parameters are compared by value where
they are hashable and by identity otherwise (sub-jaxprs, arrays held as parameters, callables).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core import ClosedJaxpr, Jaxpr, Literal
from ....lax.elementwise import add_p, and_p, eq_p, max_p, min_p, mul_p, ne_p, or_p, xor_p
from .. import ir


def _freeze(value: Any) -> Any:
    """A hashable key for a parameter value that is equal exactly when the values are interchangeable."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_freeze(x) for x in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, (ClosedJaxpr, Jaxpr)):
        return ("id", id(value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    if isinstance(value, float) and value != value:  # NaN parameters: compare by bit pattern
        return ("nan", np.float64(value).tobytes())
    return (type(value), value)


def _atom_key(v: Any) -> Any:
    if type(v) is Literal:
        raw = np.asarray(ir.literal_value(v))
        return ("lit", raw.dtype.str, raw.tobytes())
    return v


# Operand order does not matter for these: `mul a b` and `mul b a` are one computation.
COMMUTATIVE = frozenset({add_p, mul_p, max_p, min_p, and_p, or_p, xor_p, eq_p, ne_p})


def _eqn_key(eqn) -> Any:
    params = eqn.params
    pkey = tuple(sorted((k, _freeze(v)) for k, v in params.items())) if params else ()
    ins = tuple(_atom_key(v) for v in eqn.invars)
    if eqn.primitive in COMMUTATIVE:
        ins = tuple(sorted(ins, key=lambda a: (1, a) if isinstance(a, tuple) else (0, id(a))))
    return (eqn.primitive, ins, pkey, tuple((v.aval.shape, v.aval.dtype) for v in eqn.outvars))


def _cse_sub(closed: ClosedJaxpr) -> ClosedJaxpr:
    return cse(closed)


def cse(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Merges duplicate equations (recursively inside sub-jaxprs).

    Args:
      closed: the program.

    Returns:
      The program in which no two equations compute the same thing; later duplicates read the first results.
    """
    j = closed.jaxpr
    ren = ir.Renamer()
    seen: dict = {}
    eqns: list = []
    changed = False
    for eqn in j.eqns:
        eqn = ren.eqn(eqn)
        new_params = ir.map_sub_jaxprs(eqn.params, _cse_sub)
        if new_params is not eqn.params:
            eqn = eqn._replace(params=new_params)
            changed = True
        if ir.is_effectful(eqn):
            eqns.append(eqn)
            continue
        key = _eqn_key(eqn)
        try:
            prev = seen.get(key)
        except Exception:  # a parameter whose hash is fine but whose equality is not (e.g. holds arrays)
            eqns.append(eqn)
            continue
        if prev is not None:
            for old, new in zip(eqn.outvars, prev.outvars):
                ren.set(old, new)
            changed = True
            continue
        seen[key] = eqn
        eqns.append(eqn)
    outvars = ren.outvars(j.outvars)
    if not changed and all(a is b for a, b in zip(outvars, j.outvars)):
        return closed
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, outvars, eqns), closed.consts)
