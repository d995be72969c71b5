"""`lax.custom_linear_solve`: a linear solve whose derivatives are solves again, never derivatives of the solver.

`custom_linear_solve(matvec, b, solve, transpose_solve)` returns x = solve(matvec, b), the solution of A x = b
for the linear map A = matvec. The four functions are traced once into closed jaxprs carried by the primitive
`linear_solve_p` (JAX's `custom_linear_solve`); their closed-over values (parameters of A, of the preconditioner,
...) become its leading operands, so derivatives with respect to them flow. The rules (as JAX documents them):

* JVP: differentiating A x = b gives dA x + A dx = db, so dx = solve(db - dA x): one more bind of the primitive on
  the right-hand side db - (d/dtheta matvec_theta)(x). The solver is never differentiated (it may be an iteration).
* Transpose (linear in b): the cotangent of b is transpose_solve(vecmat, ct_x), i.e. the primitive with the roles
  of (matvec, solve) and (vecmat, transpose_solve) swapped, where vecmat is the transpose of matvec (derived by
  transposing its jaxpr). So reverse mode through an iterative solver calls the transposed solver.
* Batching: every jaxpr is batched along the operands that are batched (the right-hand side always).

Difference from JAX: `has_aux=True` is not supported (NotImplementedError).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import core
from ..core import ClosedJaxpr, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero
from ..tree_util import tree_flatten, tree_unflatten
from . import elementwise as ew
from .control_flow import _as_value, _transpose_jaxpr
from .utils import standard_primitive


class _Four(NamedTuple):
    """One entry per role (jaxprs or their const counts); vecmat and transpose_solve may be None. The primitive's
    parameters hold plain tuples (the compiler's passes rebuild tuples of sub-jaxprs); the rules view them as this."""
    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self) -> tuple:
        return (self.vecmat, self.matvec, self.transpose_solve, self.solve)


linear_solve_p = standard_primitive("custom_linear_solve", multiple_results=True)


def _split(args, const_lengths):
    consts, pos = [], 0
    for n in const_lengths:
        consts.append(list(args[pos:pos + n]))
        pos += n
    return _Four(*consts), list(args[pos:])


def _flatten_consts(consts: _Four) -> list:
    return [c for group in consts for c in group]


def _trace_linear(name: str, fn: Callable, tree, avals) -> tuple[ClosedJaxpr, list]:
    """`fn` (a pytree -> pytree map of b's structure) traced on b's abstract values: (jaxpr taking consts first,
    consts)."""
    def flat(*xs):
        out = fn(tree_unflatten(tree, list(xs)))
        leaves, out_tree = tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"custom_linear_solve: {name} must return a pytree of b's structure {tree}, got "
                            f"{out_tree}")
        return [_as_value(x) for x in leaves]

    closed, consts, out_avals = pe.trace_to_subjaxpr(flat, avals)
    for a, o in zip(avals, out_avals):
        if (a.shape, a.dtype) != (o.shape, o.dtype):
            raise TypeError(f"custom_linear_solve: {name} must return arrays of b's shapes and dtypes, got "
                            f"{o.str_short()} for {a.str_short()}")
    return closed, consts


def _run(closed: ClosedJaxpr, consts, xs) -> list:
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *consts, *xs)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """Solves A x = b with the user's `solve`, differentiated implicitly (see the module docstring).

    Args:
      matvec: x -> A x, a linear map on pytrees of b's structure (its closed-over values may be traced).
      b: the right-hand side, a pytree of arrays.
      solve: (matvec, b) -> x with matvec(x) = b; never differentiated.
      transpose_solve: (vecmat, b) -> x with vecmat(x) = b for the transposed map; needed for reverse mode
        unless `symmetric`.
      symmetric: A is symmetric: `solve` doubles as `transpose_solve` and matvec as its own transpose.
      has_aux: not supported.

    Returns:
      x, a pytree of b's structure, shapes and dtypes.

    Raises:
      TypeError: a function returns another structure, shape or dtype than b; reverse mode without
      `transpose_solve` (and not `symmetric`). NotImplementedError: for has_aux=True.
    """
    if has_aux:
        raise NotImplementedError("custom_linear_solve: has_aux=True is not supported")
    leaves, tree = tree_flatten(b)
    leaves = [_as_value(x) for x in leaves]
    avals = [core.get_aval(x).strip_weak_type() for x in leaves]
    matvec_j, matvec_c = _trace_linear("matvec", matvec, tree, avals)

    def matvec_fn(x):
        return tree_unflatten(tree, _run(matvec_j, matvec_c, tree_flatten(x)[0]))

    solve_j, solve_c = _trace_linear("solve", lambda x: solve(matvec_fn, x), tree, avals)
    if symmetric:
        vecmat_j, vecmat_c, tsolve_j, tsolve_c = matvec_j, matvec_c, solve_j, solve_c
    else:
        # vecmat(consts, y): the transpose of matvec in its vector operands, at the same consts.
        vecmat_j = _transpose_jaxpr(matvec_j, [False] * len(matvec_c) + [True] * len(avals))
        vecmat_c = matvec_c
        tsolve_j, tsolve_c = None, []
        if transpose_solve is not None:
            def vecmat_fn(y):
                return tree_unflatten(tree, _run(vecmat_j, vecmat_c, tree_flatten(y)[0]))

            tsolve_j, tsolve_c = _trace_linear("transpose_solve", lambda y: transpose_solve(vecmat_fn, y), tree,
                                               avals)
    jaxprs = (matvec_j, vecmat_j, solve_j, tsolve_j)
    consts = _Four(list(matvec_c), list(vecmat_c), list(solve_c), list(tsolve_c))
    lengths = tuple(len(c) for c in consts)
    out = linear_solve_p.bind(*_flatten_consts(consts), *leaves, const_lengths=lengths, jaxprs=jaxprs)
    return tree_unflatten(tree, out)


