"""Custom batching rules, the public API (`jax.custom_batching`): `custom_vmap` and `sequential_vmap`.

A `custom_vmap` function traces its body once per signature to a program and binds `custom_vmap_call_p`
(fluxion/_src/lax/custom_batching.py, where the rules are) with that program and the user's rule.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from . import core
from .api_util import as_value
from .custom_derivatives import forward_attr
from .interpreters import partial_eval as pe
from .lax.control_flow import map as lax_map
from .lax.custom_batching import VmapRule, custom_vmap_call
from .tree_util import tree_flatten, tree_map, tree_unflatten


class custom_vmap:
    """Gives `fun` its own rule under `vmap` (mirrors `jax.custom_batching.custom_vmap`).

    Define the rule with `@f.def_vmap`: `rule(axis_size, in_batched, *args) -> (out, out_batched)`, where
    `in_batched` is a list with one pytree of bools per positional argument (True: that leaf carries the batch as
    its leading axis, of length `axis_size`), `args` are the arguments (batched leaves with the batch axis first),
    `out` is the batched result (the structure of `fun`'s output) and `out_batched` a pytree of bools with `out`'s
    structure saying which results carry the batch axis.

    Outside `vmap` (eagerly, under `jit`, `grad`, ...) `fun` itself runs. Under `jvp` the rule is differentiated, so
    `vmap(jvp(f))` batches with the rule's derivative. Reverse mode (`grad`, `vjp`) raises `ValueError`, as in JAX:
    wrap the function in `custom_vjp` (on the outside) to give it one.

    Raises:
      AttributeError: the function is called before `def_vmap` gave it a rule.
      TypeError: the arguments cannot be bound to `fun`'s positional parameters.
      ValueError: the rule's output structure or shapes disagree with `fun`'s or with `out_batched`.
    """

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    __getattr__ = forward_attr

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Sets the batching rule; returns it unchanged (so it can be used as a decorator)."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "<function>")
        if kwargs:
            try:
                bound = inspect.signature(self.fun).bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"custom_vmap: the arguments of {name} could not be resolved to positional "
                                f"arguments: {e}") from e
            bound.apply_defaults()
            if bound.kwargs:
                raise TypeError(f"custom_vmap: {name} takes keyword-only arguments {sorted(bound.kwargs)}, which "
                                "custom_vmap functions do not support")
            args = bound.args
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} using def_vmap.")
        flat, in_tree = tree_flatten(tuple(args))
        flat = [as_value(x) for x in flat]
        box: list = []

        def flat_fun(*xs):
            out = self.fun(*tree_unflatten(in_tree, list(xs)))
            outs, out_tree = tree_flatten(out)
            box.append(out_tree)
            return [as_value(o) for o in outs]

        jaxpr, consts, _ = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat])
        if any(isinstance(c, core.Tracer) for c in consts):
            raise TypeError(f"custom_vmap: {name} closes over values traced by an enclosing transformation; pass "
                            "them as arguments instead")
        closed = core.ClosedJaxpr(jaxpr, consts)
        outs = custom_vmap_call(closed, flat, VmapRule(self.vmap_rule, in_tree, box[0]), name)
        return tree_unflatten(box[0], outs)


def sequential_vmap(f: Callable) -> custom_vmap:
    """`f` as a `custom_vmap` whose rule calls it once per batch element, in order (a `lax.map` over the batched
    arguments; unbatched ones are passed whole to every call), for functions that cannot handle a batch axis --
    e.g. ones calling out to Python (mirrors `jax.custom_batching.sequential_vmap`)."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        flat_batched, tree = tree_flatten(list(in_batched))  # one bool per leaf of the arguments
        flat_args = tree_flatten(list(args))[0]
        mapped = [a for a, b in zip(flat_args, flat_batched) if b]

        def one(xs):
            it = iter(xs)
            full = [next(it) if b else a for a, b in zip(flat_args, flat_batched)]
            return f(*tree_unflatten(tree, full))

        out = lax_map(one, mapped)
        return out, tree_map(lambda _: True, out)

    return f
