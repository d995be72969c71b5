"""Parameters, state and random keys inside a transformed function (`hk.get_parameter`, `hk.get_state`, ...).

Every function here reads or writes the current `Frame` (see `_frame.py`) and nothing else. Error messages follow
Haiku's wording so that users searching for them find the Haiku documentation.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _frame
from ._frame import MissingRNGError, StatePair
from ._prng import PRNGSequence

__all__ = ["get_parameter", "get_state", "set_state", "next_rng_key", "next_rng_keys", "maybe_next_rng_key",
           "reserve_rng_keys", "current_name", "running_init", "module_name_of", "DO_NOT_STORE", "GetterContext",
           "SetterContext", "custom_creator", "custom_getter", "custom_setter", "get_params", "get_current_state",
           "get_initial_state", "with_rng", "maybe_get_rng_sequence_state", "replace_rng_sequence_state"]

Initializer = Callable[[Sequence[int], Any], Any]


def module_name_of(module: Any) -> str:
    """The module's full name; a clear error if its constructor has not called `super().__init__()` yet."""
    if not hasattr(module, "module_name"):
        raise ValueError("The super constructor must be called before you create parameters or submodules.")
    return module.module_name


def _bundle_name(frame: _frame.Frame) -> str:
    # Values created outside any module are grouped under "~", as in Haiku.
    if frame.module_stack:
        return module_name_of(frame.module_stack[-1].module)
    return "~"


def current_name() -> str:
    """The name of the module whose method is running (`~` outside any module).

    Raises:
        ValueError: outside `init`/`apply`.
    """
    return _bundle_name(_frame.current_frame("current_name"))


def running_init() -> bool:
    """True while running a transform's `init`, False during `apply`.

    Raises:
        ValueError: outside `init`/`apply`.
    """
    return not _frame.current_frame("running_init").params_frozen


def _throw_if_run(shape, dtype):
    del shape, dtype
    raise ValueError("Initializer must be specified.")


class DoNotStore:
    """The type of `DO_NOT_STORE`: returned by a custom creator or setter, it keeps the value out of the
    params/state returned by `init`/`apply` (e.g. frozen pretrained weights supplied by a custom getter)."""

    @property
    def shape(self):
        raise ValueError("DO_NOT_STORE does not have a shape.")

    @property
    def dtype(self):
        raise ValueError("DO_NOT_STORE does not have a dtype.")


DO_NOT_STORE = DoNotStore()


