"""Eager `grad`/`value_and_grad` calls replayed from a traced program, where that provably gives the same result.

An eager `grad(f)(x)` runs `f` under the JVP and staging interpreters, then transposes the staged linear program:
about 20 interpreter steps per primitive of `f`, every call. When `pure_functions.prove_pure(f)` proves that `f`
reads nothing but its arguments and values that still hold the objects they held (a `Proof`), the whole gradient
computation for arguments of one structure and type is the same program every time; `EagerGradCache` traces it
once (as `jit` would, but without fusing, so each primitive runs the same NumPy code as the eager path) and evaluates
it on later calls.

What it never does: it caches nothing for a function without a proof, nothing for arguments of a new signature until
that signature is seen a second time (so one-off calls pay no tracing), and nothing whose trace fails -- in
particular a function that branches on argument values (its trace raises a concretization error: such functions
keep running eagerly, giving the value-dependent answer). Calls under a transformation, with NaN/inf checks on, or
once sharded meshes are in use take the plain path.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from . import core
from .api_util import as_value
from .backends.compiler.passes.cse import cse
from .backends.compiler.passes.dce import dce
from .backends.compiler.passes.inline import inline_calls
from .config import TRACE_OPTIONS, config, user_context_key
from .core import Array
from .interpreters import partial_eval as pe
from .jit_trace import leaf_signature
from .pure_functions import prove_pure
from .sharding import MESH_IN_USE
from .tree_util import tree_flatten, tree_unflatten

NOT_CACHED = object()  # `EagerGradCache.call`'s answer when the caller must run the plain path
_SEEN = object()         # a signature seen once (traced on its second call)
_UNCACHEABLE = object()  # a signature whose trace failed or whose outputs are not all arrays

# Options that change what a trace computes or raises (`config.TRACE_OPTIONS`), and the checks a trace runs: part of
# every cache key.
_TRACE_OPTIONS = TRACE_OPTIONS + ("jax_enable_checks", "jax_check_tracer_leaks", "jax_no_tracing")
_MAX_ENTRIES = 64
_SCALAR_LEAVES = (bool, int, float, complex, str)
_MAX_REPROOFS = 4


class _Generation:
    """Counts changes of the options in `_TRACE_OPTIONS` (config hooks run on every update and override), so a
    cache key holds one integer instead of their values."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0

    def bump(self, _value=None) -> None:
        self.value += 1


_config_generation = _Generation()
for _option in _TRACE_OPTIONS:
    config.add_hook(_option, _config_generation.bump)
_EFFECT_WORDS = ("callback", "debug", "print")


class _Program:
    """A traced program as a flat list of steps over one list of slots (consts and literals, then inputs, then
    intermediates): evaluating it binds each primitive on concrete values, as `core.eval_jaxpr` does, without
    building a variable dictionary per call."""

    __slots__ = ("template", "n_in_start", "steps", "outs", "out_tree", "out_avals")

    def __init__(self, jaxpr: core.Jaxpr, consts: list, out_tree, out_avals: list):
        slot: dict = {}
        template: list = []

        def place(v, value=None):
            slot[v] = len(template)
            template.append(value)

        for v, c in zip(jaxpr.constvars, consts):
            place(v, c)
        literal_slots: dict = {}

        def read(v):
            if type(v) is core.Literal:
                i = literal_slots.get(id(v))
                if i is None:
                    i = literal_slots[id(v)] = len(template)
                    template.append(v.val)
                return i
            return slot[v]

        steps = []
        # Literals first (they are constants), so the inputs and intermediates follow in one block.
        for eqn in jaxpr.eqns:
            for v in eqn.invars:
                if type(v) is core.Literal:
                    read(v)
        for v in jaxpr.outvars:
            if type(v) is core.Literal:
                read(v)
        self.n_in_start = len(template)
        for v in jaxpr.invars:
            place(v)
        for eqn in jaxpr.eqns:
            ins = tuple(read(v) for v in eqn.invars)
            for v in eqn.outvars:
                place(v)
            outs = tuple(slot[v] for v in eqn.outvars)
            steps.append((eqn.primitive, eqn.params, ins, outs if eqn.primitive.multiple_results else outs[0]))
        self.template = template
        self.steps = steps
        self.outs = [read(v) for v in jaxpr.outvars]
        self.out_tree = out_tree
        self.out_avals = out_avals

    def __call__(self, dyn: list):
        env = self.template.copy()
        start = self.n_in_start
        env[start:start + len(dyn)] = dyn
        apply = core.eager_apply  # read per call: profiling and explicit sharding swap it
        for prim, params, ins, out in self.steps:
            res = apply(prim, [env[i] for i in ins], params)
            if type(out) is int:
                env[out] = res
            else:
                for i, o in zip(out, res):
                    env[i] = o
        fixed = []
        for i, a in zip(self.outs, self.out_avals):
            o = env[i]
            if type(o) is not Array:  # an input passed through unconverted: an Array of the traced type
                o = Array(np.asarray(o, a.dtype), a.weak_type)
            fixed.append(o)
        return tree_unflatten(self.out_tree, fixed)


