"""Dtypes, canonicalization and JAX's type-promotion lattice (with weak types).

The promotion rules follow the lattice documented in JAX's "Type promotion semantics" design note
(https://jax.readthedocs.io/en/latest/type_promotion.html): Python scalars are *weakly typed* (`i*`, `f*`,
`c*`) and adopt the dtype of the array they meet; two concrete dtypes promote to their least upper bound.
With `jax_enable_x64` off (the default), 64-bit types canonicalize to their 32-bit counterparts.

Every dtype query on the eager hot path goes through small precomputed tables, so promotion is a dict lookup.
"""

from __future__ import annotations

import builtins
import itertools
from typing import Any

import ml_dtypes
import numpy as np

from .config import config

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float0 = np.dtype([("float0", np.void, 0)])

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

_signed = (int8, int16, int32, int64)
_unsigned = (uint8, uint16, uint32, uint64)
_floats = (bfloat16, float16, float32, float64)
_complex = (complex64, complex128)
supported_dtypes = frozenset((bool_,) + _signed + _unsigned + _floats + _complex)

# Lattice nodes: concrete dtypes plus the three weak kinds.
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "i*", "f*", "c*"

_lattice_edges: dict[Any, list[Any]] = {
    bool_: [WEAK_INT],
    WEAK_INT: [uint8, int8],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: [WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [WEAK_FLOAT],
    WEAK_FLOAT: [bfloat16, float16, WEAK_COMPLEX],
    bfloat16: [float32], float16: [float32], float32: [float64, complex64], float64: [complex128],
    WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
}


def _upper_sets() -> dict[Any, frozenset]:
    uppers: dict[Any, frozenset] = {}

    def visit(node):
        if node not in uppers:
            acc = {node}
            for nxt in _lattice_edges[node]:
                acc |= visit(nxt)
            uppers[node] = frozenset(acc)
        return uppers[node]

    for node in _lattice_edges:
        visit(node)
    return uppers


def _build_lub_table() -> dict[tuple, Any]:
    uppers = _upper_sets()
    table = {}
    for a, b in itertools.product(_lattice_edges, repeat=2):
        common = uppers[a] & uppers[b]
        # The least upper bound is the unique common node that is below every other common node.
        (lub,) = [c for c in common if common <= uppers[c]]
        table[a, b] = lub
    return table


_LUB = _build_lub_table()

_X64_TO_X32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def _canonical_map(x64: bool) -> dict[np.dtype, np.dtype]:
    return {dt: (dt if x64 else _X64_TO_X32.get(dt, dt)) for dt in supported_dtypes}


_canonical: dict[np.dtype, np.dtype] = _canonical_map(False)
_weak_default: dict[str, np.dtype] = {}


def _refresh_tables(x64: bool) -> None:
    global _canonical
    _canonical = _canonical_map(bool(x64))
    _weak_default.update({
        WEAK_INT: int64 if x64 else int32,
        WEAK_FLOAT: float64 if x64 else float32,
        WEAK_COMPLEX: complex128 if x64 else complex64,
    })


_refresh_tables(config.jax_enable_x64)
config.add_hook("jax_enable_x64", _refresh_tables)


def x64_enabled() -> bool:
    return bool(config.jax_enable_x64)


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """Returns the dtype fluxion stores for `dtype` (64-bit types become 32-bit unless x64 is enabled).

    Raises:
      TypeError: `dtype` is not a dtype fluxion supports (strings, objects, ...).
    """
    try:
        return _canonical[dtype]
    except (KeyError, TypeError):
        pass
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{dtype!r} is not a valid dtype") from e
    if dt not in _canonical:
        raise TypeError(f"dtype {dt} is not supported by fluxion (supported: bool, int8-64, uint8-64, "
                        "bfloat16, float16-64, complex64/128)")
    return _canonical[dt]


def default_int_dtype() -> np.dtype:
    return _weak_default[WEAK_INT]


def default_float_dtype() -> np.dtype:
    return _weak_default[WEAK_FLOAT]


def default_complex_dtype() -> np.dtype:
    return _weak_default[WEAK_COMPLEX]


def _weak_kind(dtype: np.dtype) -> str:
    kind = dtype.kind
    if kind in "iu":
        return WEAK_INT
    if kind == "c":
        return WEAK_COMPLEX
    if kind == "f" or dtype == bfloat16:
        return WEAK_FLOAT
    return dtype  # bool has no weak kind


def lattice_node(dtype: np.dtype, weak_type: bool) -> Any:
    return _weak_kind(dtype) if weak_type else dtype


def promote_nodes(nodes) -> Any:
    it = iter(nodes)
    acc = next(it)
    for n in it:
        acc = _LUB[acc, n]
    return acc


def node_to_dtype(node: Any) -> tuple[np.dtype, bool]:
    """Maps a lattice node to (canonical dtype, weak_type)."""
    if isinstance(node, str):
        return _weak_default[node], True
    return _canonical[node], False


def result_type_of_pairs(pairs) -> tuple[np.dtype, bool]:
    """Promotes (dtype, weak_type) pairs to the (dtype, weak_type) of the result."""
    node = promote_nodes(lattice_node(dt, w) for dt, w in pairs)
    return node_to_dtype(node)


def promote_types(a: Any, b: Any) -> np.dtype:
    """`jnp.promote_types`: the least upper bound of two dtypes in the lattice.

    As in JAX with x64 off: when either input is a 64-bit type the exact least upper bound is returned (int64
    with uint64 gives float64); otherwise the result is canonicalized (int8 with uint32 gives int32).
    """
    a_dt, b_dt = _to_dtype(a), _to_dtype(b)
    node = _LUB[a_dt, b_dt]
    if isinstance(node, str):
        node = {WEAK_INT: int64, WEAK_FLOAT: float64, WEAK_COMPLEX: complex128}[node]
    if a_dt in _X64_TO_X32 or b_dt in _X64_TO_X32:
        return node
    return _canonical[node]


def _to_dtype(a: Any) -> np.dtype:
    return bfloat16 if a is ml_dtypes.bfloat16 else np.dtype(a)


def scalar_type_node(x: Any) -> Any:
    """The lattice node of a Python scalar (weakly typed), or None if `x` is not one."""
    t = type(x)
    if t is builtins.bool:
        return bool_
    if t is builtins.int:
        return WEAK_INT
    if t is builtins.float:
        return WEAK_FLOAT
    if t is builtins.complex:
        return WEAK_COMPLEX
    # Subclasses of the Python scalar types (an `enum.IntEnum` member such as `dm_env.StepType.MID`) are Python
    # scalars too, as in JAX; NumPy scalars (np.float64 subclasses float) are not.
    if isinstance(x, (builtins.bool, builtins.int, builtins.float, builtins.complex)) and not isinstance(x, np.generic):
        return bool_ if isinstance(x, builtins.bool) else WEAK_INT if isinstance(x, builtins.int) else \
            WEAK_FLOAT if isinstance(x, builtins.float) else WEAK_COMPLEX
    return None


def dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    """(dtype, weak_type) of any array-like: fluxion Array, tracer, NumPy array/scalar, Python scalar or list."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    node = scalar_type_node(x)
    if node is not None:
        return node_to_dtype(node)
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize_dtype(x.dtype), False
    if isinstance(x, (list, tuple)):
        return canonicalize_dtype(np.asarray(x).dtype) if len(x) else default_float_dtype(), False
    if hasattr(x, "__jax_array__"):
        return dtype_and_weak(x.__jax_array__())
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return canonicalize_dtype(dt), False
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid fluxion array type")


_PY_TYPE_NODES = {builtins.int: WEAK_INT, builtins.float: WEAK_FLOAT, builtins.complex: WEAK_COMPLEX}


def result_type(*args: Any, return_weak_type_flag: bool = False):
    """`jnp.result_type`: the dtype an operation on `args` (arrays, dtypes, scalars) produces.

    Dtype arguments are canonicalized first (so uint64 counts as uint32 with x64 off), as in JAX.
    """
    if not args:
        raise ValueError("result_type: at least one array or dtype is required")
    pairs = []
    for a in args:
        if a is builtins.int or a is builtins.float or a is builtins.complex:
            pairs.append(node_to_dtype(_PY_TYPE_NODES[a]))
        elif isinstance(a, (np.dtype, type, str)) and not isinstance(a, (builtins.bool, builtins.int,
                                                                          builtins.float, builtins.complex)):
            dt = getattr(a, "dtype", None) if isinstance(a, type) and not issubclass(a, np.generic) else None
            pairs.append((canonicalize_dtype(dt if dt is not None else _to_dtype(a)), False))
        else:
            pairs.append(dtype_and_weak(a))
    dt, weak = result_type_of_pairs(pairs)
    return (dt, weak) if return_weak_type_flag else dt


_SHORT_NAMES = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
    bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
    complex64: "c64", complex128: "c128", float0: "float0",
}


def short_name(dtype: np.dtype) -> str:
    """The abbreviation JAX uses when printing types (`f32`, `i32`, `bool`, `bf16`)."""
    return _SHORT_NAMES.get(dtype, str(dtype))


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == bfloat16


def is_inexact(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype == bfloat16


def is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def issubdtype(a: Any, b: Any) -> bool:
    """`jnp.issubdtype`, aware of bfloat16 (which NumPy does not classify as floating)."""
    if a is None:
        return False
    a_dt = bfloat16 if a is ml_dtypes.bfloat16 else a
    try:
        a_dt = np.dtype(a_dt)
    except TypeError:
        return np.issubdtype(a, b)
    if a_dt == bfloat16:
        return b in (np.floating, np.inexact, np.number, np.generic, ml_dtypes.bfloat16) or (
            not isinstance(b, type) and np.dtype(b) == bfloat16)
    return np.issubdtype(a_dt, b)


def finfo(dtype: Any):
    """Machine limits of a floating dtype (also bfloat16 and the float8 types), as `jnp.finfo`.

    Args:
        dtype: a floating or complex dtype, scalar type, or array-like's dtype. Non-string dtypes are canonicalized
            first (float64 -> float32 without x64, as in JAX); a dtype given as a string is used as named.

    Returns:
        An `ml_dtypes.finfo` object (a `numpy.finfo` extended to the ml_dtypes types) with `eps`, `max`, `min`, `tiny`,
        `bits`, `resolution`, ...

    Raises:
        ValueError: for a non-floating dtype (raised by NumPy/ml_dtypes).

    >>> import fluxion.numpy as jnp
    >>> jnp.finfo(jnp.float32).eps
    np.float32(1.1920929e-07)
    >>> jnp.finfo(jnp.bfloat16).bits
    16
    >>> jnp.finfo(jnp.float16).max
    np.float16(6.55e+04)
    """
    dt = canonicalize_dtype(dtype) if not isinstance(dtype, str) else np.dtype(dtype)
    return ml_dtypes.finfo(dt)


def iinfo(dtype: Any):
    """Machine limits of an integer dtype (also the int4/uint4 types), as `jnp.iinfo`.

    Args:
        dtype: an integer dtype or scalar type (not canonicalized: `iinfo(int64)` describes int64).

    Returns:
        An `ml_dtypes.iinfo` object with `min`, `max`, `bits`.

    Raises:
        ValueError: for a non-integer dtype (raised by NumPy/ml_dtypes).

    >>> import fluxion.numpy as jnp
    >>> jnp.iinfo(jnp.int8).min, jnp.iinfo(jnp.int8).max
    (-128, 127)
    >>> jnp.iinfo(jnp.uint16).max
    65535
    """
    return ml_dtypes.iinfo(np.dtype(dtype))


def inexact_dtype_for(dtype: np.dtype) -> np.dtype:
    """The float dtype an integer/bool input is promoted to by `jnp.sin`, `mean`, ... (default float)."""
    return dtype if is_inexact(dtype) else default_float_dtype()