class GetterContext(NamedTuple):
    """What a custom creator/getter is told about the value: its full name `module/name`, the module (or None),
    the requested dtype, shape and initializer, and the `hk.lift` prefix it is created under (or None)."""

    full_name: str
    module: Any
    original_dtype: Any
    original_shape: Sequence[int]
    original_init: Initializer | None
    lifted_prefix_name: str | None

    @property
    def module_name(self) -> str:
        return self.full_name.rsplit("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.rsplit("/", 1)[1]


class SetterContext(NamedTuple):
    """What a custom setter is told: full name, module, the value's dtype and shape, and the lift prefix."""

    full_name: str
    module: Any
    original_dtype: Any
    original_shape: Any
    lifted_prefix_name: str | None

    @property
    def module_name(self) -> str:
        return self.full_name.rsplit("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.rsplit("/", 1)[1]


class _Interceptors(threading.local):
    """Per-thread stacks of custom creators/getters/setters (outermost first) and `hk.lift` name prefixes."""

    def __init__(self):
        self.param_creators: list = []
        self.state_creators: list = []
        self.param_getters: list = []
        self.state_getters: list = []
        self.state_setters: list = []
        self.lift_prefixes: list[str] = []
        self.rng_counters: list[list[int]] = []  # `hk.experimental.optimize_rng_use` counts next_rng_key calls


INTERCEPTORS = _Interceptors()


@contextlib.contextmanager
def push_onto(stack: list, item: Any) -> Iterator[None]:
    stack.append(item)
    try:
        yield
    finally:
        stack.pop()


def _run_chain(chain: list, last: Callable, *args) -> Any:
    # Each interceptor receives `next_fn` (the rest of the chain, ending in `last`) followed by `args`; the
    # outermost-registered interceptor runs first, as in Haiku.
    def call(i, *a):
        if i == len(chain):
            return last(*a)
        return chain[i](functools.partial(call, i + 1), *a)
    return call(0, *args)


def _current_module(frame: _frame.Frame) -> Any:
    return frame.module_stack[-1].module if frame.module_stack else None


def _lift_prefix(frame: _frame.Frame) -> str | None:
    # Haiku's `lifted_prefix_name`: the (non-empty) prefixes of the enclosing lifts, outermost first, with a
    # trailing "/"; None outside a lifted init.
    prefixes = [p for p in INTERCEPTORS.lift_prefixes if p]
    if frame.params_frozen or not prefixes:
        return None
    return "/".join(prefixes) + "/"


def _create(creators: list, context: GetterContext, shape, dtype, init) -> Any:
    if not creators:
        return init(shape, dtype)
    return _run_chain([lambda nxt, sh, dt, it, c=c: c(nxt, sh, dt, it, context) for c in creators],
                      lambda sh, dt, it: it(sh, dt), shape, dtype, init)


def _get(getters: list, context: GetterContext, value: Any) -> Any:
    if not getters:
        return value
    return _run_chain([lambda nxt, v, g=g: g(nxt, v, context) for g in getters], lambda v: v, value)


def get_parameter(name: str, shape: Sequence[int], dtype: Any = None, init: Initializer | None = None) -> Any:
    """Creates (during `init`) or fetches (during `apply`) the parameter `name` of the current module.

    Custom creators (`hk.custom_creator`) wrap `init` when the parameter is created; custom getters
    (`hk.custom_getter`) transform the value on every access.

    Args:
        name: the parameter's name inside its module (e.g. `"w"`).
        shape: its expected shape; checked against the stored value.
        dtype: dtype passed to `init` (default float32).
        init: `init(shape, dtype) -> array`, called only when the parameter does not exist yet.

    Returns:
        The parameter array of shape `shape`.

    Raises:
        ValueError: outside a transform ("`hk.get_parameter` must be used as part of an `hk.transform`"); during
            `apply` if the parameter is missing from `params`; if the stored shape differs from `shape`
            ("'<module>/<name>' with retrieved shape ... does not match shape=... dtype=...").
    """
    frame = _frame.current_frame("get_parameter")
    if init is None:
        init = _throw_if_run
    if dtype is None:
        dtype = jnp.float32
    bundle_name = _bundle_name(frame)
    fq_name = f"{bundle_name}/{name}"
    context = GetterContext(fq_name, _current_module(frame), dtype, shape, init, _lift_prefix(frame))
    bundle = frame.params.get(bundle_name)
    param = None if bundle is None else bundle.get(name)
    if param is None:
        missing = ValueError(f"Unable to retrieve parameter {name!r} for module {bundle_name!r} "
                             "All parameters must be created as part of `init`.")
        if frame.params_frozen and not INTERCEPTORS.param_creators:
            raise missing
        try:
            param = _create(INTERCEPTORS.param_creators, context, shape, dtype, init)
        except MissingRNGError as e:
            if frame.params_frozen:
                raise missing from e
            raise
        if param is not DO_NOT_STORE:
            if frame.params_frozen:
                raise missing
            if param is None:
                raise ValueError("Parameters cannot be `None`.")
            frame.params.setdefault(bundle_name, {})[name] = param
    param = _get(INTERCEPTORS.param_getters, context, param)
    if param is None:
        raise ValueError("Parameters cannot be `None`.")
    if tuple(param.shape) != tuple(shape):
        raise ValueError(f"{fq_name!r} with retrieved shape {tuple(param.shape)!r} does not match "
                         f"shape={shape!r} dtype={dtype!r}")
    return param


def get_state(name: str, shape: Sequence[int] | None = None, dtype: Any = jnp.float32,
              init: Initializer | None = None) -> Any:
    """The current value of state `name` of the current module, created with `init(shape, dtype)` if absent
    (through any `hk.custom_creator(..., state=True)`; `hk.custom_getter(..., state=True)` sees every read).

    Raises:
        ValueError: outside a transform; if the state is absent and no `init` (or no shape/dtype) is given.
    """
    frame = _frame.current_frame("get_state")
    bundle_name = _bundle_name(frame)
    context = GetterContext(f"{bundle_name}/{name}", _current_module(frame), dtype, shape, init, _lift_prefix(frame))
    pair = frame.state.get(bundle_name, {}).get(name)
    if pair is not None:
        value = pair.current
    else:
        if init is None:
            raise ValueError(f"No value for {name!r} in {bundle_name!r}, perhaps set an init function?")
        if shape is None or dtype is None:
            raise ValueError(f"Must provide shape and dtype to initialize {name!r} in {bundle_name!r}.")
        value = _create(INTERCEPTORS.state_creators, context, shape, dtype, init)
        if value is not DO_NOT_STORE:
            frame.state.setdefault(bundle_name, {})[name] = StatePair(value, value)
    return _get(INTERCEPTORS.state_getters, context, value)


def set_state(name: str, value: Any) -> None:
    """Sets state `name` of the current module to `value` (`apply` returns it; `init` returns the first value).
    Custom setters (`hk.custom_setter`) may transform the value or return `DO_NOT_STORE`.

    Raises:
        ValueError: outside a transform.
    """
    frame = _frame.current_frame("set_state")
    bundle_name = _bundle_name(frame)
    if INTERCEPTORS.state_setters:
        context = SetterContext(f"{bundle_name}/{name}", _current_module(frame),
                                tree_util.tree_map(lambda x: getattr(x, "dtype", None), value),
                                tree_util.tree_map(lambda x: getattr(x, "shape", None), value), _lift_prefix(frame))
        value = _run_chain([lambda nxt, v, s=s: s(nxt, v, context) for s in INTERCEPTORS.state_setters],
                           lambda v: v, value)
        if value is DO_NOT_STORE:
            return
    bundle = frame.state.setdefault(bundle_name, {})
    old = bundle.get(name)
    bundle[name] = StatePair(value, value) if old is None else StatePair(old.initial, value)


def custom_creator(creator: Callable, *, params: bool = True, state: bool = False):
    """A context manager: inside it, parameters (and with `state=True`, state) are created by
    `creator(next_creator, shape, dtype, init, context) -> value`, where `next_creator(shape, dtype, init)`
    runs the next creator (finally `init`). Returning `DO_NOT_STORE` keeps the value out of `params`.

    Raises:
        ValueError: outside a transform.
    """
    _frame.assert_context("custom_creator")
    stack = contextlib.ExitStack()
    if params:
        stack.enter_context(push_onto(INTERCEPTORS.param_creators, creator))
    if state:
        stack.enter_context(push_onto(INTERCEPTORS.state_creators, creator))
    return stack


def custom_getter(getter: Callable, *, params: bool = True, state: bool = False):
    """A context manager: inside it, every parameter (and with `state=True`, state) read returns
    `getter(next_getter, value, context)` (e.g. casting to half precision, or stop_gradient).

    Raises:
        ValueError: outside a transform.
    """
    _frame.assert_context("custom_getter")
    stack = contextlib.ExitStack()
    if params:
        stack.enter_context(push_onto(INTERCEPTORS.param_getters, getter))
    if state:
        stack.enter_context(push_onto(INTERCEPTORS.state_getters, getter))
    return stack


def custom_setter(setter: Callable):
    """A context manager: inside it, `set_state(name, v)` stores `setter(next_setter, v, context)` (or nothing
    if that is `DO_NOT_STORE`).

    Raises:
        ValueError: outside a transform.
    """
    _frame.assert_context("custom_setter")
    return push_onto(INTERCEPTORS.state_setters, setter)


def get_params() -> dict:
    """The parameters of the running transform: all of them in `apply`, those created so far in `init`.

    Raises:
        ValueError: outside a transform.
    """
    return _frame.current_frame("get_params").collect_params()


def get_current_state() -> dict:
    """The state as it is now (`{module: {name: value}}`).

    Raises:
        ValueError: outside a transform.
    """
    return _frame.current_frame("get_current_state").collect_state(initial=False)


def get_initial_state() -> dict:
    """The state as it was at the start of this `init`/`apply` (what `init` returns).

    Raises:
        ValueError: outside a transform.
    """
    return _frame.current_frame("get_initial_state").collect_state(initial=True)


@contextlib.contextmanager
def with_rng(key: Any) -> Iterator[None]:
    """A context manager: inside it, `next_rng_key()` draws from a new sequence started at `key`.

    Raises:
        ValueError: outside a transform; `key` is not a PRNG key.
    """
    frame = _frame.current_frame("with_rng")
    previous, frame.rng = frame.rng, PRNGSequence(key)
    try:
        yield
    finally:
        frame.rng = previous


def maybe_get_rng_sequence_state() -> Any:
    """The key sequence's `(key, queued_subkeys)`, or None when the transform got no key.

    Raises:
        ValueError: outside a transform.
    """
    rng = _frame.current_frame("maybe_get_rng_sequence_state").rng
    return None if rng is None else rng.internal_state


def replace_rng_sequence_state(state: Any) -> None:
    """Replaces the key sequence's state with `state` (from `maybe_get_rng_sequence_state`).

    Raises:
        ValueError: outside a transform. MissingRNGError: the transform got no key.
    """
    rng = _frame.current_frame("replace_rng_sequence_state").rng
    if rng is None:
        raise MissingRNGError("replace_rng_sequence_state requires an RNG to be passed into the transformed "
                              "function")
    rng.replace_internal_state(state)


def _rng_sequence(frame: _frame.Frame):
    if frame.rng is None:
        raise MissingRNGError("You must pass a non-None PRNGKey to init and/or apply if you make use of random "
                              "numbers.")
    return frame.rng


def next_rng_key() -> Any:
    """A fresh key split from the key passed to `init`/`apply`.

    Raises:
        ValueError: outside a transform. MissingRNGError (a ValueError): if `init`/`apply` got `rng=None`.
    """
    key = next(_rng_sequence(_frame.current_frame("next_rng_key")))
    for counter in INTERCEPTORS.rng_counters:
        counter[0] += 1
    return key


def next_rng_keys(num: int) -> Any:
    """`num` fresh keys stacked into one array of shape `(num, 2)` (raw keys) or `(num,)` (typed keys)."""
    return jnp.stack(_rng_sequence(_frame.current_frame("next_rng_keys")).take(num))


def maybe_next_rng_key() -> Any | None:
    """`next_rng_key()` when `init`/`apply` got a key, else `None`."""
    frame = _frame.current_frame("maybe_next_rng_key")
    return None if frame.rng is None else next(frame.rng)


def reserve_rng_keys(num: int) -> None:
    """Splits `num` keys at once so the next `num` calls to `next_rng_key` need no further split."""
    _rng_sequence(_frame.current_frame("reserve_rng_keys")).reserve(num)
