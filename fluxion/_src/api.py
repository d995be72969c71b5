"""The public transformations: grad, value_and_grad, jvp, vjp, linearize, jacfwd, jacrev, hessian, vmap, jit,
make_jaxpr, eval_shape. Pytrees are flattened here, once, so the interpreters only see flat lists of values.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import core, dtypes
from .api_util import arg_names, as_output, as_value, fun_name, fun_src
from .core import Array, ShapedArray
from .grad_cache import NOT_CACHED, EagerGradCache
from .interpreters import ad, batching
from .interpreters import partial_eval as pe
from .lax import elementwise as ew
from .pure_functions import register_wrapper
from .traceback_util import api_boundary
from .tree_util import (
    register_pytree_node,
    tree_broadcast_prefix,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
)

# --------------------------------------------------------------------------------------------------------------
# Argument helpers
# --------------------------------------------------------------------------------------------------------------

def _argnums_tuple(argnums: int | Sequence[int], nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise TypeError(f"{fname}: argnums={argnums} is out of range for a function called with {nargs} "
                            "positional arguments")
    return tuple(n % nargs for n in nums)


def _split_argnums(fun: Callable, argnums, args: tuple, kwargs: dict, fname: str, check_inexact: bool = True,
                   holomorphic: bool = False, forward: bool = False):
    """Selects the differentiated arguments: returns (argnum tuple, their values, f of just those values).

    Raises:
      TypeError: argnums out of range, or (check_inexact) an integer/bool leaf among the selected arguments.
    """
    nums = _argnums_tuple(argnums, len(args), fname)
    dyn = tuple(args[i] for i in nums)
    if check_inexact:
        for i, a in zip(nums, dyn):
            for leaf in tree_flatten(a)[0]:
                _check_differentiable_input(as_value(leaf), fname, i, holomorphic, forward)

    def f_partial(*vals):
        full = list(args)
        for i, v in zip(nums, vals):
            full[i] = v
        return fun(*full, **kwargs)

    return nums, dyn, f_partial


def _check_scalar_output(out: Any, fname: str, holomorphic: bool = False) -> None:
    aval = core.get_aval(out)
    if aval.shape != ():
        raise TypeError(f"{fname} requires scalar output, got output of shape {aval.shape} (dtype {aval.dtype.name}). "
                        "For vector-valued functions use jax.vjp, jax.jacrev or jax.jacfwd, or reduce the output "
                        "(e.g. .sum()) before differentiating.")
    _check_output_dtype(aval, fname, holomorphic)


def _check_output_dtype(aval: ShapedArray, fname: str, holomorphic: bool) -> None:
    """JAX's rule for reverse-mode outputs: real floats, or complex with `holomorphic=True` (and only then)."""
    if holomorphic:
        if not dtypes.is_complex(aval.dtype):
            raise TypeError(f"{fname} with holomorphic=True requires outputs with complex dtype, but got "
                            f"{aval.dtype.name}.")
    elif dtypes.is_complex(aval.dtype):
        raise TypeError(f"{fname} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but "
                        f"got {aval.dtype.name}. For holomorphic differentiation, pass holomorphic=True. For "
                        "differentiation of non-holomorphic functions involving complex outputs, use jax.vjp directly.")
    elif not dtypes.is_inexact(aval.dtype):
        raise TypeError(f"{fname} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but "
                        f"got {aval.dtype.name}. Differentiate a floating-point result.")


def _check_differentiable_input(x: Any, fname: str, argnum: int, holomorphic: bool = False,
                                forward: bool = False) -> None:
    """JAX's rules for differentiated inputs: complex with `holomorphic=True`; otherwise inexact (reverse mode) or
    real floating (`jacfwd`)."""
    aval = core.get_aval(x)
    if holomorphic:
        if not dtypes.is_complex(aval.dtype):
            raise TypeError(f"{fname} with holomorphic=True requires inputs with complex dtype, but got "
                            f"{aval.dtype.name}.")
        return
    if forward and dtypes.is_complex(aval.dtype):
        raise TypeError(f"{fname} requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but "
                        f"got {aval.dtype.name}. For holomorphic differentiation, pass holomorphic=True. For "
                        "differentiation of non-holomorphic functions involving complex inputs or integer inputs, use "
                        "jax.jvp directly.")
    if not dtypes.is_inexact(aval.dtype):
        raise TypeError(f"{fname} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                        f"np.inexact), but got {aval.dtype.name} for argument {argnum}. Integer inputs have no "
                        "gradient: convert them with x.astype(jnp.float32) before differentiating, or leave them out "
                        "of argnums (or pass allow_int=True).")


