"""Structured control flow: `cond`/`switch`, `while_loop`, `fori_loop`, `scan`, `map`.

Each is a primitive whose parameters carry closed jaxprs (the traced bodies), with a rule for every
transformation (Autodidax, Part 5). The JVP rules of `cond` and `scan` split the differentiated body into a primal
part and a linear tangent part (`partial_eval_jaxpr`), so reverse mode can transpose the tangent part; `while_loop`
supports forward mode only, and reverse mode raises JAX's error.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import core, dtypes
from ..core import ClosedJaxpr, Jaxpr, ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero
from ..tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from . import elementwise as ew
from . import structural as st
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Shared jaxpr transformations
# --------------------------------------------------------------------------------------------------------------

def _as_value(x):
    if isinstance(x, (core.Array, core.Tracer)):
        return x
    return core.to_array(x)


def _trace_fun(fun: Callable, in_avals: Sequence[ShapedArray]) -> tuple[ClosedJaxpr, list, list]:
    """Traces a flat body into a closed jaxpr taking (consts..., args...) plus its consts and out avals."""
    return pe.trace_to_subjaxpr(fun, in_avals)


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate: Sequence[bool]
              ) -> tuple[ClosedJaxpr, list[bool]]:
    """The JVP of a closed jaxpr: inputs (primals..., nonzero tangents...), outputs (primals..., tangents...).

    Tangent outputs are emitted for outputs whose tangent is nonzero or that are in `instantiate`.
    """
    n_in = len(closed.in_avals)
    out_nz: list[bool] = []

    def fun(*args):
        primals = list(args[:n_in])
        it = iter(args[n_in:])
        tangents = [next(it) if nz else Zero(a) for nz, a in zip(nonzeros, closed.in_avals)]
        p_out, t_out = ad.jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tangents)
        out_nz.clear()
        ts = []
        for t, inst in zip(t_out, instantiate):
            if type(t) is Zero and not inst:
                out_nz.append(False)
            else:
                out_nz.append(True)
                ts.append(ad.instantiate_zeros(t))
        return list(p_out) + ts

    in_avals = list(closed.in_avals) + [a for a, nz in zip(closed.in_avals, nonzeros) if nz]
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, in_avals)
    return ClosedJaxpr(jaxpr, consts), list(out_nz)


def _transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool], ct_avals_fn=None) -> ClosedJaxpr:
    """Builds fun(nonlinear..., cts_out...) -> cts for the linear inputs (zeros instantiated)."""
    jaxpr = closed.jaxpr
    lin_vars = [v for v, l in zip(jaxpr.invars, linear) if l]
    nonlin_vars = [v for v, l in zip(jaxpr.invars, linear) if not l]
    rearranged = Jaxpr(jaxpr.constvars + nonlin_vars, lin_vars, jaxpr.outvars, jaxpr.eqns)
    n_nonlin = len(nonlin_vars)

    def fun(*args):
        nonlin, cts = args[:n_nonlin], args[n_nonlin:]
        res = ad.backward_pass(rearranged, list(closed.consts) + list(nonlin), list(cts))
        return [ad.instantiate_zeros(r) for r in res]

    in_avals = [v.aval for v in nonlin_vars] + [a.strip_weak_type() for a in closed.out_avals]
    j, consts, _ = pe.trace_to_jaxpr(fun, in_avals)
    return ClosedJaxpr(j, consts)


def _close_consts(closed: ClosedJaxpr) -> Jaxpr:
    """Inlines a closed jaxpr's (concrete) consts as leading equations-free constvars -> invars-free form."""
    if not closed.consts:
        return closed.jaxpr
    consts = closed.consts

    def fun(*args):
        return core.eval_jaxpr(closed.jaxpr, consts, *args)

    j, c, _ = pe.trace_to_jaxpr(fun, closed.in_avals)
    if c:
        # Constants that cannot be literals stay as constvars; re-trace them as invars-free by closure over arrays.
        return _bind_consts_as_literals(j, c)
    return j


def _bind_consts_as_literals(j: Jaxpr, consts: list) -> Jaxpr:
    """Replaces constvars by equations producing them (broadcasts of the values), keeping the jaxpr self-contained."""
    eqns = []
    for v, c in zip(j.constvars, consts):
        raw = np.asarray(getattr(c, "_value", c))
        lit = core.Literal(core.Array(np.asarray(raw.reshape(-1)[0] if raw.size else 0, raw.dtype)),
                           ShapedArray((), raw.dtype))
        if raw.size and np.all(raw == raw.reshape(-1)[0]):
            eqns.append(core.JaxprEqn(st.broadcast_in_dim_p, [lit], [v],
                                      dict(shape=raw.shape, broadcast_dimensions=())))
        else:
            eqns.append(core.JaxprEqn(const_p, [], [v], dict(value=_HashableArray(raw))))
    return Jaxpr([], j.invars, j.outvars, eqns + j.eqns)


