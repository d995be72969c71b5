"""Exporting jitted functions (`jax.export`): `export(jit(f))(*arg_specs)` -> `Exported`, a program that can be
called, saved with `serialize()` and loaded back with `deserialize()`, without the Python source of `f`.

An `Exported` holds the function's jaxpr for one signature (after inlining nested calls and custom-derivative
wrappers, whose rules are Python functions). `call` binds it as a `jit` call, so it works eagerly and under `jit`,
`grad` and `vmap`.

The serialized form is fluxion's own: msgpack of the jaxpr's structure -- variables with their types, equations
naming their primitive and parameters, constants as raw array bytes. Loading it never runs code: primitives are
looked up by name among fluxion's, and the only Python objects rebuilt from names are fluxion's own enum members
and named tuples (index dimension numbers, modes) -- never pickle. JAX serializes StableHLO instead, so the bytes of
the two libraries are not interchangeable.
"""

from __future__ import annotations

import enum
import importlib
from typing import Any, Callable, Sequence

import msgpack
import numpy as np

from . import core, dtypes
from .core import Array, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from .lax.call import call_jaxpr
from .stages import Wrapped
from .tree_util import tree_flatten, tree_structure

FORMAT = "fluxion.export"
# The range of calling-convention versions, as JAX reports them (fluxion's format has one version, 1).
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
_SERIALIZATION_VERSION = 1


def default_export_platform() -> str:
    """The platform `export` targets by default: "cpu" (fluxion's only one)."""
    return "cpu"


class DisabledSafetyCheck:
    """A safety check `export` may skip (`disabled_checks=`). fluxion's programs carry no platform-specific code or
    custom calls, so there is nothing to check; the objects are accepted for compatibility."""

    def __init__(self, name: str):
        self._name = name

    @classmethod
    def platform(cls) -> "DisabledSafetyCheck":
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
        return cls(f"custom_call:{target_name}")

    def __eq__(self, other) -> bool:
        return isinstance(other, DisabledSafetyCheck) and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"DisabledSafetyCheck({self._name})"


class Exported:
    """An exported function for one signature.

    Attributes:
      fun_name: the function's name.
      in_tree, out_tree: the structures of `((args...), {kwargs})` and of the result.
      in_avals, out_avals: tuples of the flat arguments' and results' abstract values.
      platforms: ("cpu",). nr_devices: 1. calling_convention_version: the newest JAX's (10).
    """

    def __init__(self, fun_name: str, in_tree, out_tree, closed: ClosedJaxpr,
                 disabled_safety_checks: Sequence[DisabledSafetyCheck] = ()):
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.in_avals = tuple(closed.in_avals)
        self.out_avals = tuple(closed.out_avals)
        self.platforms = ("cpu",)
        self.nr_devices = 1
        self.calling_convention_version = maximum_supported_calling_convention_version
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.ordered_effects: tuple = ()
        self.unordered_effects: tuple = ()
        self.uses_global_constants = False
        self.jaxpr = closed

    def __repr__(self) -> str:
        return f"Exported({self.fun_name}, in_avals={self.in_avals}, out_avals={self.out_avals})"

    def has_vjp(self) -> bool:
        """True: the exported program is made of fluxion primitives, which all differentiate."""
        return True

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the exported program on arguments of the exported structure, shapes and dtypes.

        Raises:
          ValueError: the arguments' structure, a shape or a dtype differs from the exported ones (naming it).
        """
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise ValueError(f"The invocation args and kwargs must have the same pytree structure as when the "
                             f"function '{self.fun_name}' was exported: exported with {self.in_tree}, called with "
                             f"{in_tree}")
        vals = []
        for k, (x, aval) in enumerate(zip(leaves, self.in_avals)):
            x = x if isinstance(x, (Array, core.Tracer)) else core.to_array(x)
            got = core.get_aval(x)
            if got.shape != aval.shape:
                raise ValueError(f"Shape mismatch for argument {k}: expected {aval.shape} and called with "
                                 f"{got.shape}")
            if got.dtype != aval.dtype:
                raise ValueError(f"Dtype mismatch for argument {k}: expected {aval.dtype} and called with "
                                 f"{got.dtype}")
            vals.append(x)
        outs = call_jaxpr(self.jaxpr, vals, f"exported({self.fun_name})")
        return self.out_tree.unflatten(outs)

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The exported program as bytes (see the module docstring for the format). `vjp_order` is accepted for
        compatibility: the program itself differentiates after loading, so no derivatives need saving.

        Raises:
          ValueError: the program holds something that cannot be saved (a Python callback, a `custom_vmap`
            rule, a pytree node type other than tuple/list/dict/None in the signature).
        """
        doc = {"format": FORMAT, "version": _SERIALIZATION_VERSION, "fun_name": self.fun_name,
               "in_tree": _encode_tree(self.in_tree), "out_tree": _encode_tree(self.out_tree),
               "jaxpr": _encode_closed(self.jaxpr)}
        return bytearray(msgpack.packb(doc, use_bin_type=True))


