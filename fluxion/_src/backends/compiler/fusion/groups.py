"""Choosing what to fuse: groups of elementwise equations over one iteration domain, plus the reductions that
consume them, and a valid execution order for groups and the remaining equations.

A group's *domain* is the shape its elementwise values share. Members are fusible elementwise equations
(`scalar.fusible`), `broadcast_in_dim` (read as an index map into its operand) and `iota` (computed from the loop
indices). Reductions (`reduce_sum/max/min`) whose operand is a member join as *sinks*, all over the same axes;
their results, and member values read outside the group, are the group's outputs -- everything else never touches
memory.

Groups are grown greedily in program order: an equation joins (and merges) the groups producing its operands unless
that would create a cycle (an outside equation that needs one group's result and feeds the other); then it joins
those of them it can join without one. Groups whose
domain is smaller than the size threshold (unless they are long: `fluxion_small_group_min_ops` operations, so that one
kernel call, about 2 us with its argument checks, replaces that many NumPy calls of about 0.7 us each on small
arrays), or that would replace a single cheap NumPy call, are dissolved.
"""

from __future__ import annotations

import heapq
from typing import Any, Sequence

import numpy as np

from ....config import config
from ....core import Var
from ....lax.elementwise import (abs_p, add_p, and_p, ceil_p, clamp_p, convert_element_type_p, div_p, eq_p, floor_p,
                                ge_p, gt_p, integer_pow_p, is_finite_p, le_p, logistic_p, lt_p, max_p, min_p, mul_p,
                                ne_p, neg_p, not_p, or_p, select_n_p, sign_p, sqrt_p, square_p, sub_p, xor_p)
from ....lax.mul_add import mul_add_p
from ....lax.reductions import reduce_sum_p
from ....lax.structural import broadcast_in_dim_p, iota_p
from .. import blas, ir
from . import scalar
from .scalar import REDUCTIONS

# Members that cost no NumPy pass of their own (views and index arithmetic do not count towards "worth fusing").
_FREE = frozenset({broadcast_in_dim_p, iota_p})
# A single one of these is already worth a kernel: NumPy computes them slowly (branchy `where`) or in several passes.
_EXPENSIVE = frozenset({select_n_p, clamp_p, logistic_p, integer_pow_p, sign_p})


class Group:
    """A set of equations (indices into the jaxpr's equation list) fused into one kernel."""

    __slots__ = ("id", "members", "domain", "red_axes", "alive")

    def __init__(self, gid: int, domain: tuple):
        self.id = gid
        self.members: list[int] = []
        self.domain = domain
        self.red_axes: tuple | None = None
        self.alive = True

    def __repr__(self) -> str:
        return f"Group({self.id}, domain={self.domain}, members={self.members}, red_axes={self.red_axes})"


def _ew_kind(eqn) -> bool:
    prim = eqn.primitive
    if prim is broadcast_in_dim_p:
        return scalar.dtype_ok(eqn.outvars[0].aval.dtype)
    if prim is iota_p:
        return scalar.dtype_ok(eqn.outvars[0].aval.dtype) and np.dtype(eqn.params["dtype"]).kind in "iu"
    return scalar.fusible(eqn)


# Operations whose kernel form rounds exactly as NumPy does (IEEE arithmetic, correctly rounded sqrt and fused
# multiply-add, selections, comparisons, conversions). Transcendental functions use other approximations in kernels (`mathlib`) and `x**3` is
# two roundings instead of `pow`'s one, so below the size threshold -- where tests and small programs live and
# fusion gains little -- only these are fused, and jit stays bit-identical to eager execution there.
EXACT = frozenset({add_p, sub_p, mul_p, div_p, neg_p, max_p, min_p, abs_p, sign_p, sqrt_p, floor_p, ceil_p, square_p,
                   select_n_p, clamp_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p, and_p, or_p, xor_p, not_p, is_finite_p,
                   convert_element_type_p, broadcast_in_dim_p, iota_p, mul_add_p})


def exact(eqn) -> bool:
    prim = eqn.primitive
    if prim is integer_pow_p:
        return eqn.params["y"] in (1, 2)
    return prim in EXACT


def reduction_pattern(domain: Sequence[int], axes: Sequence[int]) -> str | None:
    """'R' (full), 'KR' (kept outer dims, reduced inner) or 'RK' (reduced outer, kept inner) -- ignoring size-1
    dimensions -- or None for other layouts, which kernels do not handle."""
    classes = [("R" if d in axes else "K") for d, n in enumerate(domain) if n != 1]
    runs = "".join(c for k, c in enumerate(classes) if k == 0 or classes[k - 1] != c)
    return runs if runs in ("R", "KR", "RK") else None


def _reduction_ok(eqn) -> bool:
    dt = eqn.invars[0].aval.dtype
    if not scalar.dtype_ok(dt) or ir.size(eqn.invars[0]) == 0:
        return False
    if eqn.primitive is reduce_sum_p and dt == np.bool_:
        return False
    return reduction_pattern(eqn.invars[0].aval.shape, tuple(eqn.params["axes"])) is not None


