"""NumPy-side evaluation of the control-flow primitives: `cond`, `while` and `scan` run their bodies' jaxprs on raw
buffers with the backend's jaxpr interpreter (the compiler generates Python loops for them instead)."""

from __future__ import annotations

import numpy as np

from ...lax import control_flow as cf
from . import call_closed_jaxpr, register_impl


def cond(index, *ops, branches):
    # The index is clamped into range, as XLA does for an out-of-range switch index.
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return call_closed_jaxpr(branches[i], list(ops))


register_impl(cf.cond_p, cond)


def while_loop(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc = list(args[:cond_nconsts])
    bc = list(args[cond_nconsts:cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts:])
    while bool(call_closed_jaxpr(cond_jaxpr, cc + carry)[0]):
        carry = call_closed_jaxpr(body_jaxpr, bc + carry)
    return carry


register_impl(cf.while_p, while_loop)


def scan(*args, jaxpr, num_consts, num_carry, length, reverse, unroll=1):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = args[num_consts + num_carry:]
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in y_avals]
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        outs = call_closed_jaxpr(jaxpr, consts + carry + [x[i] for x in xs])
        carry = outs[:num_carry]
        for buf, y in zip(ys, outs[num_carry:]):
            buf[i] = y
    return carry + ys


register_impl(cf.scan_p, scan)


def const(*, value):
    """The constant array an equation of the private `const` primitive carries (see `lax.control_flow`)."""
    return value.value


register_impl(cf.const_p, const)
