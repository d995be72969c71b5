"""Implementation of `custom_linear_solve`: run the solve program on the right-hand side (the other three programs
exist only for the derivative rules)."""

from __future__ import annotations

from ...lax.linear_solve import _Four, _split, linear_solve_p
from . import call_closed_jaxpr, register_impl


def _linear_solve(*args, const_lengths, jaxprs):
    consts, b = _split(args, const_lengths)
    return call_closed_jaxpr(_Four(*jaxprs).solve, list(consts.solve) + b)


register_impl(linear_solve_p, _linear_solve)