class _HashableArray:
    """A constant array carried as an equation parameter (printed by shape)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"<const {self.value.dtype}{list(self.value.shape)}>"


const_p = standard_primitive("const", weak_type="never")


def _const_abstract_eval(*, value):
    return ShapedArray(value.value.shape, dtypes.canonicalize_dtype(value.value.dtype))


abstract_eval_rules[const_p] = _const_abstract_eval
ad.defjvp_zero(const_p)


def _weak_types_of(out_avals_of):
    """The weak-type rule of a control-flow primitive: each output is weakly typed exactly when the traced body says
    so (JAX keeps the weak type of a loop carry the body leaves weak, and of branch outputs weak in every branch;
    the callers have already made the carry's input and output weak types agree)."""
    def rule(args, params):
        return [a.weak_type for a in out_avals_of(params)]
    return rule


def _cond_out_avals(params):
    return params["branches"][0].out_avals


def _while_out_avals(params):
    return params["body_jaxpr"].out_avals


def _scan_out_avals(params):
    return params["jaxpr"].out_avals


# --------------------------------------------------------------------------------------------------------------
# Loop carries: weak-type promotion and type checks shared by while_loop, scan and fori_loop
# --------------------------------------------------------------------------------------------------------------

def _carry_paths(label: str, tree_value: Any) -> list:
    """A printable name for each leaf of a carry (`init_val[1]['w']`), for error messages."""
    return [label + keystr(path) for path, _ in tree_flatten_with_path(tree_value)[0]]


def _check_carry_types(loop: str, paths: Sequence[str], in_avals, out_avals) -> None:
    """TypeError naming `loop` (the function the user called) and every carry component whose shape or dtype the
    body changes."""
    bad = [(p, a, b) for p, a, b in zip(paths, in_avals, out_avals) if (a.shape, a.dtype) != (b.shape, b.dtype)]
    if not bad:
        return
    lines = []
    for p, a, b in bad:
        what = "shapes" if a.shape != b.shape else "dtypes"
        lines.append(f"  the input carry component {p} has type {a.str_short()} but the corresponding output carry "
                     f"component has type {b.str_short()}, so the {what} do not match")
    raise TypeError(f"{loop} body function carry input and carry output must have equal types, but they differ:\n"
                    + "\n".join(lines))


def _trace_loop_carry(loop: str, paths: Sequence[str], init_flat: list, trace: Callable) -> tuple[list, list, Any]:
    """Traces a loop body, settling the carry's types as JAX does; returns (init values, carry avals, trace result).

    `trace(carry_avals, cast_to)` traces the body on `carry_avals` (converting its carry outputs to the avals
    `cast_to` when given) and returns (jaxpr, consts, out_avals), the carry outputs first.

    1. A weakly typed input carry whose output has another dtype (`fori_loop(0, n, lambda i, c: c + xs[i], 0)` with
       float32 `xs`) is cast to the promotion of the two (strongly typed, as JAX's convert_element_type does) and
       the body retraced, until no such carry is left (each round makes at least one more carry strong).
    2. Any remaining shape or dtype change is a TypeError naming `loop`.
    3. A carry that is weak on one side only becomes strong on both (the body's outputs are cast)."""
    n = len(init_flat)
    avals = [core.get_aval(x) for x in init_flat]
    traced = trace(avals, None)
    for _ in range(n):
        outs = traced[2][:n]
        promote = [i for i, (a, b) in enumerate(zip(avals, outs))
                   if a.weak_type and a.shape == b.shape and a.dtype != b.dtype]
        if not promote:
            break
        for i in promote:
            dt, _ = dtypes.result_type_of_pairs([(avals[i].dtype, True), (outs[i].dtype, outs[i].weak_type)])
            init_flat[i] = ew._convert_weak(init_flat[i], dt, False)
            avals[i] = avals[i].update(dtype=dt, weak_type=False)
        traced = trace(avals, None)
    _check_carry_types(loop, paths, avals, traced[2][:n])
    outs = traced[2][:n]
    if any(a.weak_type != b.weak_type for a, b in zip(avals, outs)):
        avals = [a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(avals, outs)]
        init_flat = [ew._convert_weak(x, a.dtype, a.weak_type) for x, a in zip(init_flat, avals)]
        traced = trace(avals, avals)
    return init_flat, avals, traced


def _cast_outputs(outs: list, cast_to) -> list:
    """The first len(cast_to) outputs converted to those avals' dtypes and weak types (the rest unchanged)."""
    if cast_to is None:
        return outs
    k = len(cast_to)
    return [ew._convert_weak(o, a.dtype, a.weak_type) for o, a in zip(outs[:k], cast_to)] + list(outs[k:])


# --------------------------------------------------------------------------------------------------------------
# cond / switch
# --------------------------------------------------------------------------------------------------------------

cond_p = standard_primitive("cond", multiple_results=True, weak_type=_weak_types_of(_cond_out_avals))


def _join_branch_avals(name, out_avals_list):
    first = out_avals_list[0]
    for avals in out_avals_list[1:]:
        if len(avals) != len(first) or any((a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(avals, first)):
            raise TypeError(f"{name}: branches must return outputs of the same structure, shapes and dtypes, got "
                            + " vs ".join("(" + ", ".join(a.str_short() for a in av) + ")" for av in out_avals_list))
    return [ShapedArray(a.shape, a.dtype, all(av[i].weak_type for av in out_avals_list))
            for i, a in enumerate(first)]


def _trace_branches(name, funs, ops_avals, in_tree):
    out_trees = []

    def make(f):
        def flat(*xs):
            out = f(*tree_unflatten(in_tree, xs))
            leaves, tree = tree_flatten(out)
            out_trees.append(tree)
            return [_as_value(x) for x in leaves]
        return flat

    flats = [make(f) for f in funs]
    traced = [_trace_fun(fl, ops_avals) for fl in flats]
    for t in out_trees[1:]:
        if t != out_trees[0]:
            raise TypeError(f"{name}: branches must return the same pytree structure, got {out_trees[0]} and {t}")
    joint = _join_branch_avals(name, [t[2] for t in traced])
    if any([a.weak_type for a in t[2]] != [a.weak_type for a in joint] for t in traced):
        def cast(fl):
            def g(*xs):
                return [ew._convert_weak(o, a.dtype, a.weak_type) for o, a in zip(fl(*xs), joint)]
            return g
        out_trees.clear()
        traced = [_trace_fun(cast(fl), ops_avals) for fl in flats]
    return traced, out_trees[0]


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=None):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, with both branches traced.

    Args:
      pred: a scalar bool (or integer: nonzero is True), possibly traced.
      true_fun, false_fun: functions of `operands` returning pytrees of identical structure, shapes and dtypes.

    Raises:
      TypeError: `pred` is not a scalar, or the branches' outputs differ (both types are shown).
    """
    if operand is not None:
        operands = (operand,)
    pred = _as_value(pred)
    pa = core.get_aval(pred)
    if pa.shape != ():
        raise TypeError(f"Pred must be a scalar, got {pred!r} of shape {pa.shape}. Use jnp.where for elementwise "
                        "selection.")
    if pa.dtype != dtypes.bool_:
        pred = ew.ne(pred, core.Array(np.zeros((), pa.dtype), True))
    index = ew.convert_element_type(pred, np.int32)
    return switch(index, [false_fun, true_fun], *operands)


def switch(index, branches: Sequence[Callable], *operands, operand=None):
    """Applies `branches[index](*operands)`; `index` is clamped to the valid range (as in JAX)."""
    if operand is not None:
        operands = (operand,)
    if not branches:
        raise ValueError("switch: empty branches sequence")
    index = _as_value(index)
    ia = core.get_aval(index)
    if ia.shape != () or not (dtypes.is_integer(ia.dtype) or ia.dtype == dtypes.bool_):
        raise TypeError(f"switch: index must be an integer scalar, got {ia.str_short()}")
    index = ew.convert_element_type(index, np.int32)
    lo = core.Array(np.asarray(0, np.int32))
    hi = core.Array(np.asarray(len(branches) - 1, np.int32))
    index = ew.clamp(lo, index, hi)
    flat_ops, in_tree = tree_flatten(tuple(operands))
    flat_ops = [_as_value(x) for x in flat_ops]
    avals = [core.get_aval(x) for x in flat_ops]
    traced, out_tree = _trace_branches("cond" if len(branches) == 2 else "switch", list(branches), avals, in_tree)
    all_consts = [c for t in traced for c in t[1]]
    const_avals = [core.get_aval(c) for c in all_consts]
    closed_branches, pos = [], 0
    for closed, consts, _ in traced:
        closed_branches.append(_pad_const_inputs(closed, pos, len(consts), const_avals))
        pos += len(consts)
    outs = cond_p.bind(index, *all_consts, *flat_ops, branches=tuple(closed_branches))
    return tree_unflatten(out_tree, outs)


def _pad_const_inputs(closed: ClosedJaxpr, start: int, n: int, const_avals: list) -> ClosedJaxpr:
    j = closed.jaxpr
    own, rest = j.invars[:n], j.invars[n:]
    invars = [core.Var(a) for a in const_avals]
    invars[start:start + n] = own
    return ClosedJaxpr(Jaxpr(j.constvars, invars + rest, j.outvars, j.eqns), closed.consts)


def _cond_abstract_eval(index, *ops, branches):
    if index.shape != () or not dtypes.is_integer(index.dtype):
        raise TypeError(f"cond/switch index must be an integer scalar, got {index.str_short()}")
    return list(branches[0].out_avals)


abstract_eval_rules[cond_p] = _cond_abstract_eval


def _known_branch(known: Jaxpr, n_out: int, start: int, own_res_avals: list, all_res: list) -> ClosedJaxpr:
    def fun(*args):
        outs = core.eval_jaxpr(known, [], *args)
        prim, res = outs[:n_out], outs[n_out:]
        full = [st.full(a.shape, 0, a.dtype) for a in all_res]
        full[start:start + len(res)] = res
        return list(prim) + full
    j, c, _ = pe.trace_to_jaxpr(fun, [v.aval for v in known.invars])
    return ClosedJaxpr(j, c)


def _unknown_branch(unknown: Jaxpr, start: int, num_res: int, all_res: list) -> ClosedJaxpr:
    n_all = len(all_res)

    def fun(*args):
        res, rest = args[:n_all], args[n_all:]
        return core.eval_jaxpr(unknown, [], *res[start:start + num_res], *rest)

    in_avals = list(all_res) + [v.aval for v in unknown.invars[num_res:]]
    j, c, _ = pe.trace_to_jaxpr(fun, in_avals)
    return ClosedJaxpr(j, c)


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    ops_nz = [type(t) is not Zero for t in tangents[1:]]
    n_out = len(branches[0].out_avals)
    jvps = [jvp_jaxpr(b, ops_nz, [True] * n_out) for b in branches]
    n_in = len(ops)
    unknowns = [False] * n_in + [True] * sum(ops_nz)
    splits = [pe.partial_eval_jaxpr(_close_consts(j), unknowns, [False] * n_out + [True] * n_out) for j, _ in jvps]
    # All residuals of all branches, each branch producing zeros for the others'.
    res_avals = [[v.aval for v in known.outvars[n_out:]] for known, _, _, _ in splits]
    all_res = [a for avs in res_avals for a in avs]
    known_branches, unknown_branches, pos = [], [], 0
    for (known, unknown, _, num_res), avs in zip(splits, res_avals):
        known_branches.append(_known_branch(known, n_out, pos, avs, all_res))
        unknown_branches.append(_unknown_branch(unknown, pos, num_res, all_res))
        pos += num_res
    outs = cond_p.bind(index, *ops, branches=tuple(known_branches))
    primal_out, res = outs[:n_out], outs[n_out:]
    nz_tangents = [t for t in tangents[1:] if type(t) is not Zero]
    tangent_out = cond_p.bind(index, *res, *nz_tangents, branches=tuple(unknown_branches))
    return primal_out, tangent_out


ad.primitive_jvps[cond_p] = _cond_jvp


def _cond_transpose(cts, index, *ops, branches):
    if ad.is_undefined_primal(index):
        raise NotImplementedError("cond is not linear in its index")
    linear = [ad.is_undefined_primal(x) for x in ops]
    cts = [ad.instantiate_zeros(c) for c in cts]
    t_branches = tuple(_transpose_jaxpr(b, linear) for b in branches)
    nonlin = [x for x, l in zip(ops, linear) if not l]
    res = cond_p.bind(index, *nonlin, *cts, branches=t_branches)
    it = iter(res)
    return [None] + [next(it) if l else None for l in linear]


ad.primitive_transposes[cond_p] = _cond_transpose


def _cond_batch_rule(vals, dims, *, branches, axis_size=None, axis_name=None):
    index, *ops = vals
    d_index, *d_ops = dims
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    if d_index is None:
        in_b = [d is not None for d in d_ops]
        out_b = [False] * len(branches[0].out_avals)
        for b in branches:
            _, ob = batching.batch_jaxpr(b, size, in_b, False, axis_name)
            out_b = [x or y for x, y in zip(out_b, ob)]
        new = tuple(batching.batch_jaxpr(b, size, in_b, out_b, axis_name)[0] for b in branches)
        ops = [batching.moveaxis(x, d, 0, size) if d is not None else x for x, d in zip(ops, d_ops)]
        outs = cond_p.bind(index, *ops, branches=new)
        return outs, [0 if b else None for b in out_b]
    # A batched predicate: evaluate every branch on the whole batch and select per example.
    ops = [batching.moveaxis(x, d, 0, size) for x, d in zip(ops, d_ops)]
    index = batching.moveaxis(index, d_index, 0, size)
    in_b = [True] * len(ops)
    branch_outs = []
    for b in branches:
        bj, _ = batching.batch_jaxpr(b, size, in_b, True, axis_name)
        branch_outs.append(core.eval_jaxpr(bj.jaxpr, bj.consts, *ops))
    outs = []
    for k in range(len(branch_outs[0])):
        cases = [bo[k] for bo in branch_outs]
        shape = core.get_aval(cases[0]).shape
        idx = st.broadcast_in_dim(index, shape, (0,))
        outs.append(ew.select_n(idx, *cases))
    return outs, [0] * len(outs)


_cond_batch_rule.needs_axis = True
batching.primitive_batchers[cond_p] = _cond_batch_rule


# --------------------------------------------------------------------------------------------------------------
# while_loop
# --------------------------------------------------------------------------------------------------------------

while_p = standard_primitive("while", multiple_results=True, weak_type=_weak_types_of(_while_out_avals))


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Runs `val = body_fun(val)` while `cond_fun(val)`; forward-mode differentiable, not reverse-mode.

    A weakly typed leaf of `init_val` (a Python scalar) whose body output has another dtype is promoted to it first,
    as in JAX (`while_loop(..., lambda c: c + x32, 0)` carries float32).

    Raises:
      TypeError: cond_fun does not return a scalar bool, or body_fun changes the carry's structure or types.
    """
    return _while_loop("while_loop", cond_fun, body_fun, init_val, _carry_paths("init_val", init_val))


def _while_loop(loop: str, cond_fun: Callable, body_fun: Callable, init_val: Any, paths: Sequence[str]) -> Any:
    flat, tree = tree_flatten(init_val)
    flat = [_as_value(x) for x in flat]

    def body_flat(*xs):
        out = body_fun(tree_unflatten(tree, xs))
        leaves, t2 = tree_flatten(out)
        if t2 != tree:
            raise TypeError(f"{loop} body_fun must return a carry of the same structure as init_val: "
                            f"{tree} vs {t2}")
        return [_as_value(x) for x in leaves]

    def trace(avals, cast_to):
        return _trace_fun(lambda *xs: _cast_outputs(body_flat(*xs), cast_to), avals)

    flat, avals, (body, body_consts, _) = _trace_loop_carry(loop, paths, flat, trace)

    def cond_flat(*xs):
        return [_as_value(cond_fun(tree_unflatten(tree, xs)))]

    cond_j, cond_consts, c_avals = _trace_fun(cond_flat, avals)
    if c_avals[0].shape != () or c_avals[0].dtype != dtypes.bool_:
        raise TypeError(f"{loop} cond_fun must return a boolean scalar, but got output type(s) "
                        f"[{c_avals[0].str_short()}]")
    outs = while_p.bind(*cond_consts, *body_consts, *flat, cond_jaxpr=cond_j, body_jaxpr=body,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return tree_unflatten(tree, outs)


def _while_abstract_eval(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    return list(body_jaxpr.out_avals)


abstract_eval_rules[while_p] = _while_abstract_eval


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, init = primals[:nc], primals[nc:nc + nb], primals[nc + nb:]
    bc_nz = [type(t) is not Zero for t in tangents[nc:nc + nb]]
    carry_nz = [type(t) is not Zero for t in tangents[nc + nb:]]
    for _ in range(len(carry_nz) + 1):
        body_jvp, out_nz = jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
    nk = len(init)
    n_bct = sum(bc_nz)
    # Reorder the jvp body to (consts, consts_dot, carry, carry_dot) -> (carry, carry_dot).
    bj = body_jvp.jaxpr
    inv = bj.invars
    consts_v, carry_v = inv[:nb], inv[nb:nb + nk]
    bct_v, cdot_v = inv[nb + nk:nb + nk + n_bct], inv[nb + nk + n_bct:]
    body_new = ClosedJaxpr(Jaxpr(bj.constvars, consts_v + bct_v + carry_v + cdot_v, bj.outvars, bj.eqns),
                           body_jvp.consts)
    # The condition ignores tangents.
    cj = cond_jaxpr.jaxpr
    dummy = [core.Var(a) for a, nz in zip(body_jaxpr.in_avals[nb:], carry_nz) if nz]
    cond_new = ClosedJaxpr(Jaxpr(cj.constvars, cj.invars + dummy, cj.outvars, cj.eqns), cond_jaxpr.consts)
    bct = [t for t in tangents[nc:nc + nb] if type(t) is not Zero]
    cdot = [ad.instantiate_zeros(t) for t, nz in zip(tangents[nc + nb:], carry_nz) if nz]
    outs = while_p.bind(*cconsts, *bconsts, *bct, *init, *cdot, cond_jaxpr=cond_new, body_jaxpr=body_new,
                        cond_nconsts=nc, body_nconsts=nb + n_bct)
    p_out, t_nz = outs[:nk], iter(outs[nk:])
    if core._top_main(list(bct) + cdot).level > core._top_main(list(primals)).level:
        # The tangents live in a trace the primals do not (linearize and vjp stage the tangents while the primals
        # are known): the joint loop above is staged whole, so its primal outputs are tracers of that trace. Run
        # the primal loop on its own for them, as JAX's partial evaluation of while does (the staged loop
        # recomputes the primals it needs).
        p_out = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                             cond_nconsts=nc, body_nconsts=nb)
    t_out = [next(t_nz) if nz else Zero(core.get_aval(p).strip_weak_type()) for p, nz in zip(p_out, carry_nz)]
    return p_out, t_out


ad.primitive_jvps[while_p] = _while_jvp


def _while_batch_rule(vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, axis_size=None,
                 axis_name=None):
    nc, nb = cond_nconsts, body_nconsts
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    cc_b = [d is not None for d in dims[:nc]]
    bc_b = [d is not None for d in dims[nc:nc + nb]]
    carry_b = [d is not None for d in dims[nc + nb:]]
    for _ in range(len(carry_b) + 1):
        _, out_b = batching.batch_jaxpr(body_jaxpr, size, bc_b + carry_b, False, axis_name)
        new = [a or b for a, b in zip(carry_b, out_b)]
        if new == carry_b:
            break
        carry_b = new
    _, pred_b = batching.batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False, axis_name)
    vals = [batching.moveaxis(v, d, 0, size) if d is not None else v for v, d in zip(vals, dims)]
    carry = vals[nc + nb:]
    carry = [batching.moveaxis(c, None, 0, size) if b and core.get_aval(c).shape[:1] != (size,) or (
        b and d is None) else c for c, b, d in zip(carry, carry_b, dims[nc + nb:])]
    if pred_b[0]:
        carry_b = [True] * len(carry_b)
        carry = [batching.moveaxis(c, None, 0, size) if d is None and not b0 else c
                 for c, d, b0 in zip(vals[nc + nb:], dims[nc + nb:], [d is not None for d in dims[nc + nb:]])]
    body_b, _ = batching.batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b, axis_name)
    cond_b, _ = batching.batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False, axis_name)
    cconsts, bconsts = vals[:nc], vals[nc:nc + nb]
    if not pred_b[0]:
        outs = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond_b, body_jaxpr=body_b,
                            cond_nconsts=nc, body_nconsts=nb)
        return outs, [0 if b else None for b in carry_b]
    # Per-example predicates: loop while any example continues; finished examples keep their carry.
    n_cc = len(cconsts)

    def cond_any(*args):
        pred = core.eval_jaxpr(cond_b.jaxpr, cond_b.consts, *args)[0]
        from .reductions import reduce_or
        return [reduce_or(pred, (0,))]

    def body_sel(*args):
        cc, bc, cr = args[:n_cc], args[n_cc:n_cc + nb], args[n_cc + nb:]
        pred = core.eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cc, *cr)[0]
        new = core.eval_jaxpr(body_b.jaxpr, body_b.consts, *bc, *cr)
        out = []
        for old, nw in zip(cr, new):
            p = st.broadcast_in_dim(pred, core.get_aval(nw).shape, (0,))
            out.append(ew.select_n(p, old, nw))
        return out

    carry_avals = [core.get_aval(c) for c in carry]
    cc_avals = [core.get_aval(c) for c in cconsts]
    bc_avals = [core.get_aval(c) for c in bconsts]
    cj, cjc, _ = pe.trace_to_jaxpr(cond_any, cc_avals + carry_avals)
    bj, bjc, _ = pe.trace_to_jaxpr(body_sel, cc_avals + bc_avals + carry_avals)
    cond_closed = ClosedJaxpr(pe.convert_constvars_jaxpr(cj), [])
    body_closed = ClosedJaxpr(pe.convert_constvars_jaxpr(bj), [])
    outs = while_p.bind(*cjc, *cconsts, *bjc, *cconsts, *bconsts, *carry, cond_jaxpr=cond_closed,
                        body_jaxpr=body_closed, cond_nconsts=len(cjc) + n_cc, body_nconsts=len(bjc) + n_cc + nb)
    return outs, [0] * len(outs)


