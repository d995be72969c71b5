"""Proofs that a Python function's result depends only on its arguments and on values that can be re-checked cheaply.

Eager `grad` re-runs the user's Python function on every call, because in general nothing else is safe: the function
may print, append to a list, read a global that changed, or branch on a value. `prove_pure(fun)` returns a `Proof`
for the functions where none of that can happen, and `None` for all others. A proof lists the external values the
function reads (globals, closure cells, defaults, attributes of modules) with the objects they held when it was made;
`Proof.holds()` re-reads them and compares identities. While a proof holds, the function applied to arguments of one
structure and type computes the same program every time, so `api.value_and_grad` may trace it once and replay the
traced program (see `api._EagerGradCache`); control flow on argument values is not covered by the proof but makes
that trace fail, which the cache treats as "not cacheable".

What a proof requires (conservative: anything not listed makes `prove_pure` return None):
- the function is a plain Python function (or a `grad`/`value_and_grad` wrapper of one, see `register_wrapper`)
  whose code, and the code of every lambda/comprehension inside it, uses only the opcodes in `_ALLOWED_OPS`: no
  stores to globals, attributes or subscripts, no `nonlocal` writes, no imports, no generators, no try/with blocks
  (their exception tables could catch the tracing errors that make value-dependent code uncacheable);
- no attribute it reads has a name of a mutating method (`append`, `update`, `delete`, ...);
- every global and closure value it reads is immutable data (None, Python scalars, strings, NumPy scalars and
  dtypes, fluxion Arrays, tuples of these), a callable of fluxion's pure numerical modules, one of the pure builtins
  in `_PURE_BUILTINS`, another function with a proof (analysed recursively), or a module from which it only reads
  such values by attribute chains (`jnp.linalg.norm`).
"""

from __future__ import annotations

import builtins
import dis
import sys
import types
import weakref
from typing import Any, Callable

import numpy as np

from .core import Array

# Opcodes a proven function may execute (CPython 3.11 names; unknown names make the proof fail, so a newer Python
# falls back to re-running functions instead of caching them wrongly).
_ALLOWED_OPS = frozenset("""
NOP RESUME CACHE POP_TOP PUSH_NULL COPY SWAP EXTENDED_ARG
LOAD_FAST LOAD_FAST_CHECK STORE_FAST DELETE_FAST LOAD_CONST LOAD_GLOBAL LOAD_ATTR LOAD_METHOD LOAD_DEREF LOAD_CLOSURE
MAKE_CELL COPY_FREE_VARS STORE_DEREF MAKE_FUNCTION
PRECALL CALL KW_NAMES CALL_FUNCTION_EX
BINARY_OP BINARY_SUBSCR BUILD_SLICE BUILD_TUPLE BUILD_LIST BUILD_MAP BUILD_CONST_KEY_MAP BUILD_STRING BUILD_SET
FORMAT_VALUE LIST_APPEND LIST_EXTEND LIST_TO_TUPLE DICT_UPDATE DICT_MERGE MAP_ADD SET_ADD SET_UPDATE
UNPACK_SEQUENCE UNPACK_EX UNARY_NEGATIVE UNARY_POSITIVE UNARY_NOT UNARY_INVERT COMPARE_OP IS_OP CONTAINS_OP
POP_JUMP_FORWARD_IF_FALSE POP_JUMP_FORWARD_IF_TRUE POP_JUMP_BACKWARD_IF_FALSE POP_JUMP_BACKWARD_IF_TRUE
POP_JUMP_FORWARD_IF_NONE POP_JUMP_FORWARD_IF_NOT_NONE POP_JUMP_BACKWARD_IF_NONE POP_JUMP_BACKWARD_IF_NOT_NONE
JUMP_FORWARD JUMP_BACKWARD JUMP_BACKWARD_NO_INTERRUPT JUMP_IF_TRUE_OR_POP JUMP_IF_FALSE_OR_POP
GET_ITER FOR_ITER GET_LEN RETURN_VALUE RAISE_VARARGS LOAD_ASSERTION_ERROR
""".split())

_GENEXPR_OPS = frozenset({"RETURN_GENERATOR", "YIELD_VALUE"})

