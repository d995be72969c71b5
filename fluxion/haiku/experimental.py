"""`hk.experimental`: Haiku's namespace of newer APIs.

Most members are the stable APIs also exported at top level (`lift_with_state`, `layer_stack`, `name_scope`,
`custom_getter`, ...). Specific to this namespace:

* `optimize_rng_use(fun)`: counts the keys `fun` draws with `next_rng_key` (by an abstract evaluation) and
  reserves them in one split before running it, as Haiku does (so keys differ from the unoptimized function's).
* `fast_eval_shape(fun, *args)`: `hk.eval_shape` with parameters created as zeros instead of by their
  initializers (cheaper; same shapes).
* `eval_summary(f)(*args)`: the list of module method calls of `f` (a function or transformed function) with
  their parameter, input and output specs (`MethodInvocation`, `ModuleDetails`, `ArraySpec`).
* `module_auto_repr`, `check_jax_usage`, `rng_reserve_size`: set a `hk.config` option, returning the old value.

Not provided (they need JAX internals or extra dependencies fluxion does not have): `to_dot`/`abstract_to_dot`
(graphviz rendering of a JAX jaxpr), `jaxpr_info` (JAX jaxpr statistics), `flax` (interop with the real Flax),
`tabulate` (needs the `tabulate` package; `eval_summary` provides the data it formats).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import random, tree_util

from . import _frame
from ._base import DO_NOT_STORE as DO_NOT_STORE
from ._base import INTERCEPTORS, push_onto
from ._base import GetterContext as GetterContext
from ._base import current_name as current_name
from ._base import custom_creator as custom_creator
from ._base import custom_getter as custom_getter
from ._base import get_current_state as get_current_state
from ._base import get_initial_state as get_initial_state
from ._base import get_params as get_params
from ._base import maybe_get_rng_sequence_state as maybe_get_rng_sequence_state
from ._base import replace_rng_sequence_state as replace_rng_sequence_state
from ._layer_stack import LayerStackTransparencyMapping as LayerStackTransparencyMapping
from ._layer_stack import layer_stack as layer_stack
from ._lift import LiftWithStateUpdater as LiftWithStateUpdater
from ._lift import lift as lift
from ._lift import lift_with_state as lift_with_state
from ._lift import transparent_lift as transparent_lift
from ._lift import transparent_lift_with_state as transparent_lift_with_state
from ._module import MethodContext as MethodContext
from ._module import force_name as force_name
from ._module import intercept_methods as intercept_methods
from ._module import name_like as name_like
from ._module import name_scope as name_scope
from ._stateful import eval_shape, internal_state, temporary_internal_state
from ._transform import Transformed, TransformedWithState, transform_with_state
from .config import check_jax_usage as check_jax_usage
from .config import module_auto_repr as module_auto_repr
from .config import rng_reserve_size as rng_reserve_size

ParamContext = GetterContext  # Haiku's legacy name

__all__ = ["optimize_rng_use", "fast_eval_shape", "eval_summary", "ArraySpec", "ModuleDetails",
           "MethodInvocation"]


def optimize_rng_use(fun: Callable) -> Callable:
    """Wraps `fun` (used inside a transform) so that the keys it draws with `next_rng_key` are split off in one
    `reserve_rng_keys(n)` before it runs.

    Raises:
        ValueError: the wrapped function is called outside a transform.
    """

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        frame = _frame.current_frame("optimize_rng_use")
        counter = [0]

        def count(state, *a, **k):
            with temporary_internal_state(state), push_onto(INTERCEPTORS.rng_counters, counter):
                fun(*a, **k)

        fluxion.eval_shape(count, internal_state(), *args, **kwargs)
        if counter[0] and frame.rng is not None:
            frame.rng.reserve(counter[0])
        return fun(*args, **kwargs)

    return wrapper


def _zeros_creator(next_creator, shape, dtype, init, context):
    del next_creator, init, context
    return jnp.zeros(shape, dtype)


def fast_eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """Output shapes/dtypes of `fun(*args, **kwargs)` (a `ShapeDtypeStruct` pytree), creating any new parameters
    as zeros; inside a transform state changes are discarded (see `hk.eval_shape`)."""
    if not _frame.inside_transform():
        return fluxion.eval_shape(fun, *args, **kwargs)
    with custom_creator(_zeros_creator, state=True):
        return eval_shape(fun, *args, **kwargs)


def _simple_dtype(dtype: Any) -> str:
    # Haiku's abbreviations: float32 -> f32, int32 -> s32, uint8 -> u8, complex64 -> c64, bfloat16 -> bf16.
    name = jnp.dtype(dtype).name
    for long, short in (("complex", "c"), ("double", "d"), ("float", "f"), ("uint", "u"), ("int", "s")):
        name = name.replace(long, short)
    return name


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """Shape and dtype of an array; printed like `f32[2,3]`."""

    shape: Sequence[int]
    dtype: Any

    def __str__(self) -> str:
        return _simple_dtype(self.dtype) + "[" + ",".join(map(str, self.shape)) + "]"

    __repr__ = __str__

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @classmethod
    def from_array(cls, array: Any) -> "ArraySpec":
        return cls(tuple(array.shape), array.dtype)


def _to_spec(tree: Any) -> Any:
    is_array = lambda x: hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (np.generic,))
    return tree_util.tree_map(lambda x: ArraySpec.from_array(x) if is_array(x) else x, tree)


@dataclasses.dataclass(frozen=True)
class ModuleDetails:
    """A module, the method called, and the specs of its `params_dict()` and `state_dict()` at that time."""

    module: Any
    method_name: str
    params: Mapping[str, ArraySpec]
    state: Mapping[str, ArraySpec]

    @classmethod
    def of(cls, module: Any, method_name: str) -> "ModuleDetails":
        return cls(module, method_name, _to_spec(dict(module.params_dict())), _to_spec(dict(module.state_dict())))


@dataclasses.dataclass(frozen=True)
class MethodInvocation:
    """One module method call seen by `eval_summary`: the module, specs of arguments and output, the
    `MethodContext`, and the chain of module calls it was made from (innermost, i.e. this call, first)."""

    module_details: ModuleDetails
    args_spec: tuple
    kwargs_spec: dict
    output_spec: Any
    context: MethodContext
    call_stack: Sequence[ModuleDetails]


_IGNORED_METHODS = ("__init__", "params_dict", "state_dict")


def _original_fn(f: Any) -> Callable:
    if isinstance(f, (Transformed, TransformedWithState)):
        return getattr(f.init, "__wrapped__", f.init)
    return f


def eval_summary(f: Any) -> Callable[..., Sequence[MethodInvocation]]:
    """A function that, given example inputs, abstractly runs `f`'s `init` and `apply` (keys from seed 42) and
    returns every module method call made during `apply`, in call order (a call is listed before the calls it
    makes)."""
    fn = _original_fn(f)

    def wrapper(*args, **kwargs) -> list:
        calls: list = []

        def log(next_f, a, k, context):
            if context.method_name in _IGNORED_METHODS:
                return next_f(*a, **k)
            idx = len(calls)
            calls.append(None)
            out = next_f(*a, **k)
            stack = tuple(ModuleDetails.of(c.module, c.method_name) for c in reversed(_frame.current_frame().module_stack))
            calls[idx] = MethodInvocation(ModuleDetails.of(context.module, context.method_name), _to_spec(a),
                                          _to_spec(k), _to_spec(out), context, stack)
            return out

        def logged(*a, **k):
            with intercept_methods(log):
                return fn(*a, **k)

        plain, logged_t = transform_with_state(lambda *a, **k: fn(*a, **k)), transform_with_state(logged)

        def init_apply(*a, **k):
            init_key, apply_key = random.split(random.PRNGKey(42))
            params, state = plain.init(init_key, *a, **k)
            logged_t.apply(params, state, apply_key, *a, **k)

        fluxion.eval_shape(init_apply, *args, **kwargs)
        return calls

    return wrapper