_while_batch_rule.needs_axis = True
batching.primitive_batchers[while_p] = _while_batch_rule


# --------------------------------------------------------------------------------------------------------------
# scan
# --------------------------------------------------------------------------------------------------------------

scan_p = standard_primitive("scan", multiple_results=True, weak_type=_weak_types_of(_scan_out_avals))


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int = 1, _split_transpose: bool = False):
    """Loops `carry, y = f(carry, x)` over the leading axis of `xs`, stacking the `y`s.

    Args:
      f: (carry, x) -> (carry, y); the carry keeps its structure, shapes and dtypes.
      init: the initial carry (a pytree).
      xs: a pytree of arrays scanned along axis 0 (or None, with `length`).
      length: the number of iterations when xs is None (must agree with xs otherwise).
      reverse: scan from the end.

    Returns:
      (final carry, stacked ys).

    A weakly typed leaf of `init` (a Python scalar) whose body output has another dtype is promoted to it first, as
    in JAX (`scan(lambda c, x: (c + x, c), 0, xs32)` carries float32).

    Raises:
      TypeError: the carry changes structure or type (both are shown); ValueError: inconsistent lengths.
    """
    return _scan("scan", f, init, xs, length, reverse, unroll, _carry_paths("init", init))


def _scan(loop: str, f: Callable, init: Any, xs: Any, length: int | None, reverse: bool, unroll: int,
          paths: Sequence[str]):
    init_flat, init_tree = tree_flatten(init)
    xs_flat, xs_tree = tree_flatten(xs)
    init_flat = [_as_value(x) for x in init_flat]
    xs_flat = [_as_value(x) for x in xs_flat]
    lengths = {core.get_aval(x).shape[0] for x in xs_flat if core.get_aval(x).ndim}
    if any(core.get_aval(x).ndim == 0 for x in xs_flat):
        raise ValueError("scan got a scalar in xs: every leaf of xs must have a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ValueError(f"scan got inconsistent lengths for the leading axis of xs: {sorted(lengths)}")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    n = lengths.pop()
    carry_avals = [core.get_aval(x) for x in init_flat]
    x_avals = [ShapedArray(core.get_aval(x).shape[1:], core.get_aval(x).dtype, core.get_aval(x).weak_type)
               for x in xs_flat]
    out_tree_box = []

    def body(*args):
        c = tree_unflatten(init_tree, args[:len(carry_avals)])
        x = tree_unflatten(xs_tree, args[len(carry_avals):])
        res = f(c, x)
        if not isinstance(res, tuple) or len(res) != 2:
            raise TypeError("scan body function must return a pair (carry, y), got "
                            f"{type(res).__name__}")
        new_c, y = res
        c_leaves, c_tree = tree_flatten(new_c)
        if c_tree != init_tree:
            raise TypeError(f"{loop} body function carry input and carry output must have the same pytree "
                            f"structure, but they differ: input {init_tree}, output {c_tree}")
        y_leaves, y_tree = tree_flatten(y)
        out_tree_box.append(y_tree)
        return [_as_value(v) for v in c_leaves] + [_as_value(v) for v in y_leaves]

    def trace(avals, cast_to):
        out_tree_box.clear()
        return _trace_fun(lambda *args: _cast_outputs(body(*args), cast_to), list(avals) + x_avals)

    nk = len(init_flat)
    init_flat, carry_avals, (jaxpr, consts, out_avals) = _trace_loop_carry(loop, paths, init_flat, trace)
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=jaxpr, num_consts=len(consts), num_carry=nk,
                       length=n, reverse=bool(reverse), unroll=unroll)
    return tree_unflatten(init_tree, outs[:nk]), tree_unflatten(out_tree_box[-1], outs[nk:])