# --------------------------------------------------------------------------------------------------------------
# Forward and reverse mode
# --------------------------------------------------------------------------------------------------------------

@api_boundary
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """Forward-mode derivative: returns (fun(*primals), the directional derivative along `tangents`).

    Args:
      fun: a function of pytrees of arrays.
      primals, tangents: tuples of pytrees of the same structure, shapes and dtypes.
      has_aux: fun returns (output, aux); aux is returned undifferentiated as a third result.

    Raises:
      TypeError: primals and tangents differ in structure, shape or dtype.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.jvp(jnp.sin, (0.0,), (2.0,))
      (Array(0., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primal and tangent arguments must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    flat_p, tree_p = tree_flatten(tuple(primals))
    flat_t, tree_t = tree_flatten(tuple(tangents))
    if tree_p != tree_t:
        raise TypeError(f"jvp: primal and tangent arguments must have the same tree structure; got {tree_p} and "
                        f"{tree_t}")
    flat_p = [as_value(p) for p in flat_p]
    flat_t = [as_value(t) for t in flat_t]
    for p, t in zip(flat_p, flat_t):
        pa, ta = core.get_aval(p), core.get_aval(t)
        if pa.shape != ta.shape:
            raise ValueError(f"jvp: primal and tangent shapes must match, got {pa.shape} and {ta.shape}")
        if dtypes.is_inexact(pa.dtype) and pa.dtype != ta.dtype:
            raise TypeError(f"jvp: primal and tangent dtypes must match, got {pa.dtype.name} and {ta.dtype.name}")
    flat_fun, box = _flatten_fun_with_aux(fun, tree_p, has_aux)
    tangents_in = [t if dtypes.is_inexact(core.get_aval(p).dtype) else ad.Zero(core.get_aval(p))
                   for p, t in zip(flat_p, flat_t)]
    out_p, out_t = ad.jvp_flat(flat_fun, flat_p, tangents_in)
    out_tree, n_out, aux_tree = box
    out_t = [ad.instantiate_zeros(t) for t in out_t[:n_out]]
    res = (tree_unflatten(out_tree, out_p[:n_out]), tree_unflatten(out_tree, out_t))
    return res + (tree_unflatten(aux_tree, out_p[n_out:]),) if has_aux else res


@api_boundary
def linearize(fun: Callable, *primals: Any, has_aux: bool = False):
    """Returns (fun(*primals), f_jvp) where f_jvp(*tangents) evaluates the derivative at `primals` (linear map).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> y, f_jvp = fluxion.linearize(jnp.exp, 0.0)
      >>> y, f_jvp(3.0)
      (Array(1., dtype=float32, weak_type=True), Array(3., dtype=float32, weak_type=True))
    """
    flat_p, tree_p = tree_flatten(primals)
    flat_p = [as_value(p) for p in flat_p]
    flat_fun, box = _flatten_fun_with_aux(fun, tree_p, has_aux)
    out_p, lin = ad.linearize_flat(flat_fun, flat_p)
    out_tree, n_out, aux_tree = box

    def f_jvp(*tangents):
        flat_t, tree_t = tree_flatten(tangents)
        if tree_t != tree_p:
            raise TypeError(f"linearized function expects tangents of structure {tree_p}, got {tree_t}")
        return tree_unflatten(out_tree, lin(*[as_value(t) for t in flat_t])[:n_out])

    res = (tree_unflatten(out_tree, out_p[:n_out]), f_jvp)
    return res + (tree_unflatten(aux_tree, out_p[n_out:]),) if has_aux else res


@api_boundary
def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes=()):
    """Reverse mode: returns (fun(*primals), f_vjp) with f_vjp(cotangent) -> tuple of input cotangents.

    The VJP is the transpose of the linearized function (`linearize` then transpose the linear jaxpr).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> y, f_vjp = fluxion.vjp(lambda x: x * jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
      >>> y, f_vjp(jnp.array([1.0, 1.0]))
      (Array([3., 8.], dtype=float32), (Array([1., 2.], dtype=float32),))
    """
    _check_reduce_axes(reduce_axes, "vjp")
    flat_p, tree_p = tree_flatten(primals)
    flat_p = [as_value(p) for p in flat_p]
    flat_fun, box = _flatten_fun_with_aux(fun, tree_p, has_aux)
    out_p, lin = ad.linearize_flat(flat_fun, flat_p)
    out_tree, n_out, aux_tree = box
    out_p, aux_leaves = out_p[:n_out], out_p[n_out:]
    f_vjp = VJPFunction(lin.jaxpr, lin.consts, tree_p, out_tree,
                        tuple(core.get_aval(o) for o in out_p), tuple(core.get_aval(a) for a in aux_leaves),
                        tuple(core.get_aval(p) for p in flat_p))
    res = (tree_unflatten(out_tree, out_p), f_vjp)
    return res + (tree_unflatten(aux_tree, aux_leaves),) if has_aux else res


class VJPFunction:
    """The function `vjp` returns: `f_vjp(cotangent)` -> tuple of input cotangents.

    As in JAX it is a pytree whose leaves are the residuals (the values saved by the forward pass), so it can be
    passed to `jit` or stored in a pytree; its structure holds the linear program that transposes them.
    """

    __slots__ = ("jaxpr", "residuals", "in_tree", "out_tree", "out_avals", "aux_avals", "in_avals")

    def __init__(self, jaxpr, residuals, in_tree, out_tree, out_avals, aux_avals, in_avals):
        self.jaxpr = jaxpr
        self.residuals = list(residuals)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.aux_avals = aux_avals
        self.in_avals = in_avals

    def __call__(self, cotangent):
        flat_ct, tree_ct = tree_flatten(cotangent)
        if tree_ct != self.out_tree:
            raise TypeError(f"vjp: cotangent structure {tree_ct} does not match the function output {self.out_tree}")
        cts = []
        for ct, a in zip(flat_ct, self.out_avals):
            ct = as_value(ct)
            if core.get_aval(ct).shape != a.shape:
                raise ValueError(f"vjp: cotangent shape {core.get_aval(ct).shape} does not match the output shape "
                                 f"{a.shape}")
            cts.append(ct)
        cts_in = ad.backward_pass(self.jaxpr, self.residuals, cts + [ad.Zero(a) for a in self.aux_avals])
        outs = [ad.zeros_like_aval(a.strip_weak_type()) if type(ct) is ad.Zero else ct
                for ct, a in zip(cts_in, self.in_avals)]
        return tree_unflatten(self.in_tree, outs)

    def __repr__(self) -> str:
        return f"<vjp function of {len(self.in_avals)} inputs, {len(self.residuals)} residuals>"


register_pytree_node(
    VJPFunction,
    lambda f: (f.residuals, (f.jaxpr, f.in_tree, f.out_tree, f.out_avals, f.aux_avals, f.in_avals)),
    lambda aux, residuals: VJPFunction(aux[0], residuals, *aux[1:]))


def _flatten_fun_with_aux(fun: Callable, in_tree, has_aux: bool):
    """Flat version of `fun`; with has_aux, the aux leaves are appended to the outputs (then split off), so
    they leave the transformation as ordinary values instead of escaping as tracers."""
    box: list = [None, 0, None]

    def flat_fun(*xs):
        out = fun(*tree_unflatten(in_tree, xs))
        aux_leaves = []
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError("with has_aux=True the function must return a pair (output, auxiliary data), got "
                                f"{type(out).__name__}")
            out, aux = out
            aux_leaves, box[2] = tree_flatten(aux)
        flat_out, box[0] = tree_flatten(out)
        box[1] = len(flat_out)
        return [as_value(o) for o in flat_out] + [as_value(a) for a in aux_leaves]

    return flat_fun, box


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False, reduce_axes=()) -> Callable:
    """Returns a function computing (fun(*args), the gradient of fun with respect to args[argnums]).

    fun must return a scalar (or (scalar, aux) with has_aux). Gradients have the structure of the selected
    arguments (a tuple of them when argnums is a tuple).

    Eager calls re-run `fun` each time, except when fluxion can prove that `fun` reads nothing but its arguments
    and values that have not changed (no side effects, no mutable globals or closures; `_src/pure_functions.py`):
    then the gradient computation of a given argument signature is traced on its second call and replayed after,
    with the same results bit for bit (`_src/grad_cache.py`). Functions that branch on argument values, print,
    mutate state or read mutable objects always re-run.

    Raises:
      TypeError: non-scalar or integer output; integer inputs; argnums out of range.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> loss, g = fluxion.value_and_grad(lambda w: jnp.sum(w ** 2))(jnp.array([1.0, 2.0]))
      >>> loss, g
      (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
    """
    fname = "value_and_grad" if not getattr(value_and_grad, "_as_grad", False) else "grad"
    _check_reduce_axes(reduce_axes, fname)

    def compute(*args, **kwargs):
        _, diff_args, f_partial = _split_argnums(fun, argnums, args, kwargs, fname, check_inexact=not allow_int,
                                                 holomorphic=holomorphic)
        if has_aux:
            out, f_vjp, aux = vjp(f_partial, *diff_args, has_aux=True)
        else:
            out, f_vjp = vjp(f_partial, *diff_args)
        _check_scalar_output(out, fname, holomorphic)
        ct = core.Array(np.ones((), core.get_aval(out).dtype))
        grads = _with_primal_weak_types(f_vjp(ct), diff_args)
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((out, aux), g) if has_aux else (out, g)

    # Eager calls of a function proven pure replay a traced program (grad_cache.py); others run `compute`.
    cache = EagerGradCache(fun, lambda nargs: _argnums_tuple(argnums, nargs, fname))

    @functools.wraps(fun)
    def vg(*args, **kwargs):
        res = cache.call(compute, args, kwargs)
        return compute(*args, **kwargs) if res is NOT_CACHED else res

    wrapped = api_boundary(vg)
    register_wrapper(wrapped, fun)
    return wrapped


def _with_primal_weak_types(grads, primals):
    """Each gradient leaf with the weak type of its primal (as JAX: grad(f)(1.0) is weakly typed whatever f
    computes, and the gradient at a strongly typed input is strong), where the dtypes agree."""
    flat_g, tree_g = tree_flatten(grads)
    flat_p = [core.get_aval(as_value(p)) for p in tree_flatten(primals)[0]]
    if len(flat_g) != len(flat_p):
        return grads
    out = [ew._convert_weak(g, a.dtype, a.weak_type) if core.get_aval(g).dtype == a.dtype else g
           for g, a in zip(flat_g, flat_p)]
    return tree_unflatten(tree_g, out)


def _check_reduce_axes(reduce_axes, fname: str) -> None:
    if reduce_axes:
        raise NotImplementedError(f"{fname}: reduce_axes is not supported (JAX removed it; sum the gradient over the "
                                  "named axis with lax.psum instead)")


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()) -> Callable:
    """Returns a function computing the gradient of scalar-valued `fun` with respect to args[argnums].

    Example: grad(lambda x: x ** 3 + 2 * x)(2.0) == 14.0.

    Raises:
      TypeError: the output is not a scalar float (names its shape), or an input is an integer.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.grad(lambda x: x ** 3 + 2 * x)(2.0)
      Array(14., dtype=float32, weak_type=True)
      >>> fluxion.grad(lambda w, x: jnp.sum(w * x), argnums=(0, 1))(jnp.ones(2), jnp.array([3.0, 4.0]))
      (Array([3., 4.], dtype=float32), Array([1., 1.], dtype=float32))
    """
    _check_reduce_axes(reduce_axes, "grad")
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def g(*args, **kwargs):
        try:
            res = vg(*args, **kwargs)
        except TypeError as e:
            msg = str(e)
            msg = "grad" + msg[len("value_and_grad"):] if msg.startswith("value_and_grad") else msg
            raise type(e)(msg).with_traceback(e.__traceback__) from None
        if has_aux:
            (_, aux), gr = res
            return gr, aux
        return res[1]

    wrapped = api_boundary(g)
    register_wrapper(wrapped, fun)
    return wrapped


def _std_basis(flat_avals: list[ShapedArray]) -> list:
    """Rows of the identity over all flat inputs: one stacked array per input, shape (N,) + input shape."""
    sizes = [a.size for a in flat_avals]
    total = int(sum(sizes))
    eye = np.eye(total, dtype=np.float64)
    out, start = [], 0
    for a, s in zip(flat_avals, sizes):
        block = eye[:, start:start + s].reshape((total,) + a.shape).astype(a.dtype)
        out.append(core.Array(block))
        start += s
    return out


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """Jacobian by forward mode: vmap of jvp over the standard basis. Output shape: out.shape + in.shape.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.jacfwd(lambda x: jnp.array([x[0] * x[1], jnp.sin(x[0])]))(jnp.array([0.0, 2.0]))
      Array([[2., 0.],
             [1., 0.]], dtype=float32)
    """
    def jac(*args, **kwargs):
        _, dyn, f_partial = _split_argnums(fun, argnums, args, kwargs, "jacfwd", holomorphic=holomorphic,
                                           forward=True)
        flat, tree = tree_flatten(dyn)
        avals = [core.get_aval(as_value(x)) for x in flat]
        basis = _std_basis(avals)

        def push(*t_flat):
            res = jvp(f_partial, dyn, tree_unflatten(tree, t_flat), has_aux=has_aux)
            return (res[1], res[2]) if has_aux else res[1]

        if has_aux:
            jac_t, aux = vmap(push, in_axes=0, out_axes=(-1, None))(*basis)
        else:
            jac_t = vmap(push, in_axes=0, out_axes=-1)(*basis)
        jac_tree = tree_map(lambda j: _split_last(j, avals), jac_t)
        if isinstance(argnums, int):
            jac_tree = tree_map(lambda parts: tree_unflatten(tree, parts)[0], jac_tree,
                                is_leaf=lambda x: isinstance(x, list))
        else:
            jac_tree = tree_map(lambda parts: tree_unflatten(tree, parts), jac_tree,
                                is_leaf=lambda x: isinstance(x, list))
        return (jac_tree, aux) if has_aux else jac_tree

    return api_boundary(jac)


def _split_last(j, avals):
    """Splits a Jacobian's trailing flat-input axis back into one block per input, reshaped to input shapes."""
    from .lax import structural as st
    out_shape = core.get_aval(j).shape[:-1]
    parts, start = [], 0
    for a in avals:
        piece = st.slice_in_dim(j, start, start + a.size, 1, len(out_shape))
        parts.append(st.reshape(piece, out_shape + a.shape))
        start += a.size
    return parts


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """Jacobian by reverse mode: vmap of vjp over the standard basis of the output. Shape: out.shape + in.shape.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.jacrev(lambda x: x ** 2)(jnp.array([1.0, 3.0]))
      Array([[2., 0.],
             [0., 6.]], dtype=float32)
    """
    def jac(*args, **kwargs):
        _, dyn, f_partial = _split_argnums(fun, argnums, args, kwargs, "jacrev", check_inexact=not allow_int,
                                           holomorphic=holomorphic)
        if has_aux:
            out, f_vjp, aux = vjp(f_partial, *dyn, has_aux=True)
        else:
            out, f_vjp = vjp(f_partial, *dyn)
        flat_out, out_tree = tree_flatten(out)
        out_avals = [core.get_aval(o) for o in flat_out]
        for a in out_avals:
            _check_output_dtype(a, "jacrev", holomorphic)
        basis = _std_basis(out_avals)
        total = basis[0].shape[0] if basis else 0

        def pull(*ct_flat):
            return f_vjp(tree_unflatten(out_tree, ct_flat))

        cts = vmap(pull)(*basis)  # tuple over dyn args of pytrees with leading axis `total`
        from .lax import structural as st

        def per_output(ct_leaf):
            # ct_leaf: (total,) + in_shape -> split total into out blocks
            res, start = [], 0
            in_shape = core.get_aval(ct_leaf).shape[1:]
            for a in out_avals:
                piece = st.slice_in_dim(ct_leaf, start, start + a.size, 1, 0)
                res.append(st.reshape(piece, a.shape + in_shape))
                start += a.size
            return res

        del total
        per_arg = [tree_map(per_output, c) for c in cts]
        # Arrange as out_tree of (arg structure)
        result_by_out = []
        for k in range(len(out_avals)):
            args_k = tuple(tree_map(lambda parts, k=k: parts[k], pa, is_leaf=lambda x: isinstance(x, list))
                           for pa in per_arg)
            result_by_out.append(args_k[0] if isinstance(argnums, int) else args_k)
        res = tree_unflatten(out_tree, result_by_out)
        return (res, aux) if has_aux else res

    return api_boundary(jac)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Hessian, as jacfwd(jacrev(fun)).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.hessian(lambda x: x[0] ** 2 * x[1])(jnp.array([1.0, 2.0]))
      Array([[4., 2.],
             [2., 0.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums, has_aux=has_aux,
                  holomorphic=holomorphic)


# --------------------------------------------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------------------------------------------

def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None, axis_size: int | None = None,
         spmd_axis_name: Any = None) -> Callable:
    """Vectorizes `fun` over a mapped axis of its inputs.

    Args:
      fun: function of pytrees of arrays.
      in_axes: an int, None, or a pytree prefix of the positional arguments (a tuple/list with one entry per
        argument) giving the mapped axis of each input (None = not mapped). Keyword arguments are always mapped
        along axis 0, as in JAX.
      out_axes: int, None or pytree prefix of the output: where the mapped axis goes.
      axis_name: a name for the mapped axis, for collectives (`lax.psum(x, axis_name)`).
      axis_size: the size of the mapped axis when no input is mapped.

    Raises:
      ValueError: inputs disagree on the mapped axis size (all sizes are listed), or in_axes does not match.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> mat_vec = fluxion.vmap(jnp.dot, in_axes=(0, None))
      >>> mat_vec(jnp.array([[1, 1, 2], [1, 0, 0]]), jnp.array([2, 1, 1]))
      Array([5, 2], dtype=int32)
    """
    if isinstance(in_axes, list) and not any(isinstance(x, (list, tuple, dict)) for x in in_axes):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, list, dict))):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                        f"arguments passed to the function, but got {in_axes}.")

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes specification must be a tree prefix of the corresponding value, got "
                             f"specification {in_axes} for value tree {tree_structure(args)}: in_axes has "
                             f"{len(in_axes)} entries but the function was called with {len(args)} positional "
                             "arguments.")
        flat_args, in_tree = tree_flatten(args)
        axes_prefix = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args) if not isinstance(
            in_axes, (list, dict)) else in_axes
        flat_axes = tree_broadcast_prefix(axes_prefix, args, is_leaf=lambda x: x is None)
        # Keyword arguments are always mapped along their leading axis (as in JAX: in_axes covers positional ones).
        n_positional = len(flat_args)
        kw_leaves, kw_tree = tree_flatten(kwargs)
        flat_args = flat_args + kw_leaves
        flat_axes = list(flat_axes) + [0] * len(kw_leaves)
        # As in JAX, unmapped arguments are passed to the function untouched (a Python int stays an int).
        flat_args = [as_value(a) if ax is not None else a for a, ax in zip(flat_args, flat_axes)]
        sizes = set()
        norm_axes = []
        for a, ax in zip(flat_args, flat_axes):
            if ax is None:
                norm_axes.append(None)
                continue
            nd = core.get_aval(a).ndim
            if not -nd <= ax < nd:
                raise ValueError(f"vmap was requested to map its argument along axis {ax}, which implies that its "
                                 f"rank should be at least {ax + 1 if ax >= 0 else -ax}, but is only {nd} (its "
                                 f"shape is {core.get_aval(a).shape})")
            ax %= nd
            norm_axes.append(ax)
            sizes.add(core.get_aval(a).shape[ax])
        if len(sizes) > 1:
            detail = ", ".join(f"axis {ax} of an argument of shape {core.get_aval(a).shape}"
                               for a, ax in zip(flat_args, norm_axes) if ax is not None)
            raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped: {sorted(sizes)} ({detail})")
        if not sizes:
            if axis_size is None:
                raise ValueError("vmap must have at least one non-None value in in_axes (or pass axis_size)")
            size = axis_size
        else:
            size = sizes.pop()
            if axis_size is not None and axis_size != size:
                raise ValueError(f"vmap: axis_size={axis_size} does not match the mapped axis size {size}")
        out_tree_box = []

        def flat_fun(*xs):
            out = fun(*tree_unflatten(in_tree, xs[:n_positional]), **tree_unflatten(kw_tree, xs[n_positional:]))
            flat_out, out_tree = tree_flatten(out)
            out_tree_box.append((out_tree, out))
            return [as_output(o, fun, "vmap") for o in flat_out]

        def out_dims_fn(n):
            out_tree, out = out_tree_box[0]
            dims = tree_broadcast_prefix(out_axes, out, is_leaf=lambda x: x is None) if not isinstance(
                out_axes, (int, type(None))) else [out_axes] * n
            return dims

        outs = batching.vmap_flat(flat_fun, flat_args, norm_axes, size, axis_name, out_dims_fn, spmd_axis_name)
        return tree_unflatten(out_tree_box[0][0], outs)

    return api_boundary(batched)


