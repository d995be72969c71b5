"""Mixed precision per module class (`hk.mixed_precision`): `set_policy(hk.nets.MLP, policy)` makes every method
call of that class cast its array inputs to `policy.compute_dtype`, create parameters in `policy.param_dtype`,
read parameters and state cast to the compute dtype, and cast the outputs to `policy.output_dtype`.

Difference from Haiku: Haiku takes policies from the `jmp` library, which fluxion does not depend on. `Policy`
here is a small stand-in with jmp's fields and methods (`param_dtype`, `compute_dtype`, `output_dtype`,
`cast_to_param`, `cast_to_compute`, `cast_to_output`, `with_output_dtype`), and `get_policy_from_string` parses
jmp's policy strings (`"params=float32,compute=bfloat16,output=float32"`, or `"p=f32,c=bf16,o=f32"`). Any object
with those methods may be used. Policies are keyed by the class object (Haiku keys by module path and qualified
name for classes defined outside `__main__`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, NamedTuple

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _frame
from ._base import custom_creator, custom_getter
from ._module import intercept_methods_global

__all__ = ["Policy", "get_policy_from_string", "set_policy", "get_policy", "clear_policy", "push_policy",
           "current_policy"]

_DTYPE_NAMES = {"float16": "float16", "f16": "float16", "half": "float16", "bfloat16": "bfloat16",
                "bf16": "bfloat16", "float32": "float32", "f32": "float32", "full": "float32", "single": "float32",
                "float64": "float64", "f64": "float64", "double": "float64"}


def _cast_floating(tree: Any, dtype: Any) -> Any:
    # Only floating-point arrays are cast (integer ids, masks and keys keep their dtype), as jmp does.
    def cast(x):
        if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(x).astype(dtype)
        return x
    return tree_util.tree_map(cast, tree)


class Policy(NamedTuple):
    """The dtypes of parameters, of computation and of outputs (a stand-in for `jmp.Policy`)."""

    param_dtype: Any
    compute_dtype: Any
    output_dtype: Any

    def cast_to_param(self, tree: Any) -> Any:
        return _cast_floating(tree, self.param_dtype)

    def cast_to_compute(self, tree: Any) -> Any:
        return _cast_floating(tree, self.compute_dtype)

    def cast_to_output(self, tree: Any) -> Any:
        return _cast_floating(tree, self.output_dtype)

    def with_output_dtype(self, output_dtype: Any) -> "Policy":
        return self._replace(output_dtype=output_dtype)


def _parse_dtype(name: str) -> Any:
    try:
        return jnp.dtype(_DTYPE_NAMES[name.strip().lower()])
    except KeyError:
        raise ValueError(f"Unknown dtype {name!r} in policy string") from None


def get_policy_from_string(policy_str: str) -> Policy:
    """`"params=float32,compute=bfloat16,output=float32"` (keys may be abbreviated to `p`, `c`, `o`), or a single
    dtype name for all three.

    Raises:
        ValueError: an unknown key or dtype name, or a missing key.
    """
    if "=" not in policy_str:
        dtype = _parse_dtype(policy_str)
        return Policy(dtype, dtype, dtype)
    found = {}
    for part in policy_str.split(","):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        full = {"p": "params", "c": "compute", "o": "output"}.get(key, key)
        if full not in ("params", "compute", "output"):
            raise ValueError(f"Unknown key {key!r} in policy string {policy_str!r}")
        found[full] = _parse_dtype(value)
    missing = {"params", "compute", "output"} - set(found)
    if missing:
        raise ValueError(f"Policy string {policy_str!r} lacks {sorted(missing)}")
    return Policy(found["params"], found["compute"], found["output"])


class _ThreadState(threading.local):
    def __init__(self):
        self.policies: dict = {}
        self.current: list = []


_STATE = _ThreadState()
_INSTALLED = []


def current_policy() -> Any:
    """The policy of the innermost module method running under a policy, or None."""
    return _STATE.current[-1] if _STATE.current else None


def get_policy(cls: type) -> Any:
    """The policy set for module class `cls`, or None."""
    return _STATE.policies.get(cls)


def set_policy(cls: type, policy: Any) -> None:
    """Uses `policy` for every method call of module class `cls` (subclasses are not affected)."""
    assert policy is not None, "To unset policies use clear_policy."
    if not _INSTALLED:
        intercept_methods_global(_interceptor)
        _INSTALLED.append(True)
    _STATE.policies[cls] = policy


def clear_policy(cls: type) -> None:
    """Removes the policy of `cls` (if any)."""
    _STATE.policies.pop(cls, None)


@contextlib.contextmanager
def push_policy(cls: type, policy: Any) -> Iterator[None]:
    """`set_policy` for the duration of a `with` block (the previous policy is restored afterwards).

    Raises:
        ValueError: used inside a method of `cls` itself.
    """
    assert policy is not None, "To unset policies use clear_policy."
    frame = _frame.current_frame_or_none()
    if frame is not None and frame.module_stack and type(frame.module_stack[-1].module) is cls:
        raise ValueError("Pushing a policy inside a method on the same class is not supported.")
    old = get_policy(cls)
    set_policy(cls, policy)
    try:
        yield
    finally:
        if old is not None:
            set_policy(cls, old)
        else:
            clear_policy(cls)


def _creator(next_creator, shape, dtype, init, context):
    del context
    return next_creator(shape, _STATE.current[-1].param_dtype, init)


def _getter(next_getter, value, context):
    del context
    return next_getter(_STATE.current[-1].cast_to_compute(value))


@contextlib.contextmanager
def _pushed(policy: Any) -> Iterator[None]:
    _STATE.current.append(policy)
    try:
        yield
    finally:
        _STATE.current.pop()


def _interceptor(next_f, args, kwargs, context):
    policy = get_policy(type(context.module))
    if policy is None:
        return next_f(*args, **kwargs)
    with contextlib.ExitStack() as stack:
        if not _STATE.current:
            # The creator/getter read the innermost policy, so installing them once (outermost) is enough.
            stack.enter_context(custom_creator(_creator))
            stack.enter_context(custom_getter(_getter, state=True))
        stack.enter_context(_pushed(policy))
        args, kwargs = policy.cast_to_compute((args, kwargs))
        return policy.cast_to_output(next_f(*args, **kwargs))