def _scan_abstract_eval(*args, jaxpr, num_consts, num_carry, length, reverse, unroll=1):
    outs = jaxpr.out_avals
    carry = list(outs[:num_carry])
    ys = [ShapedArray((length,) + a.shape, a.dtype, a.weak_type) for a in outs[num_carry:]]
    return carry + ys


abstract_eval_rules[scan_p] = _scan_abstract_eval


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll=1):
    nc, nk = num_consts, num_carry
    nx = len(primals) - nc - nk
    ny = len(jaxpr.out_avals) - nk
    nz = [type(t) is not Zero for t in tangents]
    const_nz, carry_nz, xs_nz = nz[:nc], nz[nc:nc + nk], nz[nc + nk:]
    for _ in range(nk + 1):
        jj, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [True] * ny)
        new = [a or b for a, b in zip(carry_nz, out_nz[:nk])]
        if new == carry_nz:
            break
        carry_nz = new
    n_prim_in = nc + nk + nx
    n_tan_in = sum(const_nz) + sum(carry_nz) + sum(xs_nz)
    n_tan_out = sum(carry_nz) + ny
    unknowns = [False] * n_prim_in + [True] * n_tan_in
    known, unknown, _, num_res = pe.partial_eval_jaxpr(_close_consts(jj), unknowns,
                                                       [False] * (nk + ny) + [True] * n_tan_out)
    res_vars = known.outvars[nk + ny:]
    const_invars = known.invars[:nc]
    invariant = [v in const_invars for v in res_vars]
    # Known scan: (consts, carry, xs) -> (carry, ys, loop residuals stacked).
    loop_res = [v for v, inv in zip(res_vars, invariant) if not inv]
    known_j = Jaxpr([], known.invars, known.outvars[:nk + ny] + loop_res, known.eqns)
    outs = scan_p.bind(*primals, jaxpr=ClosedJaxpr(known_j, []), num_consts=nc, num_carry=nk, length=length,
                       reverse=reverse, unroll=unroll)
    carry_out, ys, res_stacked = outs[:nk], outs[nk:nk + ny], outs[nk + ny:]
    inv_vals = [primals[const_invars.index(v)] for v, inv in zip(res_vars, invariant) if inv]
    # Tangent scan: consts = (invariant residuals, const tangents), carry = carry tangents,
    # xs = (loop residuals, xs tangents).
    uinv = unknown.invars
    res_in, tan_in = uinv[:num_res], uinv[num_res:]
    res_inv_v = [v for v, inv in zip(res_in, invariant) if inv]
    res_loop_v = [v for v, inv in zip(res_in, invariant) if not inv]
    n_tc, n_tk = sum(const_nz), sum(carry_nz)
    tc_v, tk_v, tx_v = tan_in[:n_tc], tan_in[n_tc:n_tc + n_tk], tan_in[n_tc + n_tk:]
    tan_j = Jaxpr([], res_inv_v + tc_v + tk_v + res_loop_v + tx_v, unknown.outvars, unknown.eqns)
    t_consts = [t for t, z in zip(tangents[:nc], const_nz) if z]
    t_carry = [ad.instantiate_zeros(t) for t, z in zip(tangents[nc:nc + nk], carry_nz) if z]
    t_xs = [t for t, z in zip(tangents[nc + nk:], xs_nz) if z]
    t_outs = scan_p.bind(*inv_vals, *t_consts, *t_carry, *res_stacked, *t_xs, jaxpr=ClosedJaxpr(tan_j, []),
                         num_consts=len(inv_vals) + n_tc, num_carry=n_tk, length=length, reverse=reverse,
                         unroll=unroll)
    it = iter(t_outs[:n_tk])
    carry_t = [next(it) if z else Zero(core.get_aval(c).strip_weak_type()) for c, z in zip(carry_out, carry_nz)]
    return list(carry_out) + list(ys), carry_t + list(t_outs[n_tk:])


