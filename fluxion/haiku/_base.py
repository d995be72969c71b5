"""Parameters, state and random keys inside a transformed function (`hk.get_parameter`, `hk.get_state`, ...).

Every function here reads or writes the current `Frame` (see `_frame.py`) and nothing else. Error messages follow
Haiku's wording so that users searching for them find the Haiku documentation.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import fluxion.numpy as jnp

from . import _frame
from ._frame import MissingRNGError, StatePair

__all__ = ["get_parameter", "get_state", "set_state", "next_rng_key", "next_rng_keys", "maybe_next_rng_key",
           "reserve_rng_keys", "current_name", "running_init", "module_name_of"]

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


def get_parameter(name: str, shape: Sequence[int], dtype: Any = None, init: Initializer | None = None) -> Any:
    """Creates (during `init`) or fetches (during `apply`) the parameter `name` of the current module.

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
    bundle = frame.params.get(bundle_name)
    param = None if bundle is None else bundle.get(name)
    if param is None:
        missing = ValueError(f"Unable to retrieve parameter {name!r} for module {bundle_name!r} "
                             "All parameters must be created as part of `init`.")
        if frame.params_frozen:
            raise missing
        param = init(shape, dtype)
        if param is None:
            raise ValueError("Parameters cannot be `None`.")
        frame.params.setdefault(bundle_name, {})[name] = param
    if tuple(param.shape) != tuple(shape):
        raise ValueError(f"{fq_name!r} with retrieved shape {tuple(param.shape)!r} does not match "
                         f"shape={shape!r} dtype={dtype!r}")
    return param


def get_state(name: str, shape: Sequence[int] | None = None, dtype: Any = jnp.float32,
              init: Initializer | None = None) -> Any:
    """The current value of state `name` of the current module, created with `init(shape, dtype)` if absent.

    Raises:
        ValueError: outside a transform; if the state is absent and no `init` (or no shape/dtype) is given.
    """
    frame = _frame.current_frame("get_state")
    bundle_name = _bundle_name(frame)
    bundle = frame.state.get(bundle_name, {})
    pair = bundle.get(name)
    if pair is not None:
        return pair.current
    if init is None:
        raise ValueError(f"No value for {name!r} in {bundle_name!r}, perhaps set an init function?")
    if shape is None or dtype is None:
        raise ValueError(f"Must provide shape and dtype to initialize {name!r} in {bundle_name!r}.")
    value = init(shape, dtype)
    frame.state.setdefault(bundle_name, {})[name] = StatePair(value, value)
    return value


def set_state(name: str, value: Any) -> None:
    """Sets state `name` of the current module to `value` (`apply` returns it; `init` returns the first value).

    Raises:
        ValueError: outside a transform.
    """
    frame = _frame.current_frame("set_state")
    bundle = frame.state.setdefault(_bundle_name(frame), {})
    old = bundle.get(name)
    bundle[name] = StatePair(value, value) if old is None else StatePair(old.initial, value)


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
    return next(_rng_sequence(_frame.current_frame("next_rng_key")))


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
