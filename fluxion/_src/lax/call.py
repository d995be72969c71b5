"""`jit` as a primitive: `jit_p` calls a closed jaxpr (printed `jit[name=f jaxpr={ ... }]`, as JAX prints it).

When a jitted function is called under another transformation (`grad`, `vmap`, an enclosing `jit`, a `scan`
body), `jit` traces the function once per signature and binds `jit_p` with the traced program instead of inlining
the function, so the transformation sees one equation whose rules transform the whole program:

* abstract evaluation: the program's output types;
* JVP: the program's JVP, split by partial evaluation into a primal call (the original outputs plus residuals)
  and a tangent call that is linear in the tangents, so that reverse mode can transpose it;
* transpose: a call of the transposed program;
* batching: a call of the batched program.

Each derived program is computed once per (program, variant) and memoized on the program (`ClosedJaxpr.memo`),
so differentiating or batching a jitted function in a loop traces nothing after the first call. The backend
registers the implementation (run the compiled program); the compiler's inline pass flattens nested calls.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core import ClosedJaxpr, Primitive, abstract_eval_rules, param_print_order
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero


def _jit_weak_types(args: Sequence[Any], params: dict) -> list[bool]:
    return [a.weak_type for a in params["jaxpr"].out_avals]


jit_p = Primitive("jit", multiple_results=True, weak_type=_jit_weak_types)
param_print_order[jit_p] = ("name", "jaxpr")


def call_jaxpr(closed: ClosedJaxpr, args: Sequence[Any], name: str) -> list:
    """Binds `jit_p`: calls the program `closed` on `args` (one per input of the program)."""
    return jit_p.bind(*args, jaxpr=closed, name=name)


def memoized(closed: ClosedJaxpr, key: tuple, make):
    """The derived value `make()` memoized on `closed` under `key`."""
    hit = closed.memo.get(key)
    if hit is None:
        hit = closed.memo[key] = make()
    return hit


def _jit_abstract_eval(*avals, jaxpr: ClosedJaxpr, name: str):
    expected = jaxpr.in_avals
    if len(avals) != len(expected):
        raise TypeError(f"jit call of {name} takes {len(expected)} arguments, got {len(avals)}")
    for k, (a, b) in enumerate(zip(avals, expected)):
        if (a.shape, a.dtype) != (b.shape, b.dtype):
            raise TypeError(f"jit call of {name}: argument {k} has type {a.str_short()}, the program expects "
                            f"{b.str_short()}")
    return list(jaxpr.out_avals)


abstract_eval_rules[jit_p] = _jit_abstract_eval


class _JVPSplit:
    """A program's JVP split into a primal call and a tangent call that is linear in the tangents."""

    __slots__ = ("primal", "tangent", "out_nonzero")

    def __init__(self, closed: ClosedJaxpr, nonzeros: tuple):
        n_out = len(closed.out_avals)
        jvp, out_nonzero = ad.jvp_jaxpr(closed, nonzeros, False)
        unknowns = [False] * len(nonzeros) + [True] * sum(nonzeros)
        n_t = sum(out_nonzero)
        # primal: primals -> (primal outputs..., residuals...); tangent: (residuals..., tangents...) -> tangents
        self.primal, self.tangent, _, _ = pe.partial_eval_closed_jaxpr(jvp, unknowns, [False] * n_out + [True] * n_t)
        self.out_nonzero = out_nonzero


def _jit_jvp(primals, tangents, *, jaxpr: ClosedJaxpr, name: str):
    nonzeros = tuple(type(t) is not Zero for t in tangents)
    split = memoized(jaxpr, ("jvp", nonzeros), lambda: _JVPSplit(jaxpr, nonzeros))
    n_out = len(jaxpr.out_avals)
    outs = call_jaxpr(split.primal, primals, name)
    primal_out, residuals = outs[:n_out], outs[n_out:]
    nz = [t for t in tangents if type(t) is not Zero]
    it = iter(call_jaxpr(split.tangent, [*residuals, *nz], f"jvp({name})"))
    tangent_out = [next(it) if nz_out else Zero(ad.tangent_aval(a))
                   for nz_out, a in zip(split.out_nonzero, jaxpr.out_avals)]
    return primal_out, tangent_out


ad.primitive_jvps[jit_p] = _jit_jvp


def transpose_call(jaxpr: ClosedJaxpr, cts, args, call) -> list:
    """The transpose rule of a call primitive: `call(program, operands)` binds the memoized transposed program on
    (non-linear operands, cotangents); returns one cotangent per linear operand (None for the others)."""
    linear = tuple(ad.is_undefined_primal(x) for x in args)
    transposed = memoized(jaxpr, ("transpose", linear), lambda: ad.transpose_jaxpr(jaxpr, linear))
    nonlinear = [x for x, lin in zip(args, linear) if not lin]
    cts = [ad.instantiate_zeros(c) for c in cts]
    it = iter(call(transposed, [*nonlinear, *cts]))
    return [next(it) if lin else None for lin in linear]


def batch_call(jaxpr: ClosedJaxpr, vals, dims, axis_size: int, axis_name: Any, call) -> tuple[list, list]:
    """The batching rule of a call primitive: `call(program, operands)` binds the memoized batched program on the
    operands, batch axes moved to the front."""
    in_batched = tuple(d is not batching.not_mapped for d in dims)
    batched, out_batched = memoized(jaxpr, ("batch", axis_size, in_batched, axis_name),
                                 lambda: batching.batch_jaxpr(jaxpr, axis_size, in_batched, False, axis_name))
    vals = [batching.moveaxis(v, d, 0, axis_size) if d is not batching.not_mapped else v for v, d in zip(vals, dims)]
    outs = call(batched, vals)
    return outs, [0 if b else batching.not_mapped for b in out_batched]


def _jit_transpose(cts, *args, jaxpr: ClosedJaxpr, name: str):
    return transpose_call(jaxpr, cts, args, lambda closed, ops: call_jaxpr(closed, ops, f"transpose({name})"))


ad.primitive_transposes[jit_p] = _jit_transpose


def _jit_batch_rule(vals, dims, *, jaxpr: ClosedJaxpr, name: str, axis_size: int, axis_name: Any = None):
    return batch_call(jaxpr, vals, dims, axis_size, axis_name, lambda closed, ops: call_jaxpr(closed, ops, name))


_jit_batch_rule.needs_axis = True
batching.primitive_batchers[jit_p] = _jit_batch_rule
