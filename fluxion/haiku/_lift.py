"""`hk.lift` and friends: run an inner transformed `init` inside an outer transform and keep its parameters.

During the outer `init`, the inner `init` runs and its parameter (and state) bundles are stored in the outer
trees under `<lift module name>/<inner bundle>` (e.g. `lifted/linear`); during the outer `apply` the lifted
function returns those bundles (prefix removed), ready to pass to the inner `apply`. The transparent variants use
the enclosing module's name as the prefix (no prefix at top level), so the inner bundles keep their own names.

`lift_with_state` also returns a `LiftWithStateUpdater`: the inner `apply`'s new state must be handed back with
`updater.update(state)` (or explicitly dropped with `ignore_update()`) before the outer `init`/`apply` ends.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from . import _frame
from ._base import INTERCEPTORS, current_name, push_onto, running_init
from ._frame import NonEmptyStateError, StatePair
from ._module import Module

__all__ = ["lift", "transparent_lift", "lift_with_state", "transparent_lift_with_state", "LiftWithStateUpdater"]


def _pack(src: Mapping, dst: dict, prefix: str, *, state: bool, check_reuse: bool) -> None:
    for bundle, values in src.items():
        key = f"{prefix}/{bundle}" if prefix else bundle
        if check_reuse and key in dst:
            raise ValueError(f"Key '{key}' already exists in the destination params. To prevent accidental "
                             "parameter re-use during lift, you can't re-use a parameter already defined in the "
                             "outer scope. Pass allow_reuse=True to hk.lift to allow it.")
        values = {k: StatePair(v, v) for k, v in values.items()} if state else dict(values)
        dst.setdefault(key, {}).update(values)


def _unpack(src: Mapping, prefix: str) -> dict:
    return {b[len(prefix):]: dict(v) for b, v in src.items() if b.startswith(prefix)}


class _LiftingModule(Module):
    """Owns the name under which the inner parameters and state are stored."""

    def __init__(self, init_fn: Callable[..., Any], transparent: bool = False, allow_reuse: bool = False,
                 name: str = "lifted"):
        super().__init__(name=name)
        self._init_fn = init_fn
        self._allow_reuse = allow_reuse
        self.prefix_name = "/".join(self.module_name.split("/")[:-1]) if transparent else self.module_name

    def __call__(self, *args, **kwargs) -> tuple[dict, dict]:
        frame = _frame.current_frame("lift")
        if running_init():
            with _frame.allow_nested_init(frame), push_onto(INTERCEPTORS.lift_prefixes, self.prefix_name):
                params, state = self._init_fn(*args, **kwargs)
            _pack(params, frame.params, self.prefix_name, state=False, check_reuse=not self._allow_reuse)
            _pack(state, frame.state, self.prefix_name, state=True, check_reuse=not self._allow_reuse)
            return params, state
        prefix = f"{self.prefix_name}/" if self.prefix_name else ""
        state = {b: {k: pair.current for k, pair in v.items()} for b, v in _unpack(frame.state, prefix).items()}
        return _unpack(frame.params, prefix), state


def _params_only(init_fn: Callable[..., Any]) -> Callable[..., tuple[dict, dict]]:
    def wrapped(*args, **kwargs):
        params = init_fn(*args, **kwargs)
        if not isinstance(params, Mapping):
            raise NonEmptyStateError("For stateful lifted functions use `hk.lift_with_state`")
        return params, {}
    return wrapped


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
        NonEmptyStateError: `init_fn` returns `(params, state)` (use `lift_with_state`).
    """
    _frame.assert_context("lift")
    module = _LiftingModule(_params_only(init_fn), allow_reuse=allow_reuse, name=name)
    return lambda *args, **kwargs: module(*args, **kwargs)[0]


def transparent_lift(init_fn: Callable[..., Any], *, allow_reuse: bool = False) -> Callable[..., Any]:
    """`lift` without a name of its own: the inner bundles are stored under the enclosing module's name (as is at
    top level), e.g. so that a checkpoint of the inner network loads unchanged.

    Raises:
        ValueError: outside a transform; an inner bundle name already exists and `allow_reuse` is False.
    """
    _frame.assert_context("transparent_lift")
    module = _LiftingModule(_params_only(init_fn), transparent=True, allow_reuse=allow_reuse)
    return lambda *args, **kwargs: module(*args, **kwargs)[0]


class LiftWithStateUpdater:
    """Hands the inner `apply`'s new state back to the outer transform; use it exactly once per outer call."""

    __slots__ = ("_used", "_name", "_frame")

    def __init__(self, name: str | None):
        self._used = False
        self._name = name
        self._frame = _frame.current_frame("lift_with_state")
        self._frame.teardown_callbacks.append(self._assert_used)

    def _assert_used(self) -> None:
        if not self._used:
            raise ValueError("LiftWithStateUpdater (from `lift_with_state`) must be used, call `.update(..)` or "
                             "`.ignore_update()` before it goes out of scope.")

    def _use(self) -> None:
        if self._used:
            raise ValueError("State updater must only be used once.")
        if not _frame.inside_transform():
            raise ValueError("State updater must be used inside hk.transform_with_state.")
        if _frame.current_frame() is not self._frame:
            raise ValueError("State updater must be used within the same call to init/apply.")
        self._used = True

    def ignore_update(self) -> None:
        """Keeps the lifted state as it is."""
        self._use()

    def update(self, state: Mapping) -> None:
        """Sets the lifted state to `state` (`{inner bundle: {name: value}}`, as returned by the inner apply)."""
        self._use()
        frame = _frame.current_frame()
        for bundle, values in state.items():
            key = f"{self._name}/{bundle}" if self._name is not None else bundle
            target = frame.state.setdefault(key, {})
            for name, value in values.items():
                target[name] = StatePair(target[name].initial if name in target else value, value)


def lift_with_state(init_fn: Callable[..., Any], *, allow_reuse: bool = False,
                    name: str = "lifted") -> tuple[Callable[..., Any], LiftWithStateUpdater]:
    """`lift` for an inner `transform_with_state`: returns `(params_and_state_fn, updater)`.

    `params_and_state_fn(*init_args)` returns the inner `(params, state)`; after running the inner `apply`, call
    `updater.update(new_state)` (or `updater.ignore_update()`).

    Raises:
        ValueError: outside a transform; bundle reuse without `allow_reuse`; the updater left unused when the
            outer `init`/`apply` returns.
    """
    _frame.assert_context("lift_with_state")
    module = _LiftingModule(init_fn, allow_reuse=allow_reuse, name=name)
    if _frame.current_frame().module_stack:
        name = f"{current_name()}/{name}"
    return (lambda *args, **kwargs: module(*args, **kwargs)), LiftWithStateUpdater(name)


def transparent_lift_with_state(init_fn: Callable[..., Any], *,
                                allow_reuse: bool = False) -> tuple[Callable[..., Any], LiftWithStateUpdater]:
    """`lift_with_state` storing the inner bundles under the enclosing module's name (see `transparent_lift`)."""
    _frame.assert_context("lift_with_state")
    module = _LiftingModule(init_fn, transparent=True, allow_reuse=allow_reuse)
    name = current_name() if _frame.current_frame().module_stack else None
    return (lambda *args, **kwargs: module(*args, **kwargs)), LiftWithStateUpdater(name)