# --------------------------------------------------------------------------------------------------------------
# make_jaxpr / eval_shape
# --------------------------------------------------------------------------------------------------------------

def _abstractify(x: Any) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), getattr(x, "weak_type", False))
    return core.get_aval(as_value(x))


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (`jax.ShapeDtypeStruct`), e.g. as an `eval_shape` result."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type: bool = False, sharding=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape and self.dtype == other.dtype
                and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), return_shape: bool = False,
               abstracted_axes=None) -> Callable:
    """Returns a function that traces `fun` on its arguments and returns the `ClosedJaxpr` (printable IR).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> print(fluxion.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
      { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        dyn_idx = [i for i in range(len(args)) if i not in static]
        dyn_args = [args[i] for i in dyn_idx]
        flat, in_tree = tree_flatten((dyn_args, kwargs))
        avals = [_abstractify(x) for x in flat]
        box = []

        def flat_fun(*xs):
            dargs, dkw = tree_unflatten(in_tree, xs)
            full = list(args)
            for i, v in zip(dyn_idx, dargs):
                full[i] = v
            out = fun(*full, **dkw)
            fo, out_tree = tree_flatten(out)
            box.append((out_tree, out))
            return [as_output(o, fun, "make_jaxpr") for o in fo]

        info = pe.DebugInfo("make_jaxpr", fun_name(fun), fun_src(fun), arg_names(fun, dyn_args, kwargs))
        closed, out_avals = pe.trace_to_closed_jaxpr(flat_fun, avals, info)
        if return_shape:
            shapes = tree_unflatten(box[0][0], [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in out_avals])
            return closed, shapes
        return closed

    return api_boundary(make)


@api_boundary
def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The output shapes/dtypes of `fun(*args)` as a pytree of `ShapeDtypeStruct`, without computing anything.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.eval_shape(lambda a, b: a @ b, jnp.ones((8, 3)), jnp.ones((3, 5)))
      ShapeDtypeStruct(shape=(8, 5), dtype=float32)
    """
    flat, in_tree = tree_flatten((args, kwargs))
    avals = [_abstractify(x) for x in flat]
    box = []

    def flat_fun(*xs):
        a, k = tree_unflatten(in_tree, xs)
        out = fun(*a, **k)
        fo, out_tree = tree_flatten(out)
        box.append(out_tree)
        return [as_output(o, fun, "eval_shape") for o in fo]

    _, out_avals = pe.trace_to_closed_jaxpr(flat_fun, avals)
    return tree_unflatten(box[0], [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in out_avals])