def export(fun_jit: Wrapped, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """`export(jit(f))(*args, **kwargs)` traces `f` for the signature of the arguments (arrays or
    `ShapeDtypeStruct`s; static arguments as values) and returns its `Exported`.

    Raises:
      ValueError: `fun_jit` is not the result of `jit`, or `platforms` does not include "cpu".
    """
    if not isinstance(fun_jit, Wrapped):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit!r}")
    if platforms is not None and "cpu" not in [p.lower() for p in platforms]:
        raise ValueError(f"export: fluxion can only export for platform 'cpu', got platforms={tuple(platforms)}")

    def do_export(*args: Any, **kwargs: Any) -> Exported:
        from .backends.compiler.passes.inline import inline_calls
        traced = fun_jit.trace(*args, **kwargs)
        return Exported(traced.fun_name, traced.in_tree, traced.out_tree, inline_calls(traced.jaxpr),
                        disabled_checks)

    return do_export


def deserialize(blob: bytes | bytearray) -> Exported:
    """Loads an `Exported` saved by `Exported.serialize`.

    Raises:
      ValueError: `blob` is not a fluxion export (or was written by a newer version of the format).
    """
    try:
        doc = msgpack.unpackb(bytes(blob), raw=False, strict_map_key=False)
    except Exception as e:  # noqa: BLE001 -- any decoding failure means the bytes are not an export
        raise ValueError(f"deserialize: the bytes are not a serialized fluxion export ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("deserialize: the bytes are not a serialized fluxion export")
    if doc.get("version") != _SERIALIZATION_VERSION:
        raise ValueError(f"deserialize: unsupported export format version {doc.get('version')!r}")
    closed = _decode_closed(doc["jaxpr"])
    return Exported(doc["fun_name"], _decode_tree(doc["in_tree"]), _decode_tree(doc["out_tree"]), closed)


# --------------------------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------------------------

def _encode_tree(td) -> Any:
    if td.node_type is None:
        return "*"
    if td.node_type is tuple:
        return {"t": [_encode_tree(c) for c in td.children]}
    if td.node_type is list:
        return {"l": [_encode_tree(c) for c in td.children]}
    if td.node_type is dict:
        return {"d": [[k, _encode_tree(c)] for k, c in zip(td.aux, td.children)]}
    if td.node_type is type(None):
        return {"n": None}
    raise ValueError(f"serialize: cannot save pytree nodes of type {td.node_type.__name__} (only tuples, lists, "
                     "dicts and None)")


def _build(enc) -> Any:
    if enc == "*":
        return 0
    (kind, body), = enc.items()
    if kind == "t":
        return tuple(_build(c) for c in body)
    if kind == "l":
        return [_build(c) for c in body]
    if kind == "d":
        return {k: _build(c) for k, c in body}
    if kind == "n":
        return None
    raise ValueError(f"deserialize: unknown pytree node {kind!r}")


def _decode_tree(enc):
    return tree_structure(_build(enc))


def _aval(a: ShapedArray) -> list:
    return [list(a.shape), a.dtype.name, a.weak_type]


def _unaval(e) -> ShapedArray:
    return ShapedArray(tuple(e[0]), dtypes.canonicalize_dtype(np.dtype(e[1])) if e[1] != "bfloat16"
                       else dtypes.bfloat16, e[2])


def _encode_array(x) -> dict:
    raw = np.array(x._value if isinstance(x, Array) else x, order="C")  # (ascontiguousarray makes 0-d 1-d)
    return {"array": raw.tobytes(), "dtype": raw.dtype.name, "shape": list(raw.shape),
            "weak": bool(getattr(x, "weak_type", False))}


def _decode_array(e) -> Array:
    dt = dtypes.bfloat16 if e["dtype"] == "bfloat16" else np.dtype(e["dtype"])
    raw = np.frombuffer(e["array"], dtype=dt).reshape(tuple(e["shape"])).copy()
    return Array(raw, e["weak"])


class _Encoder:
    def __init__(self):
        self.ids: dict = {}

    def var(self, v: Var) -> int:
        if v not in self.ids:
            self.ids[v] = len(self.ids)
        return self.ids[v]

    def atom(self, a) -> Any:
        if type(a) is Literal:
            return {"lit": _encode_array(a.val), "aval": _aval(a.aval)}
        return self.var(a)

    def jaxpr(self, j: Jaxpr) -> dict:
        vars_of = lambda vs: [[self.var(v), _aval(v.aval)] for v in vs]  # noqa: E731
        return {"constvars": vars_of(j.constvars), "invars": vars_of(j.invars),
                "eqns": [self.eqn(e) for e in j.eqns], "outvars": [self.atom(v) for v in j.outvars]}

    def eqn(self, e: JaxprEqn) -> dict:
        return {"p": e.primitive.name, "in": [self.atom(v) for v in e.invars],
                "out": [[self.var(v), _aval(v.aval)] for v in e.outvars],
                "params": {k: self.param(e.primitive.name, k, v) for k, v in e.params.items()}}

    def param(self, prim: str, key: str, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if isinstance(v, enum.Enum):
            return {"enum": _qualname(type(v), prim, key), "name": v.name}
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            return {"namedtuple": _qualname(type(v), prim, key),
                    "fields": [self.param(prim, key, x) for x in v]}
        if isinstance(v, (tuple, list)):
            return {"tuple" if isinstance(v, tuple) else "list": [self.param(prim, key, x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[self.param(prim, key, k), self.param(prim, key, x)] for k, x in v.items()]}
        if isinstance(v, np.dtype):
            return {"dtype": v.name}
        if isinstance(v, type) and issubclass(v, np.generic):
            return {"dtype": np.dtype(v).name}
        if isinstance(v, (np.ndarray, np.generic, Array)):
            return _encode_array(v)
        if isinstance(v, ClosedJaxpr):
            return {"closed_jaxpr": _encode_closed(v)}
        if isinstance(v, Jaxpr):
            return {"jaxpr": _Encoder().jaxpr(v)}
        raise ValueError(f"serialize: cannot save parameter {key}={v!r} of primitive {prim} (a "
                         f"{type(v).__name__}; Python functions such as callbacks cannot be exported)")


def _qualname(cls: type, prim: str, key: str) -> str:
    module = cls.__module__
    if not module.startswith("fluxion."):
        raise ValueError(f"serialize: cannot save parameter {key} of primitive {prim}: its type "
                         f"{module}.{cls.__qualname__} is not one of fluxion's")
    return f"{module}:{cls.__qualname__}"


def _encode_closed(closed: ClosedJaxpr) -> dict:
    enc = _Encoder()
    return {"jaxpr": enc.jaxpr(closed.jaxpr), "consts": [_encode_array(c) for c in closed.consts]}


# --------------------------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------------------------

def _primitives() -> dict:
    from .backends.eager import impl_rules
    return {p.name: p for p in (*core.abstract_eval_rules, *impl_rules)}


def _resolve(path: str, kind: str) -> type:
    module, _, qual = path.partition(":")
    if not module.startswith("fluxion."):
        raise ValueError(f"deserialize: refusing to load type {path} (not one of fluxion's)")
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    ok = (isinstance(obj, type) and issubclass(obj, enum.Enum)) if kind == "enum" else (
        isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"))
    ok = ok and obj.__module__.startswith("fluxion.")  # defined by fluxion, not merely reachable from it
    if not ok:
        raise ValueError(f"deserialize: {path} is not a fluxion {kind}")
    return obj


class _Decoder:
    def __init__(self, prims: dict):
        self.vars: dict = {}
        self.prims = prims

    def new_vars(self, entries) -> list:
        out = []
        for i, a in entries:
            v = self.vars[i] = Var(_unaval(a))
            out.append(v)
        return out

    def atom(self, a) -> Any:
        if isinstance(a, dict):
            return Literal(_decode_array(a["lit"]), _unaval(a["aval"]))
        return self.vars[a]

    def jaxpr(self, e: dict) -> Jaxpr:
        constvars, invars = self.new_vars(e["constvars"]), self.new_vars(e["invars"])
        eqns = []
        for q in e["eqns"]:
            prim = self.prims.get(q["p"])
            if prim is None:
                raise ValueError(f"deserialize: unknown primitive {q['p']!r}")
            ins = [self.atom(a) for a in q["in"]]
            params = {k: self.param(v) for k, v in q["params"].items()}
            eqns.append(JaxprEqn(prim, ins, self.new_vars(q["out"]), params))
        return Jaxpr(constvars, invars, [self.atom(a) for a in e["outvars"]], eqns)

    def param(self, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        (kind, body), = [(k, v[k]) for k in v if k in _PARAM_KINDS] or [(None, None)]
        if kind == "complex":
            return complex(*body)
        if kind == "enum":
            return getattr(_resolve(body, "enum"), v["name"])
        if kind == "namedtuple":
            return _resolve(body, "namedtuple")(*[self.param(x) for x in v["fields"]])
        if kind == "tuple":
            return tuple(self.param(x) for x in body)
        if kind == "list":
            return [self.param(x) for x in body]
        if kind == "dict":
            return {self.param(k): self.param(x) for k, x in body}
        if kind == "dtype":
            return dtypes.bfloat16 if body == "bfloat16" else np.dtype(body)
        if kind == "array":
            return _decode_array(v)
        if kind == "closed_jaxpr":
            return _decode_closed(body, self.prims)
        if kind == "jaxpr":
            return _Decoder(self.prims).jaxpr(body)
        raise ValueError(f"deserialize: unknown parameter encoding {sorted(v)}")


_PARAM_KINDS = ("complex", "enum", "namedtuple", "tuple", "list", "dict", "dtype", "array", "closed_jaxpr", "jaxpr")


def _decode_closed(e: dict, prims: dict | None = None) -> ClosedJaxpr:
    dec = _Decoder(prims if prims is not None else _primitives())
    jaxpr = dec.jaxpr(e["jaxpr"])
    return ClosedJaxpr(jaxpr, [_decode_array(c) for c in e["consts"]])