ad.primitive_jvps[scan_p] = _scan_jvp


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll=1):
    nc, nk = num_consts, num_carry
    consts, init, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
    c_lin = [ad.is_undefined_primal(c) for c in consts]
    x_lin = [ad.is_undefined_primal(x) for x in xs]
    # The carry of a tangent scan is always linear; a carry operand that is a constant here is an instantiated
    # zero tangent, whose cotangent nobody needs.
    init_lin = [ad.is_undefined_primal(c) for c in init]
    ct_carry = [ad.instantiate_zeros(c) for c in cts[:nk]]
    ct_ys = [ad.instantiate_zeros(c) for c in cts[nk:]]
    res_consts = [c for c, l in zip(consts, c_lin) if not l]
    res_xs = [x for x, l in zip(xs, x_lin) if not l]
    lin_const_avals = [c.aval for c, l in zip(consts, c_lin) if l]
    acc0 = [st.full(a.shape, 0, a.dtype) for a in lin_const_avals]
    linear = c_lin + [True] * nk + x_lin
    body_t = _transpose_jaxpr(jaxpr, linear)
    # body_t: (res_consts, res_xs, ct_carry, ct_y) -> (ct_lin_consts, ct_carry_in, ct_lin_xs)
    n_rc, n_rx, n_lc = len(res_consts), len(res_xs), len(lin_const_avals)
    n_lx = sum(x_lin)

    def step(*args):
        rc = args[:n_rc]
        acc = args[n_rc:n_rc + n_lc]
        ctc = args[n_rc + n_lc:n_rc + n_lc + nk]
        rx = args[n_rc + n_lc + nk:n_rc + n_lc + nk + n_rx]
        cty = args[n_rc + n_lc + nk + n_rx:]
        outs = core.eval_jaxpr(body_t.jaxpr, body_t.consts, *rc, *rx, *ctc, *cty)
        g_c, g_carry, g_x = outs[:n_lc], outs[n_lc:n_lc + nk], outs[n_lc + nk:]
        return [ew.add(a, g) for a, g in zip(acc, g_c)] + list(g_carry) + list(g_x)

    in_avals = ([core.get_aval(c) for c in res_consts] + lin_const_avals + [core.get_aval(c) for c in ct_carry]
                + [ShapedArray(core.get_aval(x).shape[1:], core.get_aval(x).dtype) for x in res_xs]
                + [ShapedArray(core.get_aval(c).shape[1:], core.get_aval(c).dtype) for c in ct_ys])
    step_j, step_consts, _ = _trace_fun(step, in_avals)
    outs = scan_p.bind(*step_consts, *res_consts, *acc0, *ct_carry, *res_xs, *ct_ys, jaxpr=step_j,
                       num_consts=len(step_consts) + n_rc, num_carry=n_lc + nk, length=length,
                       reverse=not reverse, unroll=unroll)
    ct_lc, ct_init, ct_lx = outs[:n_lc], outs[n_lc:n_lc + nk], outs[n_lc + nk:n_lc + nk + n_lx]
    it_c, it_x = iter(ct_lc), iter(ct_lx)
    return ([next(it_c) if l else None for l in c_lin] + [c if l else None for c, l in zip(ct_init, init_lin)]
            + [next(it_x) if l else None for l in x_lin])


