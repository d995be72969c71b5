"""Haiku-aware function transformations: `hk.grad`, `hk.vmap`, `hk.scan`, `hk.cond`, ... (mirrors Haiku's).

`fluxion.lax.scan`, `fluxion.vmap` etc. trace their function and only see its explicit arguments and results, so
a module inside them that reads parameters, updates state or draws keys would leak tracers into the frame. Each
wrapper here therefore takes a snapshot of the frame (`InternalState`: parameters, state pairs and the key
sequence), passes it through the fluxion transformation as an explicit argument, runs the user's function on a
temporary frame built from it, returns the frame's contents as an explicit result and writes them back.

Haiku's rules are kept so that the same program draws the same keys and creates the same parameters:

* before entering a loop or branch the key queue is topped up to one key (`reserve_up_to_full`), and after each
  iteration/branch again, so that the key state carried through has a fixed structure;
* during `init`, `scan` and `fori_loop` run their first step outside the loop (parameters and state may only be
  created there), and `while_loop` refuses to run;
* `vmap` never maps parameters or state; keys are broadcast (`split_rng=False`) or split per example
  (`split_rng=True`).
* `remat` is `fluxion.checkpoint` of a function of (state, arguments): reverse mode recomputes its intermediates.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple, Sequence

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

from . import _frame
from ._base import next_rng_keys
from ._prng import PRNGSequence

__all__ = ["InternalState", "internal_state", "update_internal_state", "temporary_internal_state", "grad",
           "value_and_grad", "vmap", "scan", "map", "fori_loop", "while_loop", "cond", "switch", "eval_shape",
           "remat"]

python_map = map


class InternalState(NamedTuple):
    """A frame's contents as a pytree: `{bundle: {name: array}}` params (or None), `{bundle: {name:
    StatePair}}` state, and the key sequence's `(key, queued_subkeys)` (or None without keys)."""

    params: Any
    state: Any
    rng: Any


def _copy(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: x, tree)


def internal_state(*, params: bool = True) -> InternalState:
    """A copy of the current frame's parameters (unless `params=False`), state and key sequence."""
    frame = _frame.current_frame()
    rng = None if frame.rng is None else frame.rng.internal_state
    return InternalState(_copy(frame.params) if params else None, _copy(frame.state), _copy(rng))


def _update_recursive(dst: dict, src: Any) -> None:
    for k, v in src.items():
        if isinstance(v, dict):
            _update_recursive(dst.setdefault(k, {}), v)
        elif v is not None:  # None marks "unchanged" (see `_difference`)
            dst[k] = v


def update_internal_state(state: InternalState) -> None:
    """Writes a snapshot (or a `_difference`) back into the current frame."""
    frame = _frame.current_frame()
    if not frame.params_frozen and state.params is not None:
        _update_recursive(frame.params, state.params)
    _update_recursive(frame.state, {b: {k: _frame.StatePair(*p) for k, p in v.items()}
                                    for b, v in state.state.items()})
    if state.rng is not None:
        frame.rng.replace_internal_state(state.rng)


def temporary_internal_state(state: InternalState, *, share_python_state: bool = False):
    """A context manager running its block on a new frame holding `state` (None fields: the current ones)."""
    frame = _frame.current_frame()
    state = _copy(state)
    params = _copy(frame.params) if state.params is None else state.params
    rng = None if state.rng is None else PRNGSequence(tuple(state.rng))
    pairs = frame.state if state.state is None else state.state
    pairs = {b: {k: _frame.StatePair(*p) for k, p in v.items()} for b, v in pairs.items()}
    return _frame.push(frame.evolve(params, pairs, rng, decoupled=not share_python_state))


def _difference(before: InternalState, after: InternalState) -> InternalState:
    # Values whose Python identity did not change inside the transformation are replaced by None, so that
    # unchanged parameters and state are not returned through it (only what was created or set comes back).
    params = {b: {k: v for k, v in bundle.items() if before.params.get(b, {}).get(k) is not v}
              for b, bundle in after.params.items()}
    params = {b: v for b, v in params.items() if v}

    def changed_pair(b, k, pair):
        old = before.state.get(b, {}).get(k)
        return old is None or old[0] is not pair[0] or old[1] is not pair[1]

    state = {b: {k: p for k, p in bundle.items() if changed_pair(b, k, p)} for b, bundle in after.state.items()}
    state = {b: v for b, v in state.items() if v}
    rng = after.rng
    if before.rng is not None and rng is not None and _same_rng(before.rng, rng):
        rng = None
    return InternalState(params, state, rng)


def _same_rng(a: tuple, b: tuple) -> bool:
    return a[0] is b[0] and len(a[1]) == len(b[1]) and all(x is y for x, y in zip(a[1], b[1]))


def _reserve_up_to_full() -> None:
    rng = _frame.current_frame().rng
    if rng is not None:
        rng.reserve_up_to_full()


def _assert_inside(name: str, jax_name: str) -> None:
    if not _frame.inside_transform():
        raise ValueError(f"hk.{name}() should not be used outside of hk.transform(). Use {jax_name}() instead.")


def value_and_grad(fun: Callable, argnums: Any = 0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """`fluxion.value_and_grad(fun)` inside a transform, keeping the state `fun` sets (parameters are constants).

    Raises:
        ValueError: used outside a transform.
    """
    _assert_inside("grad", "jax.grad")

    def stateful_fun(*args, hk_state, **kwargs):
        with temporary_internal_state(hk_state):
            out = fun(*args, **kwargs)
            out, aux = out if has_aux else (out, None)
            return out, (aux, _difference(hk_state, internal_state()))

    grad_fun = fluxion.value_and_grad(stateful_fun, argnums=argnums, has_aux=True, holomorphic=holomorphic)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        (value, (aux, hk_state)), grads = grad_fun(*args, hk_state=internal_state(), **kwargs)
        update_internal_state(hk_state)
        return ((value, aux) if has_aux else value), grads

    return wrapper


def grad(fun: Callable, argnums: Any = 0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """`fluxion.grad(fun)` inside a transform (see `value_and_grad`); returns grads (and aux with `has_aux`)."""
    vg = value_and_grad(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic)

    @functools.wraps(fun)
    def grad_fn(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_fn


def remat(fun: Callable, prevent_cse: bool = True, policy: Callable | None = None,
          static_argnums: int | Sequence[int] = ()) -> Callable:
    """`fluxion.checkpoint` (`jax.remat`) with Haiku state threaded through: reverse mode recomputes `fun`'s
    intermediates instead of storing them; values, gradients and state are as without `remat` (and as Haiku's).

    Raises:
        ValueError: the wrapped function is called outside a transform.
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapper(*a, **k):
        _assert_inside("remat", "jax.remat")

        def pure(hk_state, *args):
            with temporary_internal_state(hk_state, share_python_state=True):
                out = fun(*args, **k)
                return out, _difference(hk_state, internal_state())

        # The state is argument 0 of `pure`, so the user's static positions move up by one.
        remat_pure = fluxion.checkpoint(pure, prevent_cse=prevent_cse, policy=policy,
                                        static_argnums=tuple(i + 1 if i >= 0 else i for i in statics))
        out, state_out = remat_pure(internal_state(), *a)
        update_internal_state(state_out)
        return out

    return wrapper


def _stateful_branch(branch: Callable) -> Callable:
    def run(operand):
        state, operands = operand
        with temporary_internal_state(state):
            out = branch(*operands)
            _reserve_up_to_full()
            return out, internal_state()
    return run


_NO_OPERAND = object()


def _new_cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    del pred, true_fun, false_fun, operands, operand


def _old_cond(pred, true_operand, true_fun, false_operand, false_fun):
    del pred, true_operand, true_fun, false_operand, false_fun


def _bind_cond(args, kwargs) -> tuple:
    # Both call forms of `lax.cond`: (pred, true_fun, false_fun, *operands) and the older
    # (pred, true_operand, true_fun, false_operand, false_fun).
    try:
        pred, true_operand, true_fun, false_operand, false_fun = \
            inspect.signature(_old_cond).bind(*args, **kwargs).args
        if callable(true_fun) and callable(false_fun):
            return (pred, lambda op, f=true_fun: f(op[0]), lambda op, f=false_fun: f(op[1]),
                    [(true_operand, false_operand)])
    except TypeError:
        pass
    bound = inspect.signature(_new_cond).bind(*args, **kwargs)
    pred, true_fun, false_fun, *operands = bound.args
    operand = bound.kwargs.get("operand", _NO_OPERAND)
    if operand is not _NO_OPERAND:
        if operands:
            raise ValueError("When the operand keyword argument is used you cannot also pass operands "
                             f"positionally. Got operand={operand} and *operands={tuple(operands)}")
        operands = [operand]
    return pred, true_fun, false_fun, operands


def cond(*args, **kwargs) -> Any:
    """`lax.cond(pred, true_fun, false_fun, *operands)` (or the older `cond(pred, true_operand, true_fun,
    false_operand, false_fun)`) with Haiku state passed through both branches.

    Parameters must already exist (create them unconditionally during `init`, e.g. under `hk.running_init()`).

    Raises:
        ValueError: outside a transform; `operand=` given together with positional operands.
    """
    _assert_inside("cond", "jax.cond")
    pred, true_fun, false_fun, operands = _bind_cond(args, kwargs)
    _reserve_up_to_full()
    out, state = lax.cond(pred, _stateful_branch(true_fun), _stateful_branch(false_fun),
                          (internal_state(), tuple(operands)))
    update_internal_state(state)
    return out


def switch(index: Any, branches: Any, *operands) -> Any:
    """`lax.switch(index, branches, *operands)` with Haiku state passed through every branch.

    Raises:
        ValueError: outside a transform.
    """
    _assert_inside("switch", "jax.switch")
    _reserve_up_to_full()
    out, state = lax.switch(index, tuple(python_map(_stateful_branch, branches)), (internal_state(), operands))
    update_internal_state(state)
    return out


def _no_new_parameters(before: dict, after: dict) -> None:
    # Inside the loop parameters cannot be returned (they would be per-iteration values); Haiku's check and error.
    new = sorted((b, k) for b, bundle in after.items() for k in bundle if k not in before.get(b, {}))
    if new:
        raise AssertionError(f"New parameters were created: {new}")


def scan(f: Callable, init: Any, xs: Any, length: int | None = None, reverse: bool = False,
         unroll: int = 1) -> tuple[Any, Any]:
    """`lax.scan(f, init, xs)` with Haiku state carried through the loop.

    During `init` the first step runs outside the loop so that `f` can create its parameters and state there.

    Raises:
        ValueError: outside a transform.
        AssertionError: a parameter created in a later step (e.g. a module constructed inside `f`).
    """
    _assert_inside("scan", "jax.lax.scan")
    if length is None:
        length = tree_util.tree_leaves(xs)[0].shape[0]
    running_init = not _frame.current_frame().params_frozen
    if running_init:
        if not length:
            x0 = tree_util.tree_map(lambda x: jnp.zeros(x.shape[1:], x.dtype), xs)
            _, y0 = f(init, x0)
            return init, tree_util.tree_map(lambda y: jnp.zeros((0,) + y.shape, y.dtype), y0)
        pick, rest = (-1, slice(None, -1)) if reverse else (0, slice(1, None))
        x0 = tree_util.tree_map(lambda x: x[pick], xs)
        xs = tree_util.tree_map(lambda x: x[rest], xs)
        init, y0 = f(init, x0)
        y0 = tree_util.tree_map(lambda y: jnp.expand_dims(y, 0), y0)
        length -= 1
        if not length:
            return init, y0

    params_before = _copy(_frame.current_frame().params)

    def stateful_fun(carry, x):
        carry, state = carry
        with temporary_internal_state(state):
            carry, out = f(carry, x)
            _no_new_parameters(params_before, _frame.current_frame().params)
            _reserve_up_to_full()
            return (carry, internal_state(params=False)), out

    _reserve_up_to_full()
    (carry, state), ys = lax.scan(stateful_fun, (init, internal_state(params=False)), xs, length, reverse,
                                  unroll=unroll)
    update_internal_state(state)
    if running_init:
        order = (lambda y0, ys: [ys, y0]) if reverse else (lambda y0, ys: [y0, ys])
        ys = tree_util.tree_map(lambda y0, ys: jnp.concatenate(order(y0, ys)), y0, ys)
    return carry, ys


def map(f: Callable, xs: Any) -> Any:  # noqa: A001 (Haiku's name)
    """`lax.map(f, xs)` with Haiku state carried through (a `scan` without carry)."""
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    """`lax.fori_loop` with Haiku state carried through; during `init` the first iteration runs outside the loop.

    Raises:
        ValueError: outside a transform.
    """
    _assert_inside("fori_loop", "jax.lax.fori_loop")

    def pure_body(i, val):
        state, val = val
        with temporary_internal_state(state):
            val = body_fun(i, val)
            _reserve_up_to_full()
            return internal_state(), val

    if not _frame.current_frame().params_frozen:
        init_val = body_fun(lower, init_val)
        lower += 1
        if isinstance(upper, int) and isinstance(lower, int) and upper - lower == 0:
            return init_val
    _reserve_up_to_full()
    state, val = lax.fori_loop(lower, upper, pure_body, (internal_state(), init_val))
    update_internal_state(state)
    return val


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """`lax.while_loop` with Haiku state carried through the body (apply only).

    Raises:
        ValueError: during `init` (whether the body runs cannot be known statically), or if `cond_fun` sets
            state or draws keys.
    """
    if not _frame.current_frame("while_loop").params_frozen:
        raise ValueError("hk.while_loop does not support initialization (since we cannot statically determine if "
                         "your loop will run at least once). Please use `hk.running_init` to run the body "
                         "unconditionally:\n\n    if hk.running_init():\n      val = module(val)\n    else:\n"
                         "      val = hk.while_loop(lambda val: val.mean() < 1, module, val)\n")

    def pure_cond(val):
        val, state = val
        with temporary_internal_state(state):
            out = cond_fun(val)
            after = internal_state()
        if _difference(state, after) != InternalState({}, {}, None):
            raise ValueError("`hk.while_loop` does not support `hk.set_state`, `hk.next_rng_key` (et al) in "
                             "`cond_fun`.")
        return out

    def pure_body(val):
        val, state = val
        with temporary_internal_state(state):
            val = body_fun(val)
            _reserve_up_to_full()
            return val, internal_state()

    _reserve_up_to_full()
    val, state = lax.while_loop(pure_cond, pure_body, (init_val, internal_state()))
    update_internal_state(state)
    return val


def _mapped_axis_size(args: Any, in_axes: Any) -> int:
    sizes = []

    def visit(axis, arg):
        if axis is not None:
            sizes.extend(leaf.shape[axis] for leaf in tree_util.tree_leaves(arg))

    if isinstance(in_axes, int):
        visit(in_axes, args)
    else:
        for axis, arg in zip(in_axes, args):
            if isinstance(axis, (int, type(None))):
                visit(axis, arg)
            else:
                tree_util.tree_map(visit, axis, arg, is_leaf=lambda x: x is None)
    if not sizes:
        raise ValueError("hk.vmap could not find a mapped argument to take the batch size from.")
    return sizes[0]


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None, axis_size: int | None = None,
         *, split_rng: bool, spmd_axis_name: Any = None) -> Callable:
    """`fluxion.vmap(fun)` inside a transform: parameters and state are shared (never mapped).

    Args:
        split_rng: required. False: every example sees the same keys (the key sequence is broadcast). True: one
            key is drawn with `next_rng_keys(batch)` and each example gets its own sequence from its key.

    Raises:
        ValueError: `in_axes` maps nothing; called outside a transform.
        TypeError: `split_rng` not given.
    """
    if not tree_util.tree_leaves(in_axes):
        raise ValueError(f"{getattr(fun, '__name__', 'fun')} must have at least one non-None value in in_axes to "
                         "use with `hk.vmap`.")
    in_axes_t = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    state_axes = InternalState(None, None, 0 if split_rng else None)

    def pure_fun(args, state_in):
        if split_rng:
            state_in = InternalState(state_in.params, state_in.state, PRNGSequence(state_in.rng).internal_state)
        with temporary_internal_state(state_in):
            out = fun(*args)
            return out, _difference(state_in, internal_state())

    mapped = fluxion.vmap(pure_fun, in_axes=(in_axes_t, state_axes), out_axes=(out_axes, state_axes),
                          axis_name=axis_name, axis_size=axis_size, spmd_axis_name=spmd_axis_name)

    @functools.wraps(fun)
    def mapped_fun(*args):
        _frame.assert_context("vmap")
        state = internal_state()
        if split_rng:
            keys = next_rng_keys(_mapped_axis_size(args, in_axes_t))
            state = internal_state()
            saved_rng = state.rng
            state = InternalState(state.params, state.state, keys)
        try:
            out, state = mapped(args, state)
        except ValueError as err:
            if split_rng and not _frame.current_frame().params_frozen and "out_axes" in str(err):
                raise ValueError("hk.vmap does not support setting split_rng to True during initialization because "
                                 "it assumes parameters are always shared along the mapped dimension. Consider "
                                 "switching the value of `split_rng` to False during initialization through "
                                 "`split_rng=(not hk.running_init())`.") from err
            raise
        if split_rng:
            state = InternalState(state.params, state.state, saved_rng)
        update_internal_state(state)
        return out

    return mapped_fun


def eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """`fluxion.eval_shape(fun, *args)` inside a transform; state changes made by `fun` are discarded.

    Raises:
        ValueError: outside a transform.
    """
    _assert_inside("eval_shape", "jax.eval_shape")

    def stateless_fun(state, *a, **k):
        with temporary_internal_state(state):
            return fun(*a, **k)

    return fluxion.eval_shape(stateless_fun, internal_state(), *args, **kwargs)
