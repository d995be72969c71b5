"""Argument flattening for `jit`'s dispatch, generated per pytree structure.

A jitted train step is called with the same structure every time -- `step(state, x, y)` with a `TrainState` of
nested parameter dicts -- but a new `TrainState` object each call, so its structure must be checked and its leaves
collected on every call. The generic path (`jit._structure_key`, then a dictionary lookup that compares the nested
key, aux data included) walks the tree recursively and builds a key as large as the tree: measured on the MNIST
MLP step (22 leaves), about 20 us per call -- a tenth of the whole-step tier's step.

`make_flattener(args)` writes, for the structure of one call's arguments, a straight-line function that checks the
same things the key compares -- each node's exact type, each dict's keys, each registered node's aux data (`==`,
as the key's comparison does), each leaf's type, shape, dtype and weak type -- and returns the leaves' raw buffers
in `tree_flatten` order, or None as soon as anything differs (the caller then takes the generic path). Only
structures whose leaves are all `Array`s get a flattener; anything else keeps the generic path.
"""

from __future__ import annotations

from typing import Any, Callable

from .core import Array
from .tree_util import node_kind, registered_kind


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.ns: dict = {"_Array": Array}
        self.raws: list[str] = []
        self._n = 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}{self._n}"

    def bind(self, obj: Any, hint: str) -> str:
        n = self.name("_" + hint)
        self.ns[n] = obj
        return n

    def node(self, x: Any, expr: str) -> bool:
        """Writes the checks and leaf reads for `x` found at `expr`; False if the structure is not supported."""
        t = type(x)
        if t is Array:
            v = x._value
            raw = self.name("r")
            self.lines += [f"if type({expr}) is not _Array: return None",
                           f"{raw} = {expr}._value",
                           f"if {raw}.shape != {v.shape!r} or {raw}.dtype != {self.bind(v.dtype, 'dt')} "
                           f"or {expr}.weak_type != {bool(x.weak_type)}: return None"]
            self.raws.append(raw)
            return True
        if t is tuple or t is list:
            self.lines.append(f"if type({expr}) is not {t.__name__} or len({expr}) != {len(x)}: return None")
            return self._children(list(x), expr, [f"{expr}[{k}]" for k in range(len(x))])
        if t is dict:
            keys = sorted(x)
            self.lines.append(f"if type({expr}) is not dict or len({expr}) != {len(x)}: return None")
            # Equal lengths and every key found (a missing one raises KeyError: caught, None) means equal key sets.
            return self._children([x[k] for k in keys], expr,
                                  [f"{expr}[{self.bind(k, 'key')}]" for k in keys])
        kind = registered_kind(t) or node_kind(x)
        if kind is None:
            return False  # a non-Array leaf: the generic path converts it
        children, aux = kind.to_iter(x)
        ch, ax = self.name("ch"), self.name("aux")
        self.lines += [f"if type({expr}) is not {self.bind(t, 'type')}: return None",
                       f"{ch}, {ax} = {self.bind(kind.to_iter, 'to_iter')}({expr})",
                       f"if {ax} != {self.bind(aux, 'aux')} or len({ch}) != {len(children)}: return None"]
        children = list(children)
        return self._children(children, ch, [f"{ch}[{k}]" for k in range(len(children))])

    def _children(self, children: list, parent: str, exprs: list) -> bool:
        for c, e in zip(children, exprs):
            n = self.name("x")
            self.lines.append(f"{n} = {e}")
            if not self.node(c, n):
                return False
        return True


def make_flattener(args: tuple) -> Callable[[tuple], list | None] | None:
    """A function `args -> raw leaf buffers or None` for calls with the structure and leaf types of `args`, or None
    when `args` has leaves other than `Array`s."""
    w = _Writer()
    if not w.node(args, "args"):
        return None
    body = ["def flatten(args):", "    try:"] + ["        " + ln for ln in w.lines]
    body += ["    except Exception:  # noqa: BLE001 -- e.g. aux data whose comparison raises: the generic path decides",
             "        return None",
             f"    return [{', '.join(w.raws)}]"]
    exec(compile("\n".join(body), "<fluxion jit flattener>", "exec"), w.ns)  # noqa: S102 -- generated above
    return w.ns["flatten"]