class EagerGradCache:
    """Traced gradient programs of one `value_and_grad` wrapper, keyed by argument signature (see module doc)."""

    __slots__ = ("fun", "diff", "proof", "entries", "misses", "_lock")

    def __init__(self, fun: Callable, diff_argnums: Callable[[int], tuple]):
        self.fun = fun
        self.diff = diff_argnums  # number of positional args -> the differentiated positions
        self.proof = None         # a Proof that holds, None (not proven yet) or False (never provable)
        self.entries: dict = {}
        self.misses = 0           # proofs made since the last replay
        self._lock = threading.Lock()

    def call(self, impl: Callable, args: tuple, kwargs: dict) -> Any:
        """`impl(*args, **kwargs)` from a replayed program, or NOT_CACHED when the plain path must run."""
        if not (core.all_eager.value or core.thread_state().eager) or core.float_checks.on or MESH_IN_USE[0]:
            return NOT_CACHED
        proof = self.proof
        if proof is False:
            return NOT_CACHED
        if proof is None or not proof.holds():
            # A function whose closures or globals change between most calls (parameters rebound every step) would
            # pay a new proof per call and never replay: after a few proofs without a replay in between, stop.
            self.misses += 1
            proof = prove_pure(self.fun) if self.misses <= _MAX_REPROOFS else None
            with self._lock:
                self.entries = {}
                self.proof = proof if proof is not None else False
            if proof is None:
                return NOT_CACHED
        sig = _signature(args, kwargs, self.diff, proof.inplace)
        if sig is None:
            return NOT_CACHED
        key, leaves, dyn_pos, in_tree = sig
        entries = self.entries
        entry = entries.get(key)
        if entry is None:
            if len(entries) >= _MAX_ENTRIES:
                entries.clear()
            entries[key] = _SEEN
            return NOT_CACHED
        if entry is _UNCACHEABLE:
            return NOT_CACHED
        dyn = [as_value(leaves[i]) for i in dyn_pos]
        if entry is _SEEN:
            entry = _build(impl, leaves, dyn_pos, in_tree, dyn)
            entries[key] = _UNCACHEABLE if entry is None else entry
            if entry is None:
                return NOT_CACHED
        self.misses = 0
        return entry(dyn)


