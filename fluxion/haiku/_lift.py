"""`hk.lift`: run an inner transformed `init` inside an outer transform and keep its parameters.

During the outer `init`, the inner `init` runs and its parameter bundles are stored in the outer parameters under
`<lift module name>/<inner bundle>` (e.g. `inner/linear`); during the outer `apply` the lifted function returns
those bundles (prefix removed), ready to pass to the inner `apply`.
"""

from __future__ import annotations

from typing import Any, Callable

from . import _frame
from ._base import running_init
from ._module import Module

__all__ = ["lift"]


class _LiftingModule(Module):
    """Owns the name under which the inner parameters are stored."""

    def __init__(self, init_fn: Callable[..., Any], allow_reuse: bool, name: str):
        super().__init__(name=name)
        self._init_fn = init_fn
        self._allow_reuse = allow_reuse

    def __call__(self, *args, **kwargs):
        frame = _frame.current_frame("lift")
        prefix = self.module_name + "/"
        if not running_init():
            return {b[len(prefix):]: dict(v) for b, v in frame.params.items() if b.startswith(prefix)}
        with _frame.allow_nested_init(frame):
            inner = self._init_fn(*args, **kwargs)
        if isinstance(inner, tuple):
            raise ValueError("hk.lift expects an `init` that returns params only (from `hk.transform`); got a "
                             "tuple, as returned by `hk.transform_with_state(...).init`.")
        for bundle, values in inner.items():
            key = prefix + bundle
            if key in frame.params and not self._allow_reuse:
                raise ValueError(f"Key '{key}' already exists in the destination params. To prevent accidental "
                                 "parameter re-use during lift, you can't re-use a parameter already defined in "
                                 "the outer scope. Pass allow_reuse=True to hk.lift to allow it.")
            frame.params[key] = dict(values)
        return inner


def lift(init_fn: Callable[..., Any], *, allow_reuse: bool = False, name: str = "lifted") -> Callable[..., Any]:
    """Registers the parameters of an inner `init` with the enclosing transform.

    Usage inside a transformed function::

        params = hk.lift(inner.init, name="inner")(hk.maybe_next_rng_key(), x)
        y = inner.apply(params, None, x)

    Args:
        init_fn: the `init` of an inner `hk.transform` (returning params).
        allow_reuse: allow lifting into bundle names that already exist.
        name: the name of the lifting module (the prefix of the lifted bundles).

    Returns:
        A function with the signature of `init_fn` returning the inner params (created during the outer `init`,
        read back from the outer params during `apply`).

    Raises:
        ValueError: outside a transform; a lifted bundle name already exists and `allow_reuse` is False.
    """
    _frame.assert_context("lift")
    module = _LiftingModule(init_fn, allow_reuse=allow_reuse, name=name)
    return lambda *args, **kwargs: module(*args, **kwargs)
