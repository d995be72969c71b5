"""`checkpoint` / `remat`, `checkpoint_policies`, `checkpoint_name` and `print_saved_residuals` (mirror
`jax.checkpoint` and `jax.ad_checkpoint`). The primitive and its rules are in `lax/checkpoint.py`."""

from __future__ import annotations

import functools
import inspect
from types import SimpleNamespace
from typing import Callable, Sequence

from . import core
from .api_util import as_value
from .interpreters import ad
from .interpreters import partial_eval as pe
from .lax.checkpoint import checkpoint_call, checkpoint_name, name_p, policy_is_callable
from .lax.reductions import dot_general_p
from .tree_util import tree_flatten, tree_unflatten


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable:
    """`fun` with rematerialization: reverse mode recomputes its intermediates instead of storing them.

    Values and derivatives are those of `fun`; what changes is memory: between the forward and the backward pass
    only `fun`'s inputs (and the values `policy` saves) are kept, and the backward pass recomputes the rest.

    Args:
      fun: the function (positional pytree arguments, pytree result). Usable as a decorator with or without
        keyword arguments.
      prevent_cse: accepted as in JAX; fluxion never merges the recomputation with the forward computation while the
        program is being differentiated.
      policy: which intermediates to save (see `checkpoint_policies`); None saves none.
      static_argnums: positional arguments that are Python values, not arrays (fixed during tracing).

    Raises:
      TypeError: `policy` is not callable.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> f = fluxion.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
      >>> fluxion.grad(f)(0.0)
      Array(1., dtype=float32, weak_type=True)
    """
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)
    policy = policy_is_callable(policy)
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def remat_fun(*args):
        n = len(args)
        static = {i % n: args[i] for i in statics} if n else {}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten(dyn)
        leaves = [as_value(x) for x in leaves]
        out_tree_box = []

        def flat_fun(*flat):
            it = iter(tree_unflatten(in_tree, list(flat)))
            full = [static[i] if i in static else next(it) for i in range(n)]
            out_leaves, out_tree = tree_flatten(fun(*full))
            out_tree_box.append(out_tree)
            return out_leaves

        closed, consts, _ = pe.trace_to_subjaxpr(flat_fun, [core.get_aval(x) for x in leaves])
        outs = checkpoint_call(closed, [*consts, *leaves], prevent_cse=prevent_cse, policy=policy)
        return tree_unflatten(out_tree_box[0], list(outs))

    return remat_fun


remat = checkpoint


# --------------------------------------------------------------------------------------------------------------
# Policies: (primitive, *avals, **params) -> save its outputs?
# --------------------------------------------------------------------------------------------------------------

def everything_saveable(prim, *avals, **params) -> bool:
    """Save every intermediate (no recomputation: like not checkpointing)."""
    return True


def nothing_saveable(prim, *avals, **params) -> bool:
    """Save nothing: recompute every intermediate (the default)."""
    return False


def dots_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix products (`dot_general`), recompute everything else."""
    return prim is dot_general_p


def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix products without batch dimensions."""
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, _) = params["dimension_numbers"]
    return not lhs_batch


def save_only_these_names(*names: str) -> Callable:
    """Save only the values tagged by `checkpoint_name` with one of `names`."""
    names = frozenset(names)
    return lambda prim, *avals, **params: prim is name_p and params["name"] in names


def save_any_names_but_these(*names: str) -> Callable:
    """Save every value tagged by `checkpoint_name` except those named `names`."""
    names = frozenset(names)
    return lambda prim, *avals, **params: prim is name_p and params["name"] not in names


def save_anything_except_these_names(*names: str) -> Callable:
    """Save everything except the values tagged with one of `names`."""
    names = frozenset(names)
    return lambda prim, *avals, **params: not (prim is name_p and params["name"] in names)


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """Save what either policy saves."""
    return lambda prim, *avals, **params: policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params)


checkpoint_policies = SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_anything_except_these_names,
    save_from_both_policies=save_from_both_policies,
)


# --------------------------------------------------------------------------------------------------------------
# print_saved_residuals
# --------------------------------------------------------------------------------------------------------------

def saved_residuals(f: Callable, *args) -> list[tuple[core.ShapedArray, str]]:
    """The values reverse mode keeps between the forward and the backward pass of `f` at `args`: (abstract value,
    where it comes from) pairs, as `jax.ad_checkpoint.saved_residuals` reports them (without source lines)."""
    leaves, in_tree = tree_flatten(args)
    leaves = [as_value(x) for x in leaves]
    try:
        names = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        names = []

    def residuals_of(*flat):
        def g(*xs):
            out, _ = tree_flatten(f(*tree_unflatten(in_tree, list(xs))))
            return out
        _, lin = ad.linearize_flat(g, list(flat))
        return list(lin.consts)

    jaxpr, _, _ = pe.trace_to_jaxpr(residuals_of, [core.get_aval(x).strip_weak_type() for x in leaves])
    producers = {v: e for e in jaxpr.eqns for v in e.outvars}
    arg_of = {v: i for i, v in enumerate(jaxpr.invars)}
    result = []
    # Arguments first, in argument order (as JAX lists them), then the other residuals in order of appearance.
    for v in sorted(jaxpr.outvars, key=lambda v: (v not in arg_of, arg_of.get(v, 0))):
        aval = v.aval
        if v in arg_of:
            i = arg_of[v]
            what = f"from the argument {names[i]}" if i < len(names) and len(leaves) == len(names) else \
                f"from the argument {i}"
        elif v in producers:
            origin = _origin(producers[v], v)
            what = (f"named {origin.params['name']!r}" if origin.primitive is name_p
                    else f"output of {origin.primitive.name}")
        else:
            what = "a constant"
        result.append((aval, what))
    return result


def _origin(eqn, v):
    """The equation that computes `v`, looking through the checkpoint calls that pass saved values out."""
    while eqn.primitive.name == "checkpoint":
        inner = eqn.params["jaxpr"].jaxpr
        out = inner.outvars[eqn.outvars.index(v)]
        found = next((e for e in inner.eqns if out in e.outvars), None)
        if found is None:
            break
        eqn, v = found, out
    return eqn


def print_saved_residuals(f: Callable, *args) -> None:
    """Prints `saved_residuals(f, *args)`, one line per residual (e.g. `f32[3] output of sin`)."""
    for aval, what in saved_residuals(f, *args):
        print(f"{aval.str_short()} {what}")


__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name", "saved_residuals",
           "print_saved_residuals"]
