"""Explicit sharding mode: how each primitive types the sharding of its result.

When a mesh axis is `AxisType.Explicit`, the way an array is split along it is part of the array's type: the
abstract value carries a `NamedSharding` (`ShapedArray.sharding`, printed `float32[8@data,4]`), and every operation
computes its result's sharding from its operands' by a fixed rule, the same eagerly and under `jit`. Values never
depend on it (fluxion keeps one global buffer per array); the types only say what JAX would place on each device,
and reject what JAX rejects (`ShardingTypeError`).

The rules follow JAX's explicit-sharding rules:

* elementwise (n-ary, with broadcasting of size-1 dimensions): each dimension keeps the operands' common entry; an
  entry only on some operands wins where the others have a size-1 unsplit dimension or the same entry; two
  different entries conflict (error);
* `dot_general`: batch dims, then the lhs's free dims, then the rhs's, each with its operand's entry; contracting a
  dimension split on both operands is ambiguous (error unless `out_sharding=` names the result's sharding); batch
  or contracting dims split differently on the two sides are an error;
* reductions and `argmax`/`argmin` drop the reduced dimensions' entries; `transpose` permutes entries;
  `broadcast_in_dim` keeps the operand's entries on the mapped dimensions; `squeeze` drops size-1 dimensions;
* `reshape` keeps entries where only size-1 dimensions come and go, splits one dimension when the first piece is
  divisible by the axis size (`8@data -> 4@data,2`), merges dimensions when only the leading one is split
  (`8@data,4 -> 32@data`), and otherwise raises (JAX asks for `out_sharding` there too);
* `select_n` needs its cases typed alike; `concatenate` needs its sharded operands typed alike; slices and pads keep
  the operand's entries where split sizes still divide (error otherwise); `scan` needs its `xs` unsplit along the
  scanned dimension and types its carry and stacked outputs from the body;
* `jit` calls take the shardings of the called program's outputs; `reshard` (the traced form of `reshard` and
  `with_sharding_constraint`) sets the type it is given;
* any other primitive: each output takes the sharding of the first operand of the same shape (the rule that holds
  for the element-preserving primitives fluxion has no specific rule for: cumulative ops, sorts, clamps, ...), and
  is otherwise unsharded. JAX has a rule per primitive; this fallback is where fluxion can differ.

The operands' meshes must be equal (error otherwise). The hooks are installed the first time the process builds a
NamedSharding over a mesh with an Explicit axis (`sharding.ON_FIRST_EXPLICIT`), so code that never does pays nothing.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable

from .. import core
from .. import sharding as sh
from ..core import Array, ShapedArray, abstract_eval_rules
from ..errors import ShardingTypeError
from ..interpreters import ad, batching
from . import call, control_flow as cf, elementwise as ew, reductions as red, structural as st
from .utils import standard_primitive

RULES: dict = {}


def _entries(aval: ShapedArray) -> tuple:
    s = aval.sharding
    return (None,) * len(aval.shape) if s is None else tuple(s.spec)


def _mesh(avals, name: str):
    """The abstract mesh of the sharded operands (None when none is sharded); they must agree."""
    mesh = None
    for a in avals:
        s = getattr(a, "sharding", None)
        if s is not None:
            if mesh is not None and mesh != s.mesh:
                raise ShardingTypeError(f"Mesh for all inputs should be equal. Got one mesh: {mesh} and another "
                                        f"mesh: {s.mesh} (in {name})")
            mesh = s.mesh
    return mesh


def _type_str(aval: ShapedArray) -> str:
    return aval.str_short()


# -- elementwise ---------------------------------------------------------------------------------------------------

def _elementwise_rule(prim):
    def rule(avals, out_avals, params):
        shaped = [a for a in avals if a.shape]
        if not shaped:
            return [(None,) * len(o.shape) for o in out_avals]
        specs = [_entries(a) for a in shaped]
        out = []
        for d, entries in enumerate(zip(*specs)):
            if all(e == entries[0] for e in entries):
                out.append(entries[0])
                continue
            nontrivial = {e for e, a in zip(entries, shaped) if not (a.shape[d] == 1 and e is None)}
            if len(nontrivial) <= 1:
                out.append(next(iter(nontrivial), None))
                continue
            named = {e for e in entries if e is not None}
            if len(named) > 1:
                raise ShardingTypeError(f"{prim.name} got incompatible shardings for broadcasting: "
                                        f"{', '.join(str(s) for s in specs)}.")
            out.append(named.pop())
        _check_distinct(out, prim.name, avals, out_avals[0])
        return [tuple(out)] * len(out_avals)
    return rule


def _check_distinct(entries, name: str, avals, out_aval) -> None:
    """A mesh axis may split at most one dimension of the result."""
    seen = []
    for e in entries:
        seen.extend(() if e is None else e if isinstance(e, tuple) else (e,))
    if len(seen) != len(set(seen)):
        dims = ",".join(f"{n}{core._spec_suffix(e)}" for n, e in zip(out_aval.shape, entries))
        result = f"{core.dtypes.short_name(out_aval.dtype)}[{dims}]"
        raise ShardingTypeError(f"{name} operation with inputs: {', '.join(_type_str(a) for a in avals)} produces "
                                f"an illegally sharded result: {result}")


def _select_n_rule(avals, out_avals, params):
    # The cases must be typed alike (JAX's rule); the predicate follows the elementwise rule with them.
    mesh = _mesh(avals, "select_n")
    cases = avals[1:]
    if any(_entries(c) != _entries(cases[0]) for c in cases[1:]):
        shown = [sh.NamedSharding(mesh, sh.PartitionSpec(*_entries(c))) for c in cases]
        raise ShardingTypeError(f"select cases must have the same shardings, got {shown}.")
    return _elementwise_rule(ew.select_n_p)(avals, out_avals, params)


# -- dot_general ---------------------------------------------------------------------------------------------------

def _dot_general_rule(avals, out_avals, params):
    lhs, rhs = avals
    if lhs.sharding is not None and rhs.sharding is not None and lhs.sharding.mesh != rhs.sharding.mesh:
        raise ShardingTypeError(f"Mesh of both lhs and rhs should match. Got lhs: {lhs.sharding.mesh} and rhs: "
                                f"{rhs.sharding.mesh}")
    req = red.requested_dot_sharding()
    if req is not None and len(req) <= len(out_avals[0].shape):
        return [req + (None,) * (len(out_avals[0].shape) - len(req))]
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    ls, rs = _entries(lhs), _entries(rhs)
    lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)
    lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
    for a, b, what in ((lbs, rbs, "lhs batch dimensions and rhs batch dimensions to have the consistent"),
                       (lcs, rcs, "contracting dimensions to have consistent")):
        if any(x is not None and y is not None and x != y for x, y in zip(a, b)):
            raise ShardingTypeError(f"dot_general requires {what} sharding, got {a} and {b}.")
    if any(x is not None and y is not None for x, y in zip(lcs, rcs)) and not _LENIENT.on:
        raise ShardingTypeError("Contracting dimensions are sharded and it is ambiguous how the output should be "
                                "sharded. Please specify the output sharding via the `out_sharding` parameter. "
                                f"Got lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
    lfree = tuple(ls[i] for i in range(len(ls)) if i not in lc and i not in lb)
    rfree = tuple(rs[i] for i in range(len(rs)) if i not in rc and i not in rb)
    out = lbs + lfree + rfree
    _check_distinct(out, "dot_general", avals, out_avals[0])
    return [out]


# -- reductions and structural ops -------------------------------------------------------------------------------

def _reduce_rule(avals, out_avals, params):
    axes = set(params["axes"])
    return [tuple(e for i, e in enumerate(_entries(avals[0])) if i not in axes)]


def _transpose_rule(avals, out_avals, params):
    spec = _entries(avals[0])
    return [tuple(spec[i] for i in params["permutation"])]


def _broadcast_in_dim_rule(avals, out_avals, params):
    spec = iter(_entries(avals[0]))
    dims = set(params["broadcast_dimensions"])
    return [tuple(next(spec) if i in dims else None for i in range(len(params["shape"])))]


def _squeeze_rule(avals, out_avals, params):
    dims = set(params["dimensions"])
    return [tuple(e for i, e in enumerate(_entries(avals[0])) if i not in dims)]


def _reshape_error(aval, new_sizes):
    return ShardingTypeError("This reshape is not supported. Please specify the sharding of the output via the "
                             f"`out_sharding` argument of jax.lax.reshape. Got operand type: {aval}, new sizes: "
                             f"{tuple(new_sizes)}")


def _groups(old: tuple, new: tuple):
    """Pairs runs of `old` and `new` dimensions with equal products (size-1 dimensions attached to the run before
    them), or None when the shapes do not line up that way."""
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        gi, gj = [i] if i < len(old) else [], [j] if j < len(new) else []
        if not gi or not gj:
            return None
        a, b = old[i], new[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                if i >= len(old):
                    return None
                a *= old[i]
                gi.append(i)
                i += 1
            else:
                if j >= len(new):
                    return None
                b *= new[j]
                gj.append(j)
                j += 1
        groups.append((gi, gj))
    return groups


def _axis_size(mesh, entry) -> int:
    return math.prod(mesh.shape[a] for a in (entry if isinstance(entry, tuple) else (entry,)))


def _reshape_rule(avals, out_avals, params):
    aval = avals[0]
    new = tuple(params["new_sizes"])
    spec = _entries(aval)
    if all(e is None for e in spec):
        return [(None,) * len(new)]
    if params.get("dimensions") is not None:
        raise _reshape_error(aval, new)
    old = aval.shape
    if [n for n in old if n != 1] == [n for n in new if n != 1]:  # only size-1 dimensions come and go
        kept = iter(e for n, e in zip(old, spec) if n != 1)
        return [tuple(None if n == 1 else next(kept) for n in new)]
    groups = _groups(tuple(old), new)
    # As in JAX: one dimension is split into several, or several merged into one; nothing else.
    changed = [g for g in groups or () if (len(g[0]), len(g[1])) != (1, 1)]
    if groups is None or len(changed) != 1 or min(len(changed[0][0]), len(changed[0][1])) != 1:
        raise _reshape_error(aval, new)
    mesh = aval.sharding.mesh
    out = [None] * len(new)
    for gi, gj in groups:
        entries = [spec[i] for i in gi]
        if all(e is None for e in entries):
            continue
        # Only the leading dimension of a merged group may be split, and the split must fit the leading new
        # dimension (its size a multiple of the number of blocks): the blocks then stay contiguous.
        if any(e is not None for e in entries[1:]) or new[gj[0]] % _axis_size(mesh, entries[0]):
            raise _reshape_error(aval, new)
        out[gj[0]] = entries[0]
    return [tuple(out)]


# -- reshard: the traced form of `reshard` / `with_sharding_constraint` in explicit mode -----------------------------

reshard_p = standard_primitive("reshard", weak_type="first")


def reshard_traced(x, sharding):
    """`x` (traced) with its type's sharding replaced by `sharding` (a type sharding from `sharding.type_sharding`,
    or None for unsharded). The value is unchanged."""
    return reshard_p.bind(x, sharding=sharding)


def with_out_sharding(compute: Callable, operands: list, out_sharding) -> Any:
    """`compute(*operands)` typed and placed with `out_sharding` (a Sharding, or a PartitionSpec resolved against
    the current mesh): what the `out_sharding=` argument of `lax.reshape`/`lax.dot_general` does. The operation
    runs on operands with their sharding types removed (so its own rule cannot reject the layout) and the result is
    then given the requested type; values are unchanged.

    Raises:
      ValueError: a PartitionSpec with no current mesh, or a spec that does not fit the result's shape.
    """
    target = sh.as_sharding(out_sharding, "out_sharding")

    def untyped(x):
        if isinstance(x, core.Tracer):
            return reshard_traced(x, None) if x.aval.sharding is not None else x
        return Array(x._value, x.weak_type) if type(x) is Array and x._sharding is not None else x

    y = compute(*[untyped(x) for x in operands])
    aval = core.get_aval(y)
    if isinstance(target, sh.NamedSharding):
        target.check_shape(aval.shape)
    if isinstance(y, core.Tracer):
        return reshard_traced(y, sh.type_sharding(target, aval.ndim))
    return Array(y._value, y.weak_type, target)


def _reshard_abstract_eval(x, *, sharding):
    return x.update(sharding=sharding)


abstract_eval_rules[reshard_p] = _reshard_abstract_eval


def _reshard_transpose(ct, x, *, sharding):
    # The cotangent goes back to the operand's type.
    return [None if type(ct) is ad.Zero else reshard_p.bind(ct, sharding=x.aval.sharding)]


ad.deflinear(reshard_p, _reshard_transpose)


def _reshard_batch_rule(vals, dims, *, sharding):
    # The batch dimension is not split: its spec entry is None.
    (x,), (d,) = vals, dims
    if sharding is not None:
        entries = list(sharding.spec)
        entries.insert(d, None)
        sharding = sh.NamedSharding(sharding.mesh, sh.PartitionSpec(*entries))
    return reshard_p.bind(x, sharding=sharding), d


batching.primitive_batchers[reshard_p] = _reshard_batch_rule


def _reshard_rule(avals, out_avals, params):
    s = params["sharding"]
    return [(None,) * len(avals[0].shape) if s is None else tuple(s.spec)]


def _varying_shape_rule(name: str):
    """Slicing and padding: the operand's entries, where every split dimension whose size changes still divides
    evenly (JAX's rule; otherwise ShardingTypeError)."""
    def rule(avals, out_avals, params):
        x, out = avals[0], out_avals[0]
        spec = _entries(x)
        for n_in, n_out, e in zip(x.shape, out.shape, spec):
            if e is not None and n_in != n_out and n_out % _axis_size(x.sharding.mesh, e):
                raise ShardingTypeError(f"{name} on sharded dims where out dim ({n_out}) is not divisible by mesh "
                                        f"axes ({_axis_size(x.sharding.mesh, e)}) with spec ({e}) is not "
                                        f"implemented. Got input type={x.str_short()} and output "
                                        f"shape={tuple(out.shape)}")
        return [spec]
    return rule


def _concatenate_rule(avals, out_avals, params):
    # Operands whose types carry a sharding must all carry the same one (JAX's rule; fluxion's unsharded operands
    # have no sharding in their type and are not compared).
    mesh = _mesh(avals, "concatenate")
    sharded = [a for a in avals if a.sharding is not None]
    if any(_entries(a) != _entries(sharded[0]) for a in sharded[1:]):
        shown = ", ".join(str(sh.NamedSharding(mesh, sh.PartitionSpec(*_entries(a)))) for a in avals)
        raise ShardingTypeError(f"All operands should have the same sharding. Got shardings {shown}")
    return [_entries(sharded[0])]


def _scan_rule(avals, out_avals, params):
    # The scanned-over dimension of every `xs` must be unsplit (JAX's rule); the carry keeps the body's output
    # types and the stacked `ys` get an unsplit leading dimension.
    nc, nk = params["num_consts"], params["num_carry"]
    for a in avals[nc + nk:]:
        e = _entries(a)
        if e and e[0] is not None:
            raise ValueError(f"0th dimension of all xs should be replicated. Got {sh.PartitionSpec(*e)}")
    body = params["jaxpr"].out_avals
    return [_entries(o) for o in body[:nk]] + [(None,) + _entries(o) for o in body[nk:]]


def _same_spec_rule(avals, out_avals, params):
    return [_entries(avals[0])] * len(out_avals)


def _jit_rule(avals, out_avals, params):
    return [_entries(o) for o in params["jaxpr"].out_avals]


def _fallback_rule(avals, out_avals, params):
    out = []
    for o in out_avals:
        match = next((a for a in avals if a.sharding is not None and a.shape == o.shape), None)
        out.append(_entries(match) if match is not None else (None,) * len(o.shape))
    return out


for _prim in ew.ELEMENTWISE_PRIMITIVES:
    RULES[_prim] = _elementwise_rule(_prim)
RULES[ew.select_n_p] = _select_n_rule
for _prim in (ew.clamp_p, ew.pow_p, ew.polygamma_p):
    RULES[_prim] = _elementwise_rule(_prim)
for _prim in (ew.convert_element_type_p, ew.integer_pow_p):
    RULES[_prim] = _same_spec_rule
for _prim in (red.reduce_sum_p, red.reduce_prod_p, red.reduce_max_p, red.reduce_min_p, red.reduce_and_p,
              red.reduce_or_p, red.reduce_xor_p, red.argmax_p, red.argmin_p):
    RULES[_prim] = _reduce_rule
RULES[red.dot_general_p] = _dot_general_rule
RULES[st.transpose_p] = _transpose_rule
RULES[st.broadcast_in_dim_p] = _broadcast_in_dim_rule
RULES[st.squeeze_p] = _squeeze_rule
RULES[st.reshape_p] = _reshape_rule
RULES[call.jit_p] = _jit_rule
RULES[reshard_p] = _reshard_rule
RULES[cf.scan_p] = _scan_rule
RULES[st.concatenate_p] = _concatenate_rule
RULES[st.slice_p] = _varying_shape_rule("slicing")
RULES[st.dynamic_slice_p] = _varying_shape_rule("dynamic_slice")
RULES[st.pad_p] = _varying_shape_rule("padding")
RULES[st.rev_p] = _same_spec_rule
RULES[st.dynamic_update_slice_p] = _same_spec_rule


# -- Auto mode: the layout jit gives outputs when the mesh axes are Auto ---------------------------------------------

class _Lenient(threading.local):
    on = False  # inside `infer_auto_entries`: ambiguous products do not raise


_LENIENT = _Lenient()


def infer_auto_entries(jaxpr, in_entries: list, mesh) -> list:
    """The spec entries of `jaxpr`'s outputs given its inputs' (`in_entries`: one tuple per invar, or None for an
    unsplit input) on the abstract `mesh`: the explicit-mode rules applied to every equation, except that where
    they would raise, the result is what is still determined. A product contracting a dimension split on both
    operands keeps its free dimensions' entries (the partial sums are added up, the free dimensions stay split:
    `tanh(x @ w1) @ w2` with `w2` split on its rows keeps the batch split of `x`); any other conflict leaves the
    result unsplit. `jit` calls are followed into; constants are unsplit.

    This matches what XLA's propagation gives for the common cases (elementwise maps, `x @ w` with `w` split on its
    output dimension -> output split on it, reductions, transposes, MLP layers); see the README's Sharding section.
    """
    env: dict = {}

    def read(v):
        if isinstance(v, core.Literal):
            return None
        return env.get(v)

    def typed(v, entries):
        aval = v.aval
        if entries is None or all(e is None for e in entries):
            return aval if aval.sharding is None else aval.update(sharding=None)
        return aval.update(sharding=sh.NamedSharding(mesh, sh.PartitionSpec(*entries)))

    for v, e in zip(jaxpr.invars, in_entries):
        env[v] = e
    prev, _LENIENT.on = _LENIENT.on, True
    try:
        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            if eqn.primitive is call.jit_p:
                outs = infer_auto_entries(eqn.params["jaxpr"].jaxpr, ins, mesh)
            else:
                avals = [typed(v, e) for v, e in zip(eqn.invars, ins)]
                try:
                    outs = RULES.get(eqn.primitive, _fallback_rule)(avals, [v.aval for v in eqn.outvars], eqn.params)
                except (ShardingTypeError, KeyError, TypeError, ValueError):
                    outs = [None] * len(eqn.outvars)
            for v, e in zip(eqn.outvars, outs):
                env[v] = None if e is None or all(x is None for x in e) else tuple(e)
    finally:
        _LENIENT.on = prev
    return [read(v) for v in jaxpr.outvars]


# -- the hooks -----------------------------------------------------------------------------------------------------

def _out_specs(prim, avals, out_avals, params):
    """The spec of each output, or None when no operand is sharded (the result's type is then unsharded)."""
    mesh = _mesh(avals, prim.name)
    if mesh is None:
        # Only these two can make a sharded result from unsharded operands.
        if prim is call.jit_p:
            mesh = next((o.sharding.mesh for o in params["jaxpr"].out_avals if o.sharding is not None), None)
        elif prim is reshard_p and params["sharding"] is not None:
            mesh = params["sharding"].mesh
        if mesh is None:
            return None, None
    return RULES.get(prim, _fallback_rule)(avals, out_avals, params), mesh


def _typed(aval: ShapedArray, entries: tuple, mesh) -> ShapedArray:
    if all(e is None for e in entries):
        return aval if aval.sharding is None else aval.update(sharding=None)
    return aval.update(sharding=sh.NamedSharding(mesh, sh.PartitionSpec(*entries)))


def type_outputs(prim, avals, out, params):
    """Staging: the abstract outputs `out` (one aval, or a list for multiple results) typed with shardings."""
    outs = out if prim.multiple_results else [out]
    specs, mesh = _out_specs(prim, avals, outs, params)
    if specs is None:
        typed = [o if o.sharding is None else o.update(sharding=None) for o in outs]
    else:
        typed = [_typed(o, e, mesh) for o, e in zip(outs, specs)]
    return typed if prim.multiple_results else typed[0]


def _concrete_mesh(args, abstract):
    for a in args:
        s = getattr(a, "_sharding", None) if type(a) is Array else None
        if isinstance(s, sh.NamedSharding) and isinstance(s.mesh, sh.Mesh) and s.mesh.abstract_mesh == abstract:
            return s.mesh
    mesh = sh.get_mesh()
    if isinstance(mesh, sh.Mesh) and mesh.abstract_mesh == abstract:
        return mesh
    return sh.CONCRETE_MESHES.get(abstract)


def eager_apply(prim, args, params, plain: Callable) -> Any:
    """Eager: checks and types the operands' shardings (raising before computing), computes, and places the
    results on the typed shardings (over the operands' concrete mesh)."""
    avals = [core.get_aval(a) for a in args]
    if all(a.sharding is None for a in avals) and prim is not call.jit_p and prim is not reshard_p:
        return plain(prim, args, params)
    out_avals = core.abstract_eval_rules[prim](*avals, **params) if prim in core.abstract_eval_rules else None
    if out_avals is None:
        return plain(prim, args, params)
    outs = out_avals if prim.multiple_results else [out_avals]
    specs, mesh = _out_specs(prim, avals, outs, params)
    result = plain(prim, args, params)
    if specs is None:
        return result
    concrete = _concrete_mesh(args, mesh)
    if concrete is None:
        return result
    results = result if prim.multiple_results else [result]
    placed = [Array(r._value, r.weak_type, sh.NamedSharding(concrete, sh.PartitionSpec(*e)))
              for r, e in zip(results, specs)]
    return placed if prim.multiple_results else placed[0]


def _install() -> None:
    core.enable_explicit_sharding(eager_apply, type_outputs)


sh.ON_FIRST_EXPLICIT.append(_install)
if sh.EXPLICIT_IN_USE[0]:
    _install()