ad.primitive_transposes[scan_p] = _scan_transpose


def _scan_batch_rule(vals, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll=1, axis_size=None,
                axis_name=None):
    nc, nk = num_consts, num_carry
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    c_b = [d is not None for d in dims[:nc]]
    k_b = [d is not None for d in dims[nc:nc + nk]]
    x_b = [d is not None for d in dims[nc + nk:]]
    for _ in range(nk + 1):
        _, out_b = batching.batch_jaxpr(jaxpr, size, c_b + k_b + x_b, False, axis_name)
        new = [a or b for a, b in zip(k_b, out_b[:nk])]
        if new == k_b:
            break
        k_b = new
    ny = len(jaxpr.out_avals) - nk
    body, out_b = batching.batch_jaxpr(jaxpr, size, c_b + k_b + x_b, k_b + [False] * ny, axis_name)
    consts = [batching.moveaxis(v, d, 0, size) if d is not None else v for v, d in zip(vals[:nc], dims[:nc])]
    carry = [batching.moveaxis(v, d, 0, size) if b else v for v, d, b in zip(vals[nc:nc + nk], dims[nc:nc + nk], k_b)]
    xs = [batching.moveaxis(v, d, 1, size) if d is not None else v for v, d in zip(vals[nc + nk:], dims[nc + nk:])]
    body_j = body.jaxpr if not body.consts else pe.convert_constvars_jaxpr(body.jaxpr)
    outs = scan_p.bind(*body.consts, *consts, *carry, *xs, jaxpr=ClosedJaxpr(body_j, []),
                       num_consts=len(body.consts) + nc, num_carry=nk, length=length, reverse=reverse, unroll=unroll)
    return outs, [0 if b else None for b in k_b] + [1 if b else None for b in out_b[nk:]]