def alone(eqn) -> tuple | None:
    """(domain, reduced axes or None) of a kernel computing `eqn` by itself, or None if it cannot be a kernel.

    The whole-step tier (`compiler.wholestep`) compiles the equations no group took (a lone `max`, a reduction of a
    product's result) as one-equation kernels, since its program has no NumPy calls to leave them to."""
    if eqn.primitive.multiple_results:
        return None
    if eqn.primitive in REDUCTIONS:
        v = eqn.invars[0]
        if type(v) is not Var or not _reduction_ok(eqn):
            return None
        return v.aval.shape, tuple(sorted(eqn.params["axes"]))
    if not _ew_kind(eqn):
        return None
    return eqn.outvars[0].aval.shape, None


class Grouping:
    """Runs the greedy grouping over one jaxpr's equations.

    Args:
      eqns: the equations in program order.
      outvars: the jaxpr's outputs.
      min_elements: groups over smaller domains are formed only from exact operations (`exact`) and kept only
        with at least `fluxion_small_group_min_ops` operations.
    """

    def __init__(self, eqns: Sequence[Any], outvars: Sequence[Any], min_elements: int):
        self.eqns = list(eqns)
        self.outvars = list(outvars)
        self.min_elements = min_elements
        self.small_group_min_ops = int(config.fluxion_small_group_min_ops)
        self.producer: dict = {}
        for i, e in enumerate(self.eqns):
            for v in e.outvars:
                self.producer[v] = i
        self.group_of: dict[int, Group] = {}
        self.groups: list[Group] = []
        # Position of the last BLAS equation (a product) before each equation, -1 if none.
        self.last_barrier: list[int] = []
        last = -1
        for i, e in enumerate(self.eqns):
            self.last_barrier.append(last)
            if e.primitive in blas.BLAS_PRIMITIVES:
                last = i

    # -- cycle check -----------------------------------------------------------------------------------------------
    def _depends_on(self, v: Any, members: set, lo: int) -> bool:
        """Whether `v` is (transitively) computed from an equation in `members` (indices >= `lo`), where an equation
        already in another group stands for its whole group: the group runs as one kernel, so it needs the inputs of
        all its members first (two groups each feeding the other through different members would form a cycle)."""
        stack, seen, seen_groups = [v], set(), set()
        while stack:
            x = stack.pop()
            if type(x) is not Var or x in seen:
                continue
            seen.add(x)
            i = self.producer.get(x)
            if i is None:
                continue
            if i in members:
                return True
            g = self.group_of.get(i)
            # An equation before every member cannot depend on them -- unless its group has later members.
            if i < lo and (g is None or not g.alive or g.members[-1] < lo):
                continue
            if g is not None and g.alive:
                if id(g) in seen_groups:
                    continue
                seen_groups.add(id(g))
                for m in g.members:
                    if m >= lo:  # an earlier member cannot depend on `members`
                        stack.extend(self.eqns[m].invars)
            else:
                stack.extend(self.eqns[i].invars)
        return False

    def _acyclic(self, members: set) -> bool:
        """Whether `members` can run as one kernel: no outside equation between two members, and no member reading
        a reduction computed in the same kernel (reductions are the kernel's sinks: their results exist only when
        its loops have finished, e.g. `x == max(x)` needs the maximum before the comparison starts)."""
        lo = min(members)
        produced = {v for i in members for v in self.eqns[i].outvars}
        reduced = {v for i in members if self.eqns[i].primitive in REDUCTIONS for v in self.eqns[i].outvars}
        for i in members:
            for v in self.eqns[i].invars:
                if type(v) is not Var:
                    continue
                if v in reduced:
                    return False
                if v not in produced and self._depends_on(v, members, lo):
                    return False
        return True

    # -- growth ----------------------------------------------------------------------------------------------------
    def _join(self, idx: int, cands: list[Group], domain: tuple, red_axes: tuple | None) -> bool:
        members = {idx}
        for g in cands:
            members.update(g.members)
        if not self._acyclic(members):
            return False
        target = cands[0]
        for g in cands[1:]:
            target.members.extend(g.members)
            for m in g.members:
                self.group_of[m] = target
            g.alive = False
            g.members = []
            if g.red_axes is not None:
                target.red_axes = g.red_axes
        target.members.append(idx)
        target.members.sort()
        if red_axes is not None:
            target.red_axes = red_axes
        self.group_of[idx] = target
        return True

    def _new_group(self, idx: int, domain: tuple) -> None:
        g = Group(len(self.groups), domain)
        g.members.append(idx)
        self.groups.append(g)
        self.group_of[idx] = g

    def run(self) -> list[Group]:
        for idx, eqn in enumerate(self.eqns):
            prim = eqn.primitive
            if prim in REDUCTIONS:
                self._add_reduction(idx, eqn)
                continue
            if eqn.primitive.multiple_results or not _ew_kind(eqn):
                continue
            domain = eqn.outvars[0].aval.shape
            if int(np.prod(domain, dtype=np.int64)) < self.min_elements and not exact(eqn):
                continue  # small arrays: only bit-exact operations are fused (see `exact`)
            cands = []
            for v in eqn.invars:
                g = self.group_of.get(self.producer.get(v, -1)) if type(v) is Var else None
                if (g is not None and g.alive and g.domain == domain and g not in cands
                        and v.aval.shape == domain):
                    cands.append(g)
            if prim is broadcast_in_dim_p:
                cands = []  # its operand has another shape: it is read through the index map, never fused into
            else:
                # No group that ended before a product is extended past it. An equation after the product that could
                # join one reads only values computed before it -- a value recomputed next to its readers
                # (`rewrite.recompute_residuals`) -- and belongs with those readers, not in the earlier kernel,
                # which would have to write it to memory for them.
                cands = [g for g in cands if g.members[-1] > self.last_barrier[idx]]
            # Two candidates with different reduction axes cannot share loops.
            axes = {g.red_axes for g in cands if g.red_axes is not None}
            if len(axes) > 1:
                cands = cands[:1]
            if cands and self._join(idx, cands, domain, None):
                continue
            if len(cands) > 1:
                # Joining them all would form a cycle -- typically a backward-pass equation reading a forward
                # group's residual and a value computed after that group's results went through a product. Join
                # the candidates that can be joined instead of none, so the backward chain stays one kernel.
                chosen = self._acyclic_subset(idx, cands)
                if chosen and self._join(idx, chosen, domain, None):
                    continue
            self._new_group(idx, domain)
        return self._finish()

    def _acyclic_subset(self, idx: int, cands: list[Group]) -> list[Group]:
        """The candidates, in order, that `idx` can join together without a cycle (greedy)."""
        members, chosen = {idx}, []
        for g in cands:
            trial = members | set(g.members)
            if self._acyclic(trial):
                members = trial
                chosen.append(g)
        return chosen

    def _add_reduction(self, idx: int, eqn) -> None:
        v = eqn.invars[0]
        if type(v) is not Var or not _reduction_ok(eqn):
            return
        g = self.group_of.get(self.producer.get(v, -1))
        axes = tuple(sorted(eqn.params["axes"]))
        if g is None or not g.alive or g.domain != v.aval.shape:
            # A column-wise reduction of an array computed elsewhere: NumPy's is several times slower than one
            # pass with a row of accumulators (measured: sum over axis 0 of 10000x100 float32, 154 vs 76 us).
            if (reduction_pattern(v.aval.shape, axes) == "RK" and ir.size(v) >= self.min_elements
                    and eqn.primitive is reduce_sum_p):
                self._new_group(idx, v.aval.shape)
                self.group_of[idx].red_axes = axes
            return
        if g.red_axes is not None and g.red_axes != axes:
            return
        self._join(idx, [g], g.domain, axes)

    def _finish(self) -> list[Group]:
        out = []
        for g in self.groups:
            if not g.alive:
                continue
            prims = [self.eqns[i].primitive for i in g.members]
            work = [p for p in prims if p not in _FREE]
            if int(np.prod(g.domain, dtype=np.int64)) >= self.min_elements:
                worth = len(work) >= 2 or any(p in _EXPENSIVE for p in work) or prims == [reduce_sum_p]
            else:  # small arrays: only long chains, where one kernel call replaces many NumPy calls
                worth = len(work) >= self.small_group_min_ops
            if not worth or not work:
                for i in g.members:
                    self.group_of.pop(i, None)
                g.alive = False
                continue
            out.append(g)
        return out