def block_until_ready(x: Any) -> Any:
    """Returns `x` (computations on the NumPy backend are complete when they return).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fluxion.block_until_ready({"w": jnp.ones(2)})
      {'w': Array([1., 1.], dtype=float32)}
    """
    return x


def device_get(x: Any) -> Any:
    """Converts every Array leaf of `x` to a NumPy array.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> out = fluxion.device_get({"w": jnp.arange(3)})
      >>> type(out["w"]).__name__, out["w"].tolist()
      ('ndarray', [0, 1, 2])
    """
    return tree_map(lambda v: np.asarray(v) if isinstance(v, Array) else v, x)


def device_put(x: Any, device=None, *, donate: bool = False, may_alias=None) -> Any:
    """Converts every array-like leaf of `x` to an Array (copying NumPy buffers).

    `device` may be a Device, a Sharding (`NamedSharding`, `SingleDeviceSharding`), a PartitionSpec (resolved
    against the current mesh) or a tree prefix of them; the result's `.sharding` is then that sharding and its
    `.addressable_shards` are views of the one global buffer (values never change). Raises ValueError when a
    sharding does not fit a leaf's shape (rank, or a dimension not divisible by its number of blocks).

    Examples:
      >>> import numpy as np
      >>> import fluxion
      >>> x = fluxion.device_put(np.arange(3.0))
      >>> type(x).__name__, x.dtype
      ('Array', dtype('float32'))
    """
    if device is not None:
        from .placement import device_put_sharded_value
        return device_put_sharded_value(device_put(x), device)
    return tree_map(lambda v: as_value(v) if isinstance(v, (np.ndarray, np.generic, Array, bool, int, float,
                                                              complex)) else v, x)