def _signature(args: tuple, kwargs: dict, diff: Callable[[int], tuple], inplace: bool):
    """(cache key, leaves, positions of the traced leaves, tree) of a call, or None if it cannot be cached.

    Leaves of differentiated arguments and Arrays are traced; Python scalars and strings of other arguments are
    static (part of the key, as the function sees them as plain Python values). NumPy arrays among the other
    arguments are not cached: the function would see a NumPy array eagerly but a tracer when traced.
    """
    if not kwargs:  # the common call: every argument an Array (no flattening)
        key = [len(args), _config_generation.value]
        for a in args:
            if type(a) is not Array:
                break
            v = a._value
            key.append(v.shape)
            key.append(v.dtype)
            key.append(a.weak_type)
        else:
            key.append(user_context_key())
            return tuple(key), list(args), range(len(args)), None
    if not _builtin_tree(args, inplace) or not _builtin_tree(kwargs, inplace, top=True):
        return None
    leaves, in_tree = tree_flatten((args, kwargs))
    nums = set(diff(len(args)))  # (only here: the all-Array path above needs no argnums)
    # Which leaves belong to differentiated arguments: count the leaves of each positional argument.
    diff_mask = []
    for i, a in enumerate(args):
        n = len(tree_flatten(a)[0]) if type(a) is not Array else 1
        diff_mask.extend([i in nums] * n)
    diff_mask.extend([False] * (len(leaves) - len(diff_mask)))
    key = [in_tree, _config_generation.value]
    dyn_pos = []
    for i, (x, d) in enumerate(zip(leaves, diff_mask)):
        t = type(x)
        if t is Array or d:
            try:
                s, _ = leaf_signature(x)
            except Exception:  # noqa: BLE001 -- a tracer or an invalid leaf: the plain path reports it
                return None
            key.append(s)
            dyn_pos.append(i)
        elif t is int or t is bool or t is str:
            key.append((t, x))
        elif t is float or t is complex:
            key.append((t, repr(x)))  # repr separates -0.0 from 0.0 (and never equates NaNs)
        else:
            return None
    key.append(user_context_key())
    return tuple(key), leaves, dyn_pos, in_tree


def _builtin_tree(x: Any, no_mutables: bool, depth: int = 0, top: bool = False) -> bool:
    """Whether `x` is made of tuples, lists, dicts and None around its leaves: a proof covers the function's code,
    not the methods of custom pytree nodes (a NamedTuple subclass or dataclass may define any), which the function
    could call on its arguments. With `no_mutables` (the function uses `+=`-style operators, which extend a list or
    update a dict in place) only tuples; `top` marks the kwargs dict itself, a fresh dict per call."""
    t = type(x)
    if t is tuple or (t is list and not no_mutables):
        return depth < 32 and all(_builtin_tree(c, no_mutables, depth + 1) for c in x)
    if t is dict and (top or not no_mutables):
        return depth < 32 and all(_builtin_tree(c, no_mutables, depth + 1) for c in x.values())
    return x is None or t is Array or t in _SCALAR_LEAVES or isinstance(x, (np.ndarray, np.generic))


def _build(impl: Callable, leaves: list, dyn_pos: list, in_tree, dyn: list) -> _Program | None:
    """Traces `impl` on the call's signature; None if the trace fails or the program is not a pure replay."""
    box: list = []

    def flat(*vals):
        full = list(leaves)
        for i, v in zip(dyn_pos, vals):
            full[i] = v
        args, kwargs = (full, {}) if in_tree is None else tree_unflatten(in_tree, full)
        out_leaves, out_tree = tree_flatten(impl(*args, **kwargs))
        box.append(out_tree)
        for o in out_leaves:
            if not isinstance(o, (core.Tracer, Array)):
                raise TypeError("non-array output")  # the plain path returns it as it is; do not cache
        return out_leaves

    try:
        with core.inline_staged_calls():  # library functions' primitives where the eager path runs them
            jaxpr, consts, out_avals = pe.trace_to_jaxpr(flat, [core.get_aval(v) for v in dyn])
    except Exception:  # noqa: BLE001 -- value-dependent control flow, errors: the plain path runs (and raises)
        return None
    if any(isinstance(c, core.Tracer) for c in consts) or _has_effects(jaxpr):
        return None
    # Calls (the user's `jit` functions, custom-derivative calls; library functions were traced inline) are inlined, so
    # their primitives run op by op as on the plain path, not through the compiler (which may fuse them and round
    # differently). Merging repeated equations and dropping dead ones keeps every result bit for bit (the same
    # primitive on the same operands, commuted only for exactly commutative ones); a reverse-mode program repeats
    # much of its forward pass (a third derivative computes x**2 three times).
    closed = dce(cse(inline_calls(core.ClosedJaxpr(jaxpr, consts))))
    return _Program(closed.jaxpr, list(closed.consts), box[-1], out_avals)


def _has_effects(jaxpr: core.Jaxpr) -> bool:
    """Whether the program calls back into Python or prints (kept on the plain path, which runs them as written)."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if any(w in name for w in _EFFECT_WORDS):
            return True
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                inner = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
                if isinstance(inner, core.Jaxpr) and _has_effects(inner):
                    return True
    return False
