"""Vectorization (`vmap`): a trace whose tracers carry a batch dimension.

A `BatchTracer` holds the batched value and the index of its batch dimension (`not_mapped` = None when the value
is the same for every example). Each primitive has a batching rule
`rule(batched_args, batch_dims, **params) -> (out, out_dim)` in `primitive_batchers`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import core
from ..core import ShapedArray, Tracer
from . import array_ops

not_mapped = None

primitive_batchers: dict = {}  # prim -> rule(vals, dims, **params) -> (out(s), out_dim(s))


class BatchPayload:
    __slots__ = ("axis_size", "axis_name", "spmd_axis_name")

    def __init__(self, axis_size: int, axis_name: Any = None, spmd_axis_name: Any = None):
        self.axis_size = axis_size
        self.axis_name = axis_name
        self.spmd_axis_name = spmd_axis_name


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: "BatchTrace", val: Any, batch_dim: int | None):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        a = core.get_aval(self.val)
        if self.batch_dim is None:
            return a
        shape = a.shape[:self.batch_dim] + a.shape[self.batch_dim + 1:]
        return ShapedArray(shape, a.dtype, a.weak_type)

    def _concrete_value(self):
        return core.concrete_value(self.val) if self.batch_dim is None else None

    def __repr__(self) -> str:
        # As JAX prints the tracers of vmap: the per-example type and the type of the batched value.
        return f"VmapTracer(aval={self.aval}, batched={core.get_aval(self.val)})"

    def _origin_description(self) -> str:
        return ("The value is batched by vmap: it has a different value for each example of the batch, so it has no "
                "single concrete value.")


class BatchTrace(core.Trace):
    @property
    def axis_size(self) -> int:
        return self.main.payload.axis_size

    @property
    def axis_name(self):
        return self.main.payload.axis_name

    def pure(self, val):
        return BatchTracer(self, val, not_mapped)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        vals = [t.val for t in tracers]
        dims = [t.batch_dim for t in tracers]
        if all(d is not_mapped for d in dims):
            out = primitive.bind(*vals, **params)
            if primitive.multiple_results:
                return [BatchTracer(self, o, not_mapped) for o in out]
            return BatchTracer(self, out, not_mapped)
        rule = primitive_batchers.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented (vmap of this "
                                      "primitive is unsupported)")
        if getattr(rule, "needs_axis", False):
            out, out_dim = rule(vals, dims, axis_size=self.axis_size, axis_name=self.axis_name, **params)
        else:
            out, out_dim = rule(vals, dims, **params)
        if primitive.multiple_results:
            return [BatchTracer(self, o, d) for o, d in zip(out, out_dim)]
        return BatchTracer(self, out, out_dim)

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, *, symbolic_zeros=False):
        from .custom import batch_custom_jvp
        return batch_custom_jvp(self, primitive, fun, jvp, tracers)

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, out_trees):
        from .custom import batch_custom_vjp
        return batch_custom_vjp(self, primitive, fun, fwd, bwd, tracers, out_trees)


def moveaxis(x, src: int | None, dst: int, axis_size: int):
    """Moves batch dim `src` of `x` to position `dst` (broadcasting an unbatched value to `axis_size`)."""
    if src is not_mapped:
        aval = core.get_aval(x)
        shape = list(aval.shape)
        shape.insert(dst, axis_size)
        dims = tuple(i for i in range(len(shape)) if i != dst)
        return array_ops.broadcast_in_dim(x, tuple(shape), dims)
    if src == dst:
        return x
    nd = core.get_aval(x).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return array_ops.transpose(x, tuple(perm))


def bdim_at_front(x, d: int | None, axis_size: int):
    return moveaxis(x, d, 0, axis_size)


def vmap_flat(fun: Callable, in_vals: Sequence[Any], in_dims: Sequence[int | None], axis_size: int,
              axis_name: Any = None, out_dims_fn: Callable[[int], Sequence[int | None]] | None = None,
              spmd_axis_name: Any = None) -> list:
    """Runs `fun` batched along `in_dims` and returns outputs with their batch dim moved to the requested dims."""
    with core.new_main(BatchTrace, payload=BatchPayload(axis_size, axis_name, spmd_axis_name)) as main:
        trace = BatchTrace(main)
        tracers = [BatchTracer(trace, v, d) if d is not not_mapped else v for v, d in zip(in_vals, in_dims)]
        outs = fun(*tracers)
        out_tracers = [core.full_raise(trace, o) for o in outs]
        vals = [t.val for t in out_tracers]
        dims = [t.batch_dim for t in out_tracers]
    targets = out_dims_fn(len(vals)) if out_dims_fn is not None else [0] * len(vals)
    results = []
    for v, d, dst in zip(vals, dims, targets):
        if dst is None:
            if d is not not_mapped:
                raise ValueError("vmap has mapped output but out_axes is None: an output with out_axes=None must "
                                 "not depend on the mapped inputs")
            results.append(v)
        else:
            nd = core.get_aval(v).ndim + (1 if d is not_mapped else 0)
            if not -nd <= dst < nd:
                raise ValueError(f"vmap out_axes: axis {dst} is out of bounds for array of dimension {nd} (an "
                                 f"output of rank {nd - 1} per example gains one batch axis)")
            results.append(moveaxis(v, d, dst % nd, axis_size))
    return results


def batch_jaxpr(closed: core.ClosedJaxpr, axis_size: int, in_batched: Sequence[bool],
                instantiate: bool | Sequence[bool], axis_name: Any = None) -> tuple[core.ClosedJaxpr, list[bool]]:
    """Batches a closed jaxpr along axis 0 of the inputs marked in `in_batched`.

    Returns the batched jaxpr (batched inputs and outputs carry the batch dim first) and which outputs are batched.
    """
    from . import partial_eval as pe
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(closed.out_avals)
    out_batched: list[bool] = []

    def fun(*args):
        with core.new_main(BatchTrace, payload=BatchPayload(axis_size, axis_name)) as main:
            trace = BatchTrace(main)
            tracers = [BatchTracer(trace, a, 0 if b else not_mapped) for a, b in zip(args, in_batched)]
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
            out_tracers = [core.full_raise(trace, o) for o in outs]
            res = []
            out_batched.clear()
            for t, inst in zip(out_tracers, instantiate):
                if t.batch_dim is not_mapped and not inst:
                    res.append(t.val)
                    out_batched.append(False)
                else:
                    res.append(moveaxis(t.val, t.batch_dim, 0, axis_size))
                    out_batched.append(True)
            return res

    in_avals = []
    for a, b in zip(closed.in_avals, in_batched):
        in_avals.append(ShapedArray((axis_size,) + a.shape, a.dtype, a.weak_type) if b else a)
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, in_avals)
    return core.ClosedJaxpr(jaxpr, consts), list(out_batched)