# Attribute names of methods that change the object they are called on (builtin containers, Arrays, files).
_MUTATING_ATTRS = frozenset("""
append extend insert pop popitem remove clear update setdefault sort reverse add discard
intersection_update difference_update symmetric_difference_update delete write writelines send throw close
__setitem__ __delitem__ __setattr__ __delattr__ __dict__ __globals__ __closure__ __code__ __defaults__
__kwdefaults__ __iadd__ __isub__ __imul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ __imatmul__ __iand__
__ior__ __ixor__ __ilshift__ __irshift__ fill resize itemset setflags put
""".split())

_PURE_BUILTINS = frozenset(id(getattr(builtins, n)) for n in """
len range zip enumerate min max abs sum float int bool complex tuple list dict set frozenset isinstance sorted
reversed all any round pow divmod map filter slice str repr
ValueError TypeError IndexError KeyError AssertionError NotImplementedError RuntimeError
""".split())

# Modules whose callables are pure functions of their arguments (numerical APIs; no I/O, printing, callbacks or
# configuration). A callable counts when its `__module__` (or its type's, for callable objects) starts with one.
_PURE_MODULE_PREFIXES = (
    "fluxion._src.numpy.", "fluxion._src.lax.", "fluxion._src.nn.", "fluxion._src.scipy.", "fluxion._src.random.",
    "fluxion._src.api", "fluxion._src.tree_util", "fluxion._src.dtypes", "fluxion._src.staged_call",
    "fluxion.numpy", "fluxion.lax", "fluxion.nn", "fluxion.scipy", "fluxion.random", "fluxion.tree_util",
    "numpy",  # only reached for NumPy scalar types and dtypes (see `_value_ok`); NumPy functions are not allowed
)
_IMPURE_MODULES = frozenset({"fluxion._src.numpy.io", "fluxion._src.numpy.printing"})

_CO_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator

# wrapper -> the function it differentiates (registered by `grad`/`value_and_grad`, whose wrappers are pure when
# the wrapped function is). Keyed by the wrapper object itself, so a user decorator that copies the wrapper's
# `__dict__` (functools.wraps) does not inherit the registration.
_WRAPPERS: "weakref.WeakKeyDictionary[Callable, Callable]" = weakref.WeakKeyDictionary()
_MAX_DEPTH = 8


def register_wrapper(wrapper: Callable, fun: Callable) -> None:
    """Declares that calling `wrapper` has no effects beyond those of calling `fun` (for `grad` and friends)."""
    _WRAPPERS[wrapper] = fun


class _CodeFacts:
    """What the bytecode of one code object (with its nested code objects) reads: global names, closure names, and
    the attribute chains rooted at each; or `ok = False` when it may do something a proof excludes."""

    __slots__ = ("ok", "inplace", "global_chains", "deref_chains")

    def __init__(self):
        self.ok = True
        self.inplace = False  # uses `+=`-style operators (which mutate a list or dict operand in place)
        self.global_chains: list[tuple[str, tuple[str, ...]]] = []
        self.deref_chains: list[tuple[str, tuple[str, ...]]] = []


