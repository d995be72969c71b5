"""The transform boundary: implicit Haiku state <-> explicit `params`, `state` and `rng` arguments.

`transform_with_state(f)` is the only place that builds a `Frame` from explicit arguments and reads explicit
results back out of it; `transform`, `without_apply_rng`, `multi_transform` are thin wrappers around it.

As in Haiku, `apply`'s explicit arguments are ordinary parameters: `apply(params, rng, x)` and
`apply(params=p, rng=key, x=x)` are the same call, and a second positional argument that is not a PRNG key, an
int seed or None (e.g. the pre-0.0.3 call `apply(params, x)`) raises Haiku's `ValueError` before `f` runs, whether
or not `f` draws random numbers; `hk.without_apply_rng` removes the `rng` parameter instead.

One deliberate difference from Haiku: calling a transformed function's `init` while another transform is running
raises an error unless it goes through `hk.lift` (Haiku silently drops the inner parameters).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, NamedTuple

from fluxion import tree_util

from . import _frame
from ._prng import PRNGSequence

__all__ = ["Transformed", "TransformedWithState", "MultiTransformed", "MultiTransformedWithState", "transform",
           "transform_with_state", "without_apply_rng", "without_state", "with_empty_state", "multi_transform",
           "multi_transform_with_state"]


class Transformed(NamedTuple):
    """`init(rng, *args, **kwargs) -> params`; `apply(params, rng, *args, **kwargs) -> out`."""

    init: Callable[..., Any]
    apply: Callable[..., Any]


class TransformedWithState(NamedTuple):
    """`init(rng, *a, **k) -> (params, state)`; `apply(params, state, rng, *a, **k) -> (out, state)`."""

    init: Callable[..., Any]
    apply: Callable[..., Any]


class MultiTransformed(NamedTuple):
    """`init` as for `Transformed`; `apply` is a pytree of `apply(params, rng, *a, **k)` functions."""

    init: Callable[..., Any]
    apply: Any


class MultiTransformedWithState(NamedTuple):
    """`init` as for `TransformedWithState`; `apply` is a pytree of `apply(params, state, rng, ...)` functions."""

    init: Callable[..., Any]
    apply: Any


_RNG_ERROR = ("{f} must be called with an RNG as the {position} argument, the required signature is: "
              "`{signature}`")
_INIT_RNG_ERROR = _RNG_ERROR.format(f="Init", position="first", signature="init(rng, *a, **k)")
_APPLY_RNG_ERROR = _RNG_ERROR.format(f="Apply", position="second", signature="apply(params, rng, *a, **k)")
_APPLY_RNG_STATE_ERROR = _RNG_ERROR.format(f="Apply", position="third",
                                           signature="apply(params, state, rng, *a, **k)")
_STATE_ERROR = "If your transformed function uses `hk.{get,set}_state` then use `hk.transform_with_state`."
_NESTED_INIT_ERROR = ("The `init` of a transformed function was called inside another `hk.transform`; the "
                      "parameters it creates would not become part of the outer parameters. Wrap it with "
                      "`hk.lift(inner.init)(rng, ...)` (and call `inner.apply` with the returned params), or run "
                      "the inner `init` outside the outer transform.")


def _to_prng_sequence(rng: Any, err_msg: str) -> PRNGSequence | None:
    if rng is None:
        return None
    try:
        return PRNGSequence(rng)
    except Exception as e:
        raise ValueError(f"{err_msg}. The object was of type {type(rng)}: {rng}") from e


def _check_mapping(name: str, mapping: Any) -> Mapping:
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{name} argument does not appear valid. It should be a mapping but is of type "
                        f"{type(mapping)}. For reference the parameters for apply are `apply(params, rng, ...)` "
                        "for `hk.transform` and `apply(params, state, rng, ...)` for `hk.transform_with_state`.\n"
                        f"The argument was: {mapping!r}.")
    return mapping


def _check_not_jitted(f: Callable) -> None:
    # Type names of jit/pmap-wrapped functions in fluxion (JitWrapped, PmapWrapped) and JAX (PjitFunction, ...).
    if any(tok in type(f).__name__ for tok in ("JitWrapped", "PmapWrapped", "PjitFunction", "PmapFunction")):
        raise ValueError("hk.transform got an already jit (or pmap) decorated function. Jit the `init` or "
                         "`apply` function you get back instead (e.g. `jit(hk.transform(f).apply)`): the function "
                         "given to hk.transform is impure (it does not take params/rng explicitly).")


def _guard_nested_init() -> None:
    outer = _frame.current_frame_or_none()
    if outer is not None and not outer.allow_nested_init:
        raise ValueError(_NESTED_INIT_ERROR)


def transform_with_state(f: Callable[..., Any]) -> TransformedWithState:
    """Turns `f` (which may create parameters and read/write state) into a pair of pure functions.

    Returns:
        `TransformedWithState(init, apply)`:
        `init(rng, *args, **kwargs) -> (params, state)` runs `f` and returns the parameters it created and the
        state's *initial* values; `apply(params, state, rng, *args, **kwargs) -> (out, new_state)` runs `f` with
        the given parameters (read-only) and state. `rng` may be a PRNG key, an int seed, or None when `f` draws
        no random numbers.

    Raises:
        ValueError: `rng` is not a key/seed/None; `init` called inside another transform (use `hk.lift`); the
            parameters given to `apply` lack one that `f` needs.
        TypeError: `params` or `state` is not a mapping.
    """
    _check_not_jitted(f)

    @functools.wraps(f)
    def init_fn(rng: Any, *args, **kwargs):
        _guard_nested_init()
        frame = _frame.Frame(params={}, state={}, rng=_to_prng_sequence(rng, _INIT_RNG_ERROR),
                             params_frozen=False)
        with _frame.push(frame):
            f(*args, **kwargs)
            frame.teardown()
        return frame.collect_params(), frame.collect_state(initial=True)

    @functools.wraps(f)
    def apply_fn(params: Any, state: Any, rng: Any, *args, **kwargs):
        # `without_state` passes state=None: its callers' rng is the second argument, not the third.
        rng_error = _APPLY_RNG_ERROR if state is None else _APPLY_RNG_STATE_ERROR
        params = _check_mapping("params", params)
        state = _check_mapping("state", state)
        frame_params = {b: dict(v) for b, v in params.items()}
        frame_state = {b: {k: _frame.StatePair(v, v) for k, v in bundle.items()} for b, bundle in state.items()}
        frame = _frame.Frame(params=frame_params, state=frame_state,
                             rng=_to_prng_sequence(rng, rng_error), params_frozen=True)
        with _frame.push(frame):
            out = f(*args, **kwargs)
            frame.teardown()
        return out, frame.collect_state(initial=False)

    return TransformedWithState(init_fn, apply_fn)


def without_state(f: TransformedWithState) -> Transformed:
    """Wraps a `TransformedWithState` whose function uses no state into a `Transformed`.

    Raises:
        NonEmptyStateError (a ValueError): if the function does create or set state.
    """

    def init_fn(*args, **kwargs):
        params, state = f.init(*args, **kwargs)
        if state:
            raise _frame.NonEmptyStateError(_STATE_ERROR)
        return params

    def apply_fn(params, *args, **kwargs):
        if "state" in kwargs:
            raise TypeError("Haiku transform adds three arguments (params, state, rng) to apply. If the functions "
                            "you are transforming use the same names you must pass them positionally (e.g. "
                            "`f.apply(.., my_state)` and not by name (e.g. `f.apply(.., state=my_state)`)")
        out, state = f.apply(params, None, *args, **kwargs)
        if state:
            raise _frame.NonEmptyStateError(_STATE_ERROR)
        return out

    return Transformed(init_fn, apply_fn)


def transform(f: Callable[..., Any], *, apply_rng: bool = True) -> Transformed:
    """Turns `f` (which may create parameters with `hk.get_parameter` / modules) into pure `init`/`apply`.

    Example (the parameter tree uses Haiku's names)::

        net = hk.transform(lambda x: hk.nets.MLP([8, 2])(x))
        params = net.init(random.PRNGKey(0), x)   # {'mlp/~/linear_0': {'w': (d, 8), 'b': (8,)}, ...}
        y = net.apply(params, None, x)

    Args:
        f: the function to transform; it must not use `hk.get_state`/`hk.set_state`.
        apply_rng: must be True (Haiku removed the option; use `without_apply_rng`).

    Returns:
        `Transformed(init, apply)` with `init(rng, *args, **kwargs) -> params` and
        `apply(params, rng, *args, **kwargs) -> out`; `params` and `rng` may also be passed by keyword.

    Raises:
        ValueError: `apply_rng=False`; `apply`'s `rng` (its second argument) is not a PRNG key, an int seed or
            None, e.g. `apply(params, x)` (Haiku's message: "Apply must be called with an RNG as the second
            argument, ..."); see also `transform_with_state`.
        NonEmptyStateError: `f` uses state.
    """
    if not apply_rng:
        raise ValueError("The apply_rng argument has been removed and hk.transform now *always* applies an rng.\n"
                         "Replace hk.transform(..., apply_rng=False) with hk.without_apply_rng(hk.transform(...)).\n"
                         "Replace hk.transform(..., apply_rng=True) with hk.transform(...).")
    transformed = without_state(transform_with_state(f))
    functools.update_wrapper(transformed.apply, f)
    return transformed


def with_empty_state(f: Transformed) -> TransformedWithState:
    """The inverse of `without_state`: `init` returns `(params, {})`, `apply` takes and returns empty state."""

    def init_fn(*args, **kwargs):
        return f.init(*args, **kwargs), {}

    def apply_fn(params, state, *args, **kwargs):
        del state
        return f.apply(params, *args, **kwargs), {}

    return TransformedWithState(init_fn, apply_fn)


def _check_rng_kwarg(kwargs: dict) -> None:
    if "rng" in kwargs:
        raise TypeError("Haiku transform adds three arguments (params, state, rng) to apply. If the functions you "
                        "are transforming use the same names you must pass them positionally (e.g. "
                        "`f.apply(.., my_rng)` and not by name (e.g. `f.apply(.., rng=my_rng)`)")


def without_apply_rng(f: Any) -> Any:
    """Removes the `rng` argument of `apply` (it is passed as None).

    Args:
        f: a `Transformed`, `TransformedWithState`, `MultiTransformed` or `MultiTransformedWithState`.

    Raises:
        ValueError: `f` is none of those.
    """
    if isinstance(f, TransformedWithState):
        def apply_fn(params, state, *args, **kwargs):
            _check_rng_kwarg(kwargs)
            return f.apply(params, state, None, *args, **kwargs)
        return TransformedWithState(f.init, apply_fn)
    if isinstance(f, Transformed):
        def apply_fn(params, *args, **kwargs):
            _check_rng_kwarg(kwargs)
            return f.apply(params, None, *args, **kwargs)
        return Transformed(f.init, apply_fn)
    if isinstance(f, (MultiTransformed, MultiTransformedWithState)):
        with_state = isinstance(f, MultiTransformedWithState)

        def drop_rng(fn):
            def apply_fn(params, *args, **kwargs):
                _check_rng_kwarg(kwargs)
                if with_state:
                    return fn(params, args[0], None, *args[1:], **kwargs)
                return fn(params, None, *args, **kwargs)
            return apply_fn
        return type(f)(f.init, tree_util.tree_map(drop_rng, f.apply))
    raise ValueError("Must be called with the result of `hk.transformed`, `hk.multi_transform`, "
                     "`hk.transformed_with_state` or `hk.multi_transform_with_state`, actually called with "
                     f"{type(f)}")


def multi_transform_with_state(f: Callable[[], tuple[Callable, Any]]) -> MultiTransformedWithState:
    """Transforms several functions that share modules (e.g. an encoder and a decoder).

    Args:
        f: called with no arguments inside the transform; returns `(template_fn, apply_fns)` where
            `template_fn(*args)` must create every parameter (it is what `init` runs) and `apply_fns` is a pytree
            of functions.

    Returns:
        `MultiTransformedWithState(init, apply)` where `apply` has the structure of `apply_fns` and each leaf is
        `apply(params, state, rng, *args, **kwargs) -> (out, state)`.
    """
    init = transform_with_state(lambda *a, **k: f()[0](*a, **k)).init

    # The structure of `apply_fns` is found by running `f()` once in a throwaway frame (it only builds modules).
    probe = _frame.Frame(params={}, state={}, rng=PRNGSequence(42), params_frozen=False)
    with _frame.push(probe):
        treedef = tree_util.tree_structure(f()[1])

    def apply_i(i: int):
        return transform_with_state(lambda *a, **k: tree_util.tree_leaves(f()[1])[i](*a, **k)).apply

    leaves = [apply_i(i) for i in range(treedef.num_leaves)]
    return MultiTransformedWithState(init, tree_util.tree_unflatten(treedef, leaves))


def multi_transform(f: Callable[[], tuple[Callable, Any]]) -> MultiTransformed:
    """`multi_transform_with_state` for functions without state: `init -> params`, leaves
    `apply(params, rng, *a, **k) -> out`.

    Raises:
        ValueError: the functions use state.
    """
    g = multi_transform_with_state(f)
    multi_state_error = ("If your transformed function uses `hk.{get,set}_state` then use "
                         "`hk.multi_transform_with_state`.")

    def init_fn(rng, *args, **kwargs):
        params, state = g.init(rng, *args, **kwargs)
        if state:
            raise ValueError(multi_state_error)
        return params

    def drop_state(fn):
        def apply_fn(params, rng, *args, **kwargs):
            out, state = fn(params, None, rng, *args, **kwargs)
            if state:
                raise ValueError(multi_state_error)
            return out
        return apply_fn

    return MultiTransformed(init_fn, tree_util.tree_map(drop_state, g.apply))
