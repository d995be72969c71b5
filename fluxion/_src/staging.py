"""Small staging utilities of the `jax` namespace: `typeof`, `ensure_compile_time_eval`, `named_call`,
`named_scope`, `closure_convert` and `linear_transpose`."""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator

from . import core, source_info
from .api_util import as_value
from .interpreters import ad
from .interpreters import partial_eval as pe
from .tree_util import tree_flatten, tree_unflatten


def typeof(x: Any) -> core.ShapedArray:
    """The abstract value (shape, dtype, weak type) of `x`, e.g. `float32[3]`, as `jax.typeof` gives it; for a `Ref`,
    its `AbstractRef` (`Ref{f32[3]}`). For an array split along `Explicit` mesh axes (and for tracers of one inside
    `jit`) the type includes the sharding: `float32[8@data,4]`, with `.sharding` a NamedSharding over the mesh's
    AbstractMesh (see lax/sharding_rules.py). Arrays on `Auto` axes, or not placed, have unsharded types (JAX gives
    the latter a replicated sharding of the current mesh).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.typeof(jnp.ones((2, 3)))
      ShapedArray(float32[2,3])
    """
    from .refs import Ref
    if isinstance(x, Ref):
        return x.aval
    return core.get_aval(as_value(x))


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Inside the block, operations on concrete values run eagerly even while `jit` traces, so their results are
    concrete (usable as Python values, shapes, ...). Operations on traced values are still traced.

    Examples:
      >>> import numpy as np
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> @fluxion.jit
      ... def f(x):
      ...     with fluxion.ensure_compile_time_eval():
      ...         table = jnp.arange(4.0) ** 2   # a concrete value, computed while tracing
      ...     assert isinstance(np.asarray(table), np.ndarray)
      ...     return x * table
      >>> f(1.0)
      Array([0., 1., 4., 9.], dtype=float32)
    """
    with core.new_base_main():
        yield


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """`fun`, running under `named_scope(name)` (default `fun.__name__`): equations it stages into a jaxpr record
    the name in `eqn.source_info.name_stack` (see `named_scope`). Values are unchanged.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.named_call(jnp.sin, name="my_sin")(0.0)
      Array(0., dtype=float32, weak_type=True)

    Raises:
      TypeError: `fun` is not callable.
    """
    if not callable(fun):
        raise TypeError(f"named_call: fun must be callable, got {type(fun).__name__}")
    if name is None:
        name = getattr(fun, "__name__", "unnamed_function")

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with source_info.extend_name_stack(name):
            return fun(*args, **kwargs)

    return named


def named_scope(name: str) -> contextlib.AbstractContextManager:
    """Pushes `name` onto the name stack for the block (also usable as a decorator).

    Equations traced inside (by `jit`, `make_jaxpr`, ...) record the names pushed since their trace began, joined
    by `/`, in `eqn.source_info.name_stack`; `jaxpr.pretty_print(name_stack=True)` shows them. Eager execution is
    unaffected. Unlike JAX, fluxion keeps no traceback in the source info and compiled code carries no names.

    Raises:
      TypeError: `name` is not a string (as JAX).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> def f(x):
      ...     with fluxion.named_scope("layer1"):
      ...         return jnp.tanh(x)
      >>> fluxion.jit(f)(0.0)
      Array(0., dtype=float32, weak_type=True)
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope name argument must be a string, got {type(name).__name__}")
    return source_info.extend_name_stack(name)


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list]:
    """Hoists the values `fun` closes over out of it (mirrors `jax.closure_convert`).

    Traces `fun` at the example arguments' shapes and returns `(converted, consts)` such that
    `converted(*args, *consts) == fun(*args)`: `consts` are the arrays `fun` captured (including tracers of enclosing
    transformations), now explicit arguments, e.g. to pass through a `custom_vjp`.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> scale = jnp.array(3.0)
      >>> f, consts = fluxion.closure_convert(lambda x: x * scale, 1.0)
      >>> f(2.0, *consts)
      Array(6., dtype=float32, weak_type=True)
    """
    leaves, in_tree = tree_flatten(example_args)
    avals = [core.get_aval(as_value(x)) for x in leaves]
    out_tree_box = []

    def flat(*xs):
        outs, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, list(xs))))
        out_tree_box.append(out_tree)
        return outs

    closed, consts, _ = pe.trace_to_subjaxpr(flat, avals)
    n_consts = len(consts)

    def converted(*args):
        args, hoisted = args[:len(args) - n_consts], args[len(args) - n_consts:]
        arg_leaves, tree = tree_flatten(args)
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted function was traced for arguments {in_tree}, got {tree}")
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *hoisted, *[as_value(x) for x in arg_leaves])
        return tree_unflatten(out_tree_box[0], list(outs))

    return converted, list(consts)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes=()) -> Callable:
    """The transpose of the linear function `fun` (mirrors `jax.linear_transpose`).

    `primals` give the input shapes and dtypes (their values are not used). The result maps output cotangents (the
    structure of `fun`'s output) to a tuple of input cotangents, one per primal.

    Raises:
      TypeError: an input or output is not floating-point or complex; the cotangent's structure or types differ.
      NotImplementedError: `fun` applies a non-linear operation to its inputs.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> f_t = fluxion.linear_transpose(lambda x: 3.0 * x, jnp.ones(2))
      >>> f_t(jnp.array([1.0, 2.0]))
      (Array([3., 6.], dtype=float32),)
    """
    if reduce_axes:
        raise NotImplementedError("linear_transpose: reduce_axes is not supported (JAX removed it)")
    leaves, in_tree = tree_flatten(primals)
    avals = [core.get_aval(as_value(x)).strip_weak_type() for x in leaves]
    for a in avals:
        if not ad.is_differentiable_dtype(a.dtype):
            raise TypeError(f"linear_transpose only supports float and complex inputs, got {a.dtype.name}")
    out_tree_box = []

    def flat(*xs):
        outs, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, list(xs))))
        out_tree_box.append(out_tree)
        return outs

    jaxpr, consts, out_avals = pe.trace_to_jaxpr(flat, avals)
    out_tree = out_tree_box[0]

    def transposed(out_cotangent):
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match the output {out_tree}")
        cts = []
        for ct, aval in zip(ct_leaves, out_avals):
            ct = as_value(ct)
            ct_aval = core.get_aval(ct)
            if ct_aval.shape != aval.shape or ct_aval.dtype != aval.dtype:
                raise TypeError(f"linear_transpose: cotangent of type {ct_aval.str_short()} for an output of type "
                                f"{aval.str_short()}")
            cts.append(ct)
        res = ad.backward_pass(jaxpr, consts, cts)
        return tuple(tree_unflatten(in_tree, [ad.instantiate_zeros(r) for r in res]))

    return transposed