class Plain:
    """A scheduled equation that is not part of any group."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    @property
    def members(self) -> list[int]:
        return [self.index]


def schedule(eqns: Sequence[Any], groups: Sequence[Group]) -> list:
    """Execution order: a list of `Plain` equations and `Group`s such that every value is computed before use.

    Each node is keyed by its original position (a group by its last member), and a min-heap releases nodes whose
    inputs are ready, so the order stays close to the program's.
    """
    node_of: dict[int, Any] = {}
    for g in groups:
        for m in g.members:
            node_of[m] = g
    nodes: list = []
    producer_node: dict = {}
    for i, e in enumerate(eqns):
        n = node_of.get(i)
        if n is None:
            n = Plain(i)
            nodes.append(n)
        elif i == n.members[-1]:
            nodes.append(n)
        for v in e.outvars:
            producer_node[v] = n

    deps: dict = {}
    users: dict = {}
    for n in nodes:
        ds = set()
        for m in n.members:
            for v in eqns[m].invars:
                p = producer_node.get(v) if type(v) is Var else None
                if p is not None and p is not n and id(p) not in ds:
                    ds.add(id(p))
                    users.setdefault(id(p), []).append(n)
        deps[id(n)] = ds
    key = {id(n): n.members[-1] for n in nodes}
    heap = [(key[id(n)], id(n), n) for n in nodes if not deps[id(n)]]
    heapq.heapify(heap)
    order = []
    while heap:
        _, nid, n = heapq.heappop(heap)
        order.append(n)
        for u in users.get(nid, ()):
            d = deps[id(u)]
            d.discard(nid)
            if not d:
                heapq.heappush(heap, (key[id(u)], id(u), u))
    if len(order) != len(nodes):
        raise AssertionError("fusion produced a cyclic schedule")  # prevented by Grouping._acyclic
    return order
