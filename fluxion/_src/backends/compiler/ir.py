"""Helpers the compiler's passes share: walking sub-jaxprs, literals, renaming, and a recursive type check.

The compiler works on `ClosedJaxpr`s (a jaxpr plus the values of its constvars) so that passes such as constant
folding can see constants. Every pass returns a new `ClosedJaxpr` and never mutates its input: jaxprs are shared
with `Lowered` objects and caches.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator

import numpy as np

from ... import core
from ...core import Array, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var

Atom = Any  # a Var or a Literal


def size(v: Any) -> int:
    """Number of elements of a variable's (or literal's) value, from its static shape (cheaper than `aval.size`)."""
    return math.prod(v.aval.shape)


def is_literal(v: Atom) -> bool:
    return type(v) is Literal


def literal_value(lit: Literal) -> Any:
    """The raw NumPy value (0-d array or NumPy scalar) of a literal."""
    val = lit.val
    return val._value if type(val) is Array else val


def make_literal(raw: Any, aval: ShapedArray) -> Literal:
    """A literal holding `raw` (converted to `aval.dtype`), typed by `aval`."""
    value = np.asarray(raw, dtype=aval.dtype).reshape(())[()]
    return Literal(Array(value, aval.weak_type), aval)


def sub_jaxprs(params: dict) -> Iterator[Any]:
    """Yields every `ClosedJaxpr`/`Jaxpr` held by an equation's parameters (control flow, custom calls)."""
    for value in params.values():
        if isinstance(value, (ClosedJaxpr, Jaxpr)):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, (ClosedJaxpr, Jaxpr)):
                    yield item


def has_sub_jaxprs(eqn: JaxprEqn) -> bool:
    return next(sub_jaxprs(eqn.params), None) is not None


def map_sub_jaxprs(params: dict, fn: Callable[[ClosedJaxpr], ClosedJaxpr]) -> dict:
    """Returns `params` with `fn` applied to every sub-jaxpr (a bare `Jaxpr` is wrapped, then unwrapped)."""
    def apply(value):
        if isinstance(value, ClosedJaxpr):
            return fn(value)
        if isinstance(value, Jaxpr):
            out = fn(ClosedJaxpr(value, []))
            if out.consts:  # cannot express consts in a bare Jaxpr: keep the original
                return value
            return out.jaxpr
        return value

    changed = False
    new = {}
    for k, v in params.items():
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            nv = apply(v)
        elif isinstance(v, (tuple, list)) and any(isinstance(x, (ClosedJaxpr, Jaxpr)) for x in v):
            nv = type(v)(apply(x) for x in v)
        else:
            nv = v
        changed |= nv is not v
        new[k] = nv
    return new if changed else params


def is_effectful(eqn: JaxprEqn) -> bool:
    """Whether the equation has side effects (a callback, directly or in a sub-jaxpr): never dropped, merged or
    folded."""
    return core.eqn_has_effects(eqn)


def producers(jaxpr: Jaxpr) -> dict:
    """Maps each variable defined by an equation to that equation."""
    return {v: e for e in jaxpr.eqns for v in e.outvars}


def use_counts(jaxpr: Jaxpr) -> dict:
    """How many times each variable is read (by equations and as an output)."""
    counts: dict = {}
    for e in jaxpr.eqns:
        for v in e.invars:
            if type(v) is Var:
                counts[v] = counts.get(v, 0) + 1
    for v in jaxpr.outvars:
        if type(v) is Var:
            counts[v] = counts.get(v, 0) + 1
    return counts


class Renamer:
    """Substitutes atoms while a pass rewrites equations in order (`read` follows chains of replacements)."""

    __slots__ = ("env",)

    def __init__(self):
        self.env: dict = {}

    def read(self, v: Atom) -> Atom:
        if type(v) is Literal:
            return v
        return self.env.get(v, v)

    def set(self, old: Var, new: Atom) -> None:
        self.env[old] = self.read(new)

    def eqn(self, eqn: JaxprEqn) -> JaxprEqn:
        ins = [self.read(v) for v in eqn.invars]
        if all(a is b for a, b in zip(ins, eqn.invars)):
            return eqn
        return eqn._replace(invars=ins)

    def outvars(self, outvars: list) -> list:
        return [self.read(v) for v in outvars]


def with_eqns(closed: ClosedJaxpr, eqns: list, outvars: list | None = None, constvars: list | None = None,
              consts: list | None = None) -> ClosedJaxpr:
    """A new closed jaxpr like `closed` with the given equations (and optionally outputs/constants)."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars if constvars is None else constvars, j.invars,
                             j.outvars if outvars is None else outvars, eqns),
                       closed.consts if consts is None else consts)


def prune_constvars(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Drops constvars that nothing reads."""
    used = set(use_counts(closed.jaxpr))
    j = closed.jaxpr
    keep = [(v, c) for v, c in zip(j.constvars, closed.consts) if v in used]
    if len(keep) == len(j.constvars):
        return closed
    return ClosedJaxpr(Jaxpr([v for v, _ in keep], j.invars, j.outvars, j.eqns), [c for _, c in keep])


def check_closed_jaxpr(closed: ClosedJaxpr) -> None:
    """Type-checks a closed jaxpr and, recursively, every sub-jaxpr (core's check does one level).

    Raises:
      core.JaxprTypeError: naming the offending equation; also when const values and constvars disagree.
    """
    j = closed.jaxpr
    if len(j.constvars) != len(closed.consts):
        raise core.JaxprTypeError(f"{len(j.constvars)} constvars but {len(closed.consts)} constant values")
    for v, c in zip(j.constvars, closed.consts):
        raw = getattr(c, "_value", c)
        if tuple(np.shape(raw)) != v.aval.shape:
            raise core.JaxprTypeError(f"constant of shape {np.shape(raw)} bound to constvar {v.aval.str_short()}")
    check_jaxpr(j)


def check_jaxpr(jaxpr: Jaxpr) -> None:
    core.check_jaxpr(jaxpr)
    for e in jaxpr.eqns:
        for sub in sub_jaxprs(e.params):
            if isinstance(sub, ClosedJaxpr):
                check_closed_jaxpr(sub)
            else:
                check_jaxpr(sub)


def all_eqns(jaxpr: Jaxpr) -> Iterator[JaxprEqn]:
    """Every equation of `jaxpr` and, depth first, of its sub-jaxprs (loop bodies, branches, custom rules)."""
    for e in jaxpr.eqns:
        yield e
        for sub in sub_jaxprs(e.params):
            yield from all_eqns(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub)


def count_eqns(jaxpr: Jaxpr) -> int:
    """Number of equations, counting those of sub-jaxprs."""
    return sum(1 for _ in all_eqns(jaxpr))
