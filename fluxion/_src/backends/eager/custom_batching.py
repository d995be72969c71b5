"""Implementation of `custom_vmap_call` (run the function's program: the user's rule only matters to `vmap`)."""

from __future__ import annotations

from ...lax.custom_batching import custom_vmap_call_p
from . import call_closed_jaxpr, register_impl


def _custom_vmap_call(*args, call_jaxpr, rule, name):
    return call_closed_jaxpr(call_jaxpr, args)


register_impl(custom_vmap_call_p, _custom_vmap_call)