_scan_batch_rule.needs_axis = True
batching.primitive_batchers[scan_p] = _scan_batch_rule


# --------------------------------------------------------------------------------------------------------------
# fori_loop / map
# --------------------------------------------------------------------------------------------------------------

def _static_int(x):
    if isinstance(x, (int, np.integer)):
        return int(x)
    v = core.concrete_value(x)
    if v is not None and np.ndim(v) == 0 and not isinstance(x, core.Tracer):
        return int(v)
    return None


def fori_loop(lower, upper, body_fun: Callable, init_val: Any, *, unroll: int | None = None) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)`.

    With static (Python or concrete) bounds this lowers to `scan`, so it is reverse-mode differentiable; with
    traced bounds it lowers to `while_loop` (forward mode only).
    """
    lo, hi = _static_int(lower), _static_int(upper)
    if lo is not None and hi is not None:
        dt = dtypes.default_int_dtype() if isinstance(lower, int) and isinstance(upper, int) else \
            core.get_aval(_as_value(lower)).dtype

        def step(carry, _):
            i, val = carry
            return (ew.add(i, core.Array(np.ones((), dt), True)), body_fun(i, val)), None

        paths = ["loop index"] + _carry_paths("init_val", init_val)
        (_, out), _ = _scan("fori_loop", step, (core.Array(np.asarray(lo, dt)), init_val), None,
                            max(hi - lo, 0), False, 1, paths)
        return out
    lower, upper = _as_value(lower), _as_value(upper)
    dt = dtypes.result_type(lower, upper)
    lower = ew.convert_element_type(lower, dt)
    upper = ew.convert_element_type(upper, dt)

    def cond_fun(c):
        return ew.lt(c[0], c[2])

    def body(c):
        i, val, up = c
        return ew.add(i, core.Array(np.ones((), dt), True)), body_fun(i, val), up

    paths = ["loop index"] + _carry_paths("init_val", init_val) + ["upper bound"]
    return _while_loop("fori_loop", cond_fun, body, (lower, init_val, upper), paths)[1]


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """Applies `f` to each slice of `xs` along axis 0 sequentially (a scan with no carry), stacking results."""
    _, ys = scan(lambda c, x: (c, f(x)), (), xs)
    return ys
