"""Memory planning: buffer liveness and aliasing, so generated code can write into buffers nobody needs any more.

Every value of the program lives in one or more *storages* (NumPy buffers). An equation's output either gets a
fresh storage (a ufunc result, a matmul, a copy), is a view sharing its operands' storages (reshape, transpose,
slicing, broadcasting), or -- for implementations the compiler does not know -- is assumed to alias every operand.
A storage is *owned* when the generated code allocated it (never an argument, a constant or an unknown result), and
*dead* after the last equation that reads any value living in it (program outputs are read at the very end).

The planner answers two questions while code is generated in program order:

* `inplace_ok(v, i)`: may equation `i` overwrite operand `v`? (owned, writable contiguous layout, dead after `i`)
* `take_buffer(shape, dtype, i, operands)`: a dead owned buffer of exactly this shape and dtype to pass as `out=`
  -- preferably an operand of equation `i` dying there, else one that died earlier (a free pool).

It also says which values may be deleted (`del`) right after their last use, so a NumPy buffer is released as soon
as possible and the peak memory of a program is that of the values it really needs at once.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from ...core import Var
from . import ir

# Values smaller than this are not worth planning (allocation is cheap; `out=` only adds code).
MIN_PLANNED_ELEMENTS = 2048

FRESH = "fresh"      # a new buffer, C-contiguous and writable, owned by the generated code
VIEW = "view"        # shares the operands' storages; contiguous and writable if the operand is (reshape-like)
STRIDED = "strided"  # shares the operands' storages with another layout (transpose, slice, broadcast)
UNKNOWN = "unknown"  # may alias any operand; treated as neither owned nor writable


class LayoutError(AssertionError):
    """A lowering reported a C-contiguous result (FRESH or VIEW) that is not (found in fusion check mode)."""


def check_layout(x: Any, what: str) -> None:
    """Raises `LayoutError` unless `x` is a C-contiguous NumPy array (generated code calls it in check mode after
    every result a lowering reported as FRESH or VIEW: fused kernels rely on those layouts)."""
    if not (isinstance(x, np.ndarray) and x.flags.c_contiguous):
        strides = getattr(x, "strides", None)
        raise LayoutError(f"{what} was planned as a C-contiguous buffer but is {type(x).__name__} with strides "
                          f"{strides}: its lowering must return C order")


class Planner:
    """Tracks storages, owners and last uses for one function being generated.

    Args:
      node_inputs: for each node (equation or fused group) in execution order, the atoms it reads.
      outvars: the program's outputs (live until the end).
      donated: input variables whose buffers the caller gave away (`donate_argnums`), checked at run time to be
        owned writable arrays, so they count as owned storages.
    """

    def __init__(self, node_inputs: Sequence[Sequence[Any]], outvars: Sequence[Any], donated: Sequence[Var] = ()):
        self.last_use: dict = {}
        for i, ins in enumerate(node_inputs):
            for v in ins:
                if type(v) is Var:
                    self.last_use[v] = i
        end = len(node_inputs)
        for v in outvars:
            if type(v) is Var:
                self.last_use[v] = end + 1  # never dead
        self._ids = itertools.count()
        self.storages: dict = {}        # var -> frozenset of storage ids
        self.layout: dict = {}          # var -> FRESH / VIEW / STRIDED / UNKNOWN
        self.members: dict = {}         # storage id -> list of vars living in it
        self.owned: set = set()
        self.root: dict = {}            # storage id -> the var that is the whole buffer
        self.free: dict = {}            # (shape, dtype) -> list of root vars whose storage is dead
        self.future: dict = {}          # (shape, dtype) -> last node index producing a value of that type
        # Storages handed out by `take_buffer` for the node being generated: a node with several outputs (a fused
        # kernel) must get a different buffer for each, or one output would overwrite another.
        self._claimed_node = -1
        self._claimed: set = set()
        for v in donated:
            self.define_fresh(v)

    def expect_outputs(self, node_outputs: Sequence[Sequence[Any]]) -> None:
        """Records which node produces which output types, so a dead buffer is kept for reuse only when a later
        node can use it (otherwise it is deleted at once, which keeps peak memory low)."""
        for i, outs in enumerate(node_outputs):
            for v in outs:
                if type(v) is Var and ir.size(v) >= MIN_PLANNED_ELEMENTS:
                    self.future[(v.aval.shape, v.aval.dtype)] = i

    # -- definitions --------------------------------------------------------------------------------------------
    def _new_storage(self, v: Var, owned: bool) -> None:
        sid = next(self._ids)
        self.storages[v] = frozenset((sid,))
        self.members[sid] = [v]
        if owned:
            self.owned.add(sid)
            self.root[sid] = v

    def define_external(self, v: Var) -> None:
        """An argument or constant: a storage the generated code must never write."""
        self._new_storage(v, owned=False)
        self.layout[v] = UNKNOWN

    def define_fresh(self, v: Var) -> None:
        planned = v.aval.ndim > 0 and ir.size(v) >= 1
        self._new_storage(v, owned=planned)
        self.layout[v] = FRESH if planned else UNKNOWN

    def define(self, v: Var, kind: str, operands: Sequence[Any]) -> None:
        """Records how output `v` of the current node relates to its `operands`."""
        if kind == FRESH:
            self.define_fresh(v)
            return
        sids = frozenset().union(*(self.storages.get(o, frozenset()) for o in operands if type(o) is Var))
        if not sids:
            self._new_storage(v, owned=False)
            self.layout[v] = UNKNOWN
            return
        self.storages[v] = sids
        for s in sids:
            self.members[s].append(v)
        if kind == VIEW:
            src = [o for o in operands if type(o) is Var]
            contiguous = len(src) == 1 and self.layout.get(src[0]) in (FRESH, VIEW)
            self.layout[v] = VIEW if contiguous else STRIDED
        else:
            self.layout[v] = STRIDED if kind == STRIDED else UNKNOWN

    def define_inplace(self, v: Var, operand: Var) -> None:
        """`v` was computed by overwriting `operand`'s (whole, owned) buffer: `v` becomes that buffer's root."""
        sids = self.storages[operand]
        self.storages[v] = sids
        for s in sids:
            self.members[s].append(v)
            if self.root.get(s) is operand:
                self.root[s] = v
        self.layout[v] = self.layout[operand]

    # -- queries ------------------------------------------------------------------------------------------------
    def storage_dead_after(self, sid: int, i: int) -> bool:
        return all(self.last_use.get(m, -1) <= i for m in self.members[sid])

    def inplace_ok(self, v: Any, i: int) -> bool:
        """Whether node `i` may overwrite operand `v` (an owned contiguous buffer nobody reads after `i`)."""
        if type(v) is not Var or self.layout.get(v) not in (FRESH, VIEW):
            return False
        sids = self.storages.get(v, frozenset())
        if len(sids) != 1:
            return False
        (sid,) = sids
        return sid in self.owned and self.storage_dead_after(sid, i)

    def take_buffer(self, shape: tuple, dtype: np.dtype, i: int, operands: Sequence[Any]) -> Var | None:
        """A dead owned buffer of `shape`/`dtype` to write node `i`'s output into, or None.

        Operands of node `i` that die there are preferred (elementwise kernels may read and write the same
        element); otherwise a buffer from the free pool, whose contents nobody will read again. A buffer is handed
        out at most once per node, so each output of a multi-output node gets its own.
        """
        if int(np.prod(shape, dtype=np.int64)) < MIN_PLANNED_ELEMENTS:
            return None
        if self._claimed_node != i:
            self._claimed_node, self._claimed = i, set()
        for o in operands:
            if (type(o) is Var and o.aval.shape == shape and o.aval.dtype == dtype and self.layout.get(o) == FRESH
                    and self.inplace_ok(o, i)):
                (sid,) = self.storages[o]
                if self.root.get(sid) is o and sid not in self._claimed:
                    self._forget_free(o)
                    self._claimed.add(sid)
                    return o
        pool = self.free.get((tuple(shape), np.dtype(dtype)))
        while pool:
            cand = pool.pop()
            (sid,) = self.storages[cand]
            if self.storage_dead_after(sid, i - 1) and sid not in self._claimed:
                self._claimed.add(sid)
                return cand
        return None

    def _forget_free(self, v: Var) -> None:
        pool = self.free.get((v.aval.shape, v.aval.dtype))
        if pool and v in pool:
            pool.remove(v)

    def release_after(self, i: int, read: Sequence[Any]) -> list:
        """Handles the values node `i` read for the last time; returns the names to `del` now.

        A dead owned buffer goes to the free pool when a later node produces a value of its type (it will be
        reused as `out=`); other large dead values are deleted so NumPy frees them at once.
        """
        dead = []
        for v in read:
            if type(v) is Var and self.last_use.get(v) == i and v not in dead:
                dead.append(v)
        delete = []
        for v in dead:
            pooled = False
            (sid,) = self.storages[v] if len(self.storages.get(v, ())) == 1 else (None,)
            if (sid is not None and sid in self.owned and self.root.get(sid) is v
                    and self.storage_dead_after(sid, i)
                    and self.future.get((v.aval.shape, v.aval.dtype), -1) > i):
                pool = self.free.setdefault((v.aval.shape, v.aval.dtype), [])
                if v not in pool:
                    pool.append(v)
                pooled = True
            if not pooled and ir.size(v) >= MIN_PLANNED_ELEMENTS:
                delete.append(v)
        return delete