_code_facts: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _scan(code: types.CodeType, outer_locals: frozenset, facts: _CodeFacts, nested: bool = False) -> None:
    # A generator expression inside the function is a local iterator (its code yields); any other generator or
    # coroutine, and any try/with block (an exception table), is not proven.
    genexpr = nested and code.co_name == "<genexpr>"
    if (code.co_flags & _CO_GENERATOR_FLAGS and not genexpr) or code.co_exceptiontable:
        facts.ok = False
        return
    local_cells = outer_locals | frozenset(code.co_cellvars)
    instrs = list(dis.get_instructions(code))
    i, n = 0, len(instrs)
    while i < n and facts.ok:
        ins = instrs[i]
        op = ins.opname
        if op not in _ALLOWED_OPS and not (genexpr and op in _GENEXPR_OPS):
            facts.ok = False
            return
        if op == "STORE_DEREF" and ins.argval not in code.co_cellvars:
            facts.ok = False  # a `nonlocal` write to an enclosing function's variable
            return
        if op == "BINARY_OP" and ins.argrepr.endswith("="):
            facts.inplace = True
        if op in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in _MUTATING_ATTRS:
            facts.ok = False
            return
        if op == "LOAD_GLOBAL" or (op == "LOAD_DEREF" and ins.argval not in local_cells):
            j = i + 1
            attrs = []
            while j < n and instrs[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                if instrs[j].argval in _MUTATING_ATTRS:
                    facts.ok = False
                    return
                attrs.append(instrs[j].argval)
                j += 1
            chain = (ins.argval, tuple(attrs))
            (facts.global_chains if op == "LOAD_GLOBAL" else facts.deref_chains).append(chain)
            i = j
            continue
        i += 1
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _scan(c, local_cells, facts, nested=True)


def _facts_of(code: types.CodeType) -> _CodeFacts:
    facts = _code_facts.get(code)
    if facts is None:
        facts = _CodeFacts()
        _scan(code, frozenset(), facts)
        _code_facts[code] = facts
    return facts


def _immutable(v: Any, depth: int = 0) -> bool:
    t = type(v)
    if v is None or t in (bool, int, float, complex, str, bytes, Array, np.dtype, range) or v is Ellipsis:
        return True
    if isinstance(v, np.generic):
        return True
    if t in (tuple, frozenset) and depth < 4:
        return all(_immutable(x, depth + 1) for x in v)
    return False


def _trusted_module(mod: Any) -> bool:
    return isinstance(mod, str) and mod.startswith(_PURE_MODULE_PREFIXES) and mod not in _IMPURE_MODULES


def _pure_callable(v: Any) -> bool:
    """Whether `v` is a builtin of `_PURE_BUILTINS`, a NumPy scalar type, or a function, class or callable object
    of fluxion's numerical modules (not a user function that merely copied such a function's metadata)."""
    if id(v) in _PURE_BUILTINS:
        return True
    if isinstance(v, type):
        mod = v.__module__
        if mod.startswith("numpy"):
            return issubclass(v, np.generic)
        return _trusted_module(mod) and getattr(sys.modules.get(mod), v.__name__, None) is v
    if type(v) is types.FunctionType:
        mod = v.__module__
        if not _trusted_module(mod) or mod.startswith("numpy"):
            return False
        # functools.wraps copies __module__ and __name__, not __globals__: a user wrapper fails both tests.
        return _trusted_module(v.__globals__.get("__name__")) or getattr(sys.modules.get(mod), v.__name__, None) is v
    return False


class Proof:
    """The external values a function's result depends on, as identity checks (`holds()` re-reads them)."""

    __slots__ = ("checks", "inplace")

    def __init__(self, checks: list, inplace: bool = False):
        # `inplace`: some proven code applies `+=`-style operators, which mutate a list or dict in place; the proof
        # then holds only for arguments without lists and dicts (the caller checks; arrays and tuples rebind).
        self.inplace = inplace
        unique = {(kind, id(obj), key): (kind, obj, key, expected) for kind, obj, key, expected in checks}
        self.checks = list(unique.values())

    def holds(self) -> bool:
        for kind, obj, key, expected in self.checks:
            if kind == 0:    # a function's code, globals and defaults
                if obj.__code__ is not expected[0] or obj.__defaults__ is not expected[1] \
                        or obj.__kwdefaults__ is not expected[2]:
                    return False
            elif kind == 1:  # a closure cell's contents
                try:
                    if obj.cell_contents is not expected:
                        return False
                except ValueError:
                    return False
            elif kind == 2:  # a global name (obj: the function whose globals are read)
                g = obj.__globals__
                v = g[key] if key in g else obj.__builtins__.get(key, _MISSING)
                if v is not expected:
                    return False
            else:            # an attribute of a module
                if getattr(obj, key, _MISSING) is not expected:
                    return False
        return True


_MISSING = object()
_INPLACE = "inplace operators"  # a marker in `_prove`'s seen set (which otherwise holds ids)


def prove_pure(fun: Callable) -> Proof | None:
    """A `Proof` that `fun`'s result depends only on its arguments (while the proof holds), or None."""
    checks: list = []
    seen: set = set()
    try:
        ok = _prove(fun, checks, seen, 0)
    except Exception:  # noqa: BLE001 -- any surprise while inspecting means "not proven"
        return None
    return Proof(checks, _INPLACE in seen) if ok else None


def _prove(fun: Callable, checks: list, seen: set, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if id(fun) in seen:
        return True
    seen.add(id(fun))
    try:
        inner = _WRAPPERS.get(fun)
    except TypeError:  # not weak-referenceable: not a registered wrapper
        inner = None
    if inner is not None:
        return _prove_value(inner, checks, seen, depth + 1)
    if type(fun) is not types.FunctionType:
        return False
    code = fun.__code__
    facts = _facts_of(code)
    if not facts.ok:
        return False
    if facts.inplace:
        seen.add(_INPLACE)
    defaults, kwdefaults = fun.__defaults__, fun.__kwdefaults__
    if defaults is not None and not _immutable(defaults):
        return False
    if kwdefaults is not None and not all(_immutable(v) for v in kwdefaults.values()):
        return False
    checks.append((0, fun, None, (code, defaults, kwdefaults)))
    globs, bins = fun.__globals__, fun.__builtins__
    for name, attrs in facts.global_chains:
        if name in globs:
            root = globs[name]
        elif name in bins:
            root = bins[name]
        else:
            return False  # a NameError when run: let the plain path raise it
        checks.append((2, fun, name, root))
        if not _prove_chain(root, attrs, checks, seen, depth):
            return False
    if facts.deref_chains:
        cells = dict(zip(code.co_freevars, fun.__closure__ or ()))
        for name, attrs in facts.deref_chains:
            cell = cells.get(name)
            if cell is None:
                return False
            try:
                root = cell.cell_contents
            except ValueError:
                return False
            checks.append((1, cell, None, root))
            if not _prove_chain(root, attrs, checks, seen, depth):
                return False
    return True


def _prove_chain(root: Any, attrs: tuple, checks: list, seen: set, depth: int) -> bool:
    obj = root
    for a in attrs:
        if type(obj) is not types.ModuleType:
            # An attribute of a value: a method of immutable data (an Array's, a tuple's) or of a fluxion callable.
            return _immutable(obj) or _pure_callable(obj)
        nxt = getattr(obj, a, _MISSING)
        if nxt is _MISSING:
            return False
        checks.append((3, obj, a, nxt))
        obj = nxt
    if type(obj) is types.ModuleType:
        return False  # a module escaping into a value could be used for anything
    return _prove_value(obj, checks, seen, depth + 1)


def _prove_value(v: Any, checks: list, seen: set, depth: int) -> bool:
    if _immutable(v) or _pure_callable(v):
        return True
    if type(v) is tuple:
        return all(_prove_value(x, checks, seen, depth + 1) for x in v)
    if type(v).__module__ == "fluxion._src.custom_derivatives":
        # custom_jvp / custom_vjp: pure when the functions they hold are (their attributes are set once).
        if id(v) in seen:
            return True
        seen.add(id(v))
        parts = [(a, getattr(v, a)) for a in ("fun", "jvp", "fwd", "bwd") if getattr(v, a, None) is not None]
        for a, p in parts:
            checks.append((3, v, a, p))  # (defjvp may replace a rule later)
            if not _prove_value(p, checks, seen, depth + 1):
                return False
        return bool(parts)
    if type(v) is types.FunctionType and v.__globals__.get("__name__") == "fluxion._src.custom_derivatives":
        # The rule adapters custom_jvp makes (defjvps): pure when the rules they close over are.
        for cell in v.__closure__ or ():
            contents = cell.cell_contents
            checks.append((1, cell, None, contents))
            if not _prove_value(contents, checks, seen, depth + 1):
                return False
        return True
    if type(v) is types.FunctionType or _is_wrapper(v):
        return _prove(v, checks, seen, depth)
    return False


def _is_wrapper(v: Any) -> bool:
    try:
        return v in _WRAPPERS
    except TypeError:  # not weak-referenceable
        return False