def _linear_solve_abstract_eval(*args, const_lengths, jaxprs):
    _, b = _split(args, const_lengths)
    return [a.strip_weak_type() for a in b]


abstract_eval_rules[linear_solve_p] = _linear_solve_abstract_eval


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
    jaxprs = _Four(*jaxprs)
    x = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=tuple(jaxprs))
    consts, _ = _split(primals, const_lengths)
    consts_dot, b_dot = _split(tangents, const_lengths)
    b_dot = [ad.instantiate_zeros(t) for t in b_dot]
    if all(type(t) is Zero for t in consts_dot.matvec):
        rhs = b_dot
    else:  # rhs = db - dA x, with dA x the tangent of matvec in its consts at the solution
        x_zeros = [Zero(core.get_aval(v).strip_weak_type()) for v in x]
        _, dA_x = ad.jvp_flat(lambda *a: _run(jaxprs.matvec, [], a), consts.matvec + list(x),
                              list(consts_dot.matvec) + x_zeros)
        rhs = [t if type(d) is Zero else ew.sub(t, d) for t, d in zip(b_dot, dA_x)]
    # The tangents of the solvers' own consts are ignored: the solution does not depend on how it is found.
    x_dot = linear_solve_p.bind(*_flatten_consts(consts), *rhs, const_lengths=const_lengths, jaxprs=tuple(jaxprs))
    return x, x_dot


ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
    jaxprs = _Four(*jaxprs)
    if jaxprs.transpose_solve is None:
        raise TypeError("custom_linear_solve: reverse-mode differentiation needs transpose_solve (or "
                        "symmetric=True)")
    consts, b = _split(args, const_lengths)
    if any(ad.is_undefined_primal(c) for c in _flatten_consts(consts)):
        raise NotImplementedError("custom_linear_solve is linear only in b, not in the values its functions "
                                  "close over")
    cts = [ad.instantiate_zeros(c) for c in cts]
    swapped = _Four(*consts.transpose())
    ct_b = linear_solve_p.bind(*_flatten_consts(swapped), *cts, const_lengths=_Four(*const_lengths).transpose(),
                               jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(ct_b)


ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose


def _linear_solve_batch_rule(vals, dims, *, const_lengths, jaxprs, axis_size=None, axis_name=None):
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    consts, b = _split(vals, const_lengths)
    cdims, bdims = _split(dims, const_lengths)
    b = [batching.moveaxis(v, d, 0, size) for v, d in zip(b, bdims)]  # the right-hand side is always batched
    new_jaxprs, new_consts = [], []
    for j, cs, ds in zip(jaxprs, consts, cdims):
        if j is None:
            new_jaxprs.append(None)
            new_consts.append([])
            continue
        in_b = [d is not None for d in ds] + [True] * len(b)
        new_jaxprs.append(batching.batch_jaxpr(j, size, in_b, True, axis_name)[0])
        new_consts.append([batching.moveaxis(c, d, 0, size) if d is not None else c for c, d in zip(cs, ds)])
    outs = linear_solve_p.bind(*_flatten_consts(_Four(*new_consts)), *b, const_lengths=const_lengths,
                               jaxprs=tuple(new_jaxprs))
    return outs, [0] * len(outs)


_linear_solve_batch_rule.needs_axis = True
batching.primitive_batchers[linear_solve_p] = _linear_solve_batch_rule
