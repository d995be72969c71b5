"""State dicts and msgpack (de)serialization of pytrees, compatible with ``flax.serialization``.

Two layers:

* **State dicts.** :func:`to_state_dict` turns an object into nested ``dict``\\ s with string
  keys and array/scalar leaves; :func:`from_state_dict` pours such a dict back into a
  template object of the same structure. Built-in rules: ``dict`` stays a dict (keys made
  strings), ``list``/``tuple`` become ``{'0': ..., '1': ...}``, a NamedTuple becomes
  ``{field: ...}``; struct dataclasses (``fluxion.flax.struct``) map their pytree fields by
  name. Any other value is a leaf and is returned unchanged. More types are added with
  :func:`register_serialization_state`.
* **Bytes.** :func:`msgpack_serialize` / :func:`msgpack_restore` write and read such trees
  with msgpack; :func:`to_bytes` / :func:`from_bytes` combine both layers.

Wire format (the one Flax uses, so files are exchangeable with Flax): msgpack with three
extension types,

* code 1, array: a nested msgpack array ``[shape, dtype_name, C-order raw bytes]``
  (little-endian), with ``dtype_name`` a NumPy/ml_dtypes name such as ``'float32'`` or
  ``'bfloat16'``;
* code 2, Python ``complex``: nested msgpack ``[real, imag]``;
* code 3, NumPy scalar: encoded like an array of shape ``[]`` and restored as a scalar.

An array larger than :data:`MAX_CHUNK_SIZE` bytes (msgpack caps one object near 2 GiB) is
stored as ``{'__msgpack_chunked_array__': True, 'shape': {...}, 'chunks': {...}}`` and
reassembled on restore. Trees may nest at most :data:`MAX_DEPTH` containers deep, on both
sides (a state dict is a few levels deep; deeper data is corrupt or hostile, and would
otherwise exhaust Python's recursion limit). Nothing is ever pickled.

Restored array leaves are NumPy arrays (as with Flax), writeable and owning their memory.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import ml_dtypes  # noqa: F401  (importing it makes np.dtype('bfloat16') etc. resolvable)
import msgpack
import numpy as np

import fluxion
from fluxion import tree_util

__all__ = [
    "MAX_CHUNK_SIZE",
    "MAX_DEPTH",
    "current_path",
    "from_bytes",
    "from_state_dict",
    "is_serializable",
    "msgpack_restore",
    "msgpack_serialize",
    "register_serialization_state",
    "to_bytes",
    "to_state_dict",
]

StateDict = Any  # nested dicts with str keys; leaves are arrays, scalars, None, str, ...

# ---------------------------------------------------------------------------------------
# State-dict registry
# ---------------------------------------------------------------------------------------

# type -> (to_state_dict(x) -> state, from_state_dict(template, state) -> restored)
_STATE_DICT_REGISTRY: dict[type, tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]] = {}


class _NamedTupleKey:
    """Registry key standing for every NamedTuple class (they share one rule)."""


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _registry_key(x: Any) -> type:
    return _NamedTupleKey if _is_namedtuple(x) else type(x)


class _PathStack(threading.local):
    """The key path of the restore in progress, per thread, for error messages."""

    def __init__(self) -> None:
        self.names: list[str] = []


_path = _PathStack()


@contextmanager
def _entered(name: str) -> Iterator[None]:
    _path.names.append(name)
    try:
        yield
    finally:
        _path.names.pop()


def current_path() -> str:
    """Returns the state-dict path being restored, e.g. ``'./params/Dense_0/kernel'``.

    Restore rules registered with :func:`register_serialization_state` use it to say where
    a mismatch is.
    """
    return "/".join(_path.names)


def register_serialization_state(
    ty: type,
    ty_to_state_dict: Callable[[Any], StateDict],
    ty_from_state_dict: Callable[[Any, StateDict], Any],
    override: bool = False,
) -> None:
    """Registers how instances of ``ty`` become state dicts and are restored from them.

    Args:
        ty: the exact class (subclasses are not covered).
        ty_to_state_dict: ``x -> state``, usually a dict with string keys whose values come
            from calling :func:`to_state_dict` on the children.
        ty_from_state_dict: ``(template, state) -> restored copy``; it should call
            :func:`from_state_dict` with ``name=<key>`` on each child so that error
            messages carry the path.
        override: replace an existing registration instead of raising.

    Raises:
        ValueError: if ``ty`` is already registered and ``override`` is False.
    """
    if ty in _STATE_DICT_REGISTRY and not override:
        raise ValueError(
            f"a serialization handler for {ty.__name__!r} is already registered; "
            "pass override=True to replace it"
        )
    _STATE_DICT_REGISTRY[ty] = (ty_to_state_dict, ty_from_state_dict)


def is_serializable(target: Any) -> bool:
    """Whether ``target`` (an instance or a class) has a registered state-dict rule."""
    if isinstance(target, type):
        return target in _STATE_DICT_REGISTRY or (
            issubclass(target, tuple) and hasattr(target, "_fields")
        )
    return _registry_key(target) in _STATE_DICT_REGISTRY


def to_state_dict(target: Any) -> StateDict:
    """Returns the state dict of ``target``; unregistered values are returned unchanged.

    Raises:
        TypeError: if a registered rule produces a dict with a non-string key.
        ValueError: if two keys of a dict have the same string form (e.g. ``1`` and ``'1'``).
    """
    rule = _STATE_DICT_REGISTRY.get(_registry_key(target))
    if rule is None:
        return target
    state = rule[0](target)
    if isinstance(state, dict):
        for key in state:
            if not isinstance(key, str):
                raise TypeError(
                    f"state dict of {type(target).__name__} has non-string key {key!r}; "
                    "state dict keys must be str"
                )
    return state


def from_state_dict(target: Any, state: StateDict, name: str = ".") -> Any:
    """Returns a copy of ``target`` whose leaves are taken from ``state``.

    Only the structure of ``target`` is used (and the shapes of its array leaves, to catch
    mismatches); its leaf values are replaced.

    Args:
        target: template object, e.g. freshly initialised parameters or a train state.
        state: a state dict as produced by :func:`to_state_dict` (possibly after a trip
            through :func:`msgpack_serialize`).
        name: name of this node in the path shown by error messages.

    Returns:
        An object of the same type and structure as ``target``.

    Raises:
        ValueError: if keys are missing or unexpected, a list has the wrong length, a
            subtree stands where an array was expected, or an array's shape differs from
            the template's. The message names the path, e.g. ``./params/w``.
    """
    with _entered(name):
        rule = _STATE_DICT_REGISTRY.get(_registry_key(target))
        if rule is None:
            return _restore_leaf(target, state)
        return rule[1](target, state)


def _restore_leaf(target: Any, state: Any) -> Any:
    target_shape = getattr(target, "shape", None)
    if target_shape is None:
        # The template leaf carries no structure to check (None, a Python scalar, ...).
        return state
    if isinstance(state, dict):
        raise ValueError(
            f"expected an array of shape {tuple(target_shape)} at path {current_path()}, "
            f"but the state dict has a subtree with keys {sorted(state)}"
        )
    state_shape = getattr(state, "shape", None)
    if state_shape is not None and tuple(state_shape) != tuple(target_shape):
        raise ValueError(
            f"shape mismatch at path {current_path()}: the target has shape "
            f"{tuple(target_shape)}, the state dict has shape {tuple(state_shape)}"
        )
    return state


def _require_dict(state: Any, what: str) -> dict:
    if not isinstance(state, dict):
        raise ValueError(
            f"expected a dict (the state of a {what}) at path {current_path()}, "
            f"got {type(state).__name__}"
        )
    return state


def _check_keys(expected: set[str], state: dict, what: str) -> None:
    missing = expected - set(state)
    extra = set(state) - expected
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing from the state dict: {sorted(missing)}")
        if extra:
            parts.append(f"not in the target: {sorted(map(str, extra))}")
        raise ValueError(
            f"the state dict does not match the target {what} at path {current_path()}; "
            f"keys {'; keys '.join(parts)}"
        )


def _dict_to_state(xs: dict) -> dict[str, Any]:
    state = {str(k): to_state_dict(v) for k, v in xs.items()}
    if len(state) != len(xs):
        raise ValueError(f"dict keys {list(xs)} do not have distinct string forms")
    return state


def _dict_from_state(xs: dict, state: Any) -> dict:
    state = _require_dict(state, "dict")
    _check_keys({str(k) for k in xs}, state, "dict")
    return {k: from_state_dict(v, state[str(k)], name=str(k)) for k, v in xs.items()}


def _seq_to_state(xs: list | tuple) -> dict[str, Any]:
    return {str(i): to_state_dict(x) for i, x in enumerate(xs)}


def _list_from_state(xs: list | tuple, state: Any) -> list:
    state = _require_dict(state, type(xs).__name__)
    if len(state) != len(xs):
        raise ValueError(
            f"the target {type(xs).__name__} has {len(xs)} elements but the state dict has "
            f"{len(state)} at path {current_path()}"
        )
    _check_keys({str(i) for i in range(len(xs))}, state, type(xs).__name__)
    return [from_state_dict(x, state[str(i)], name=str(i)) for i, x in enumerate(xs)]


def _namedtuple_to_state(nt: tuple) -> dict[str, Any]:
    return {field: to_state_dict(getattr(nt, field)) for field in type(nt)._fields}


def _namedtuple_from_state(nt: tuple, state: Any) -> tuple:
    cls = type(nt)
    state = _require_dict(state, cls.__name__)
    _check_keys(set(cls._fields), state, cls.__name__)
    return cls(**{f: from_state_dict(getattr(nt, f), state[f], name=f) for f in cls._fields})


register_serialization_state(dict, _dict_to_state, _dict_from_state)
register_serialization_state(list, _seq_to_state, _list_from_state)
register_serialization_state(tuple, _seq_to_state, lambda xs, s: tuple(_list_from_state(xs, s)))
register_serialization_state(_NamedTupleKey, _namedtuple_to_state, _namedtuple_from_state)

# A Partial's function is code, not state: only its bound arguments are saved.
_Partial = getattr(tree_util, "Partial", None)


def _partial_to_state(p: Any) -> dict[str, Any]:
    return {"args": to_state_dict(p.args), "keywords": to_state_dict(p.keywords)}


def _partial_from_state(p: Any, state: Any) -> Any:
    state = _require_dict(state, "Partial")
    _check_keys({"args", "keywords"}, state, "Partial")
    args = from_state_dict(p.args, state["args"], name="args")
    keywords = from_state_dict(p.keywords, state["keywords"], name="keywords")
    return _Partial(p.func, *args, **keywords)


if _Partial is not None:
    register_serialization_state(_Partial, _partial_to_state, _partial_from_state)

# ---------------------------------------------------------------------------------------
# msgpack encoding
# ---------------------------------------------------------------------------------------

# msgpack limits one object to 2**31 - 1 bytes; arrays above this size are split, with
# margin for the encoding's own overhead.
MAX_CHUNK_SIZE = 2**30

_CHUNKED_MARKER = "__msgpack_chunked_array__"

# The deepest nesting of dicts/lists that msgpack_serialize writes and msgpack_restore reads.
# Model state dicts are a few levels deep (collection/module/.../leaf); the bound keeps the
# recursive tree walks far below Python's recursion limit.
MAX_DEPTH = 256


def _nesting_depth(tree: Any, limit: int) -> int:
    """How many containers (mappings, lists, tuples) deep ``tree`` nests; stops counting past ``limit``.

    Iterative, so that it is safe on any input.
    """
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        depth += 1
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


class _Ext(enum.IntEnum):
    """msgpack extension type codes (shared with Flax's format)."""

    NDARRAY = 1
    NATIVE_COMPLEX = 2
    NPSCALAR = 3


def _dtype_from_name(name: str) -> np.dtype:
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype.hasobject or dtype.fields is not None:
        raise ValueError(f"corrupt msgpack array record: unsupported dtype name {name!r}")
    return dtype


def _encode_array(arr: np.ndarray) -> bytes:
    if arr.dtype.hasobject or arr.dtype.fields is not None:
        raise TypeError(
            f"cannot serialize an array of dtype {arr.dtype}: object and structured dtypes are not supported"
        )
    try:
        ok = np.dtype(arr.dtype.name) == arr.dtype.newbyteorder("=")
    except TypeError:
        ok = False
    if not ok:
        raise TypeError(f"cannot serialize an array of dtype {arr.dtype}: its name does not identify it")
    if not arr.dtype.isnative:
        # The record stores only the dtype name, so the bytes must be in native order.
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return msgpack.packb((arr.shape, arr.dtype.name, arr.tobytes("C")), use_bin_type=True)


def _decode_array(data: bytes) -> np.ndarray:
    try:
        shape, dtype_name, buffer = msgpack.unpackb(data, raw=True)
        dtype = _dtype_from_name(dtype_name.decode("ascii"))
        shape = tuple(int(d) for d in shape)
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise ValueError(f"corrupt msgpack array record: {e}") from e
    if any(d < 0 for d in shape):
        raise ValueError(f"corrupt msgpack array record: negative dimension in shape {shape}")
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(buffer) != expected:
        raise ValueError(
            f"corrupt msgpack array record: shape {shape} of {dtype.name} needs {expected} "
            f"bytes, the record has {len(buffer)}"
        )
    # Copy so the result owns writeable memory instead of pinning the encoded buffer.
    return np.frombuffer(buffer, dtype=dtype).reshape(shape).copy()


def _ext_default(x: Any) -> msgpack.ExtType:
    """msgpack ``default`` hook; the tree was normalised by ``_prepare`` beforehand."""
    if isinstance(x, np.ndarray):
        return msgpack.ExtType(_Ext.NDARRAY, _encode_array(x))
    if isinstance(x, np.generic):
        return msgpack.ExtType(_Ext.NPSCALAR, _encode_array(np.asarray(x)))
    if isinstance(x, complex):
        return msgpack.ExtType(_Ext.NATIVE_COMPLEX, msgpack.packb((x.real, x.imag)))
    raise TypeError(f"cannot serialize {type(x).__name__!r} object")


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _Ext.NDARRAY:
        return _decode_array(data)
    if code == _Ext.NPSCALAR:
        return _decode_array(data)[()]
    if code == _Ext.NATIVE_COMPLEX:
        real, imag = msgpack.unpackb(data)
        return complex(real, imag)
    raise ValueError(f"unknown msgpack extension type code {code} (known: 1 array, 2 complex, 3 NumPy scalar)")


_NATIVE_LEAVES = (type(None), bool, int, float, str, bytes, complex)


def _chunk(arr: np.ndarray) -> dict[str, Any]:
    per_chunk = max(1, MAX_CHUNK_SIZE // arr.dtype.itemsize)
    flat = arr.reshape(-1)
    chunks = [flat[i : i + per_chunk] for i in range(0, flat.size, per_chunk)]
    return {
        _CHUNKED_MARKER: True,
        "shape": {str(i): d for i, d in enumerate(arr.shape)},
        "chunks": {str(i): c for i, c in enumerate(chunks)},
    }


def _is_foreign_array(x: Any) -> bool:
    # Other array types that convert to NumPy (e.g. another library's device arrays).
    return (
        not isinstance(x, (np.ndarray, np.generic))
        and hasattr(x, "__array__")
        and hasattr(x, "shape")
        and hasattr(x, "dtype")
    )


def _sorted_items(x: Mapping) -> list:
    try:
        return sorted(x.items(), key=lambda kv: kv[0])
    except TypeError:  # keys of mixed types: keep insertion order
        return list(x.items())


def _prepare(x: Any, path: str, sort_keys: bool) -> Any:
    """Copies the tree into msgpack-ready form: device arrays to NumPy, big arrays chunked.

    Raises TypeError naming the path for values msgpack cannot represent.
    """
    if isinstance(x, Mapping):
        items = _sorted_items(x) if sort_keys else x.items()
        return {k: _prepare(v, f"{path}/{k}", sort_keys) for k, v in items}
    if isinstance(x, list):
        return [_prepare(v, f"{path}/{i}", sort_keys) for i, v in enumerate(x)]
    if isinstance(x, fluxion.Array) or _is_foreign_array(x):
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        return _chunk(x) if x.nbytes > MAX_CHUNK_SIZE else x
    if isinstance(x, tuple):
        raise TypeError(
            f"msgpack_serialize: tuple at path {path} is not supported (a tuple would come "
            "back as a list); convert the tree with to_state_dict first, or use to_bytes"
        )
    if type(x) in _NATIVE_LEAVES or isinstance(x, np.generic):
        return x
    raise TypeError(
        f"msgpack_serialize: cannot serialize {type(x).__name__!r} object at path {path}; "
        "leaves must be arrays, NumPy scalars, None, bool, int, float, complex, str or bytes"
    )


def _unchunk(record: dict, path: str) -> np.ndarray:
    try:
        shape = tuple(int(record["shape"][str(i)]) for i in range(len(record["shape"])))
        chunks = [np.asarray(record["chunks"][str(i)]) for i in range(len(record["chunks"]))]
        return np.concatenate(chunks).reshape(shape)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"corrupt chunked array record at path {path}: {e}") from e


def _finish(x: Any, path: str) -> Any:
    """Reassembles chunked arrays in a freshly decoded tree (at most MAX_DEPTH deep)."""
    if isinstance(x, dict):
        if x.get(_CHUNKED_MARKER) is True:
            return _unchunk(x, path)
        out = {}
        for k, v in x.items():  # a loop, not a comprehension: one stack frame per level
            out[k] = _finish(v, f"{path}/{k}")
        return out
    if isinstance(x, list):
        out_list = []
        for i, v in enumerate(x):
            out_list.append(_finish(v, f"{path}/{i}"))
        return out_list
    return x


def msgpack_serialize(pytree: Any, in_place: bool = False) -> bytes:
    """Encodes a tree of dicts/lists with array and scalar leaves as msgpack bytes.

    Low level: tuples and custom classes are not accepted; use :func:`to_bytes` for those.

    Args:
        pytree: nested ``dict`` (str or int keys) and ``list`` containers; leaves are
            ``fluxion.Array``/NumPy arrays (any numeric dtype including ``bfloat16``),
            NumPy scalars, ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``,
            ``bytes``.
        in_place: False (default) writes dict entries in sorted key order, True in the
            tree's own order; this matches Flax, whose copy for ``in_place=False`` sorts
            keys as a side effect. The input is never modified either way.

    Returns:
        The encoded bytes.

    Raises:
        TypeError: for a tuple, an object or structured dtype, or an unsupported leaf type;
            the message names the path.
        ValueError: if containers nest deeper than :data:`MAX_DEPTH` levels (such bytes
            could not be restored).
    """
    if _nesting_depth(pytree, MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(
            f"msgpack_serialize: the tree nests containers deeper than {MAX_DEPTH} levels, the "
            "limit of msgpack_restore (serialization.MAX_DEPTH)"
        )
    prepared = _prepare(pytree, ".", sort_keys=not in_place)
    return msgpack.packb(prepared, default=_ext_default, strict_types=True)


def msgpack_restore(encoded_pytree: bytes) -> Any:
    """Decodes bytes produced by :func:`msgpack_serialize` (or by Flax).

    Args:
        encoded_pytree: the msgpack bytes.

    Returns:
        The tree of dicts/lists; arrays come back as NumPy arrays, NumPy scalars as NumPy
        scalars, complex numbers as ``complex``.

    Raises:
        ValueError: if the bytes are not valid msgpack (truncated, trailing data, garbage),
            an array record is corrupt, or containers nest deeper than :data:`MAX_DEPTH`
            levels (the message says so).
    """
    too_deep = ValueError(
        f"msgpack_restore: the data nests containers deeper than {MAX_DEPTH} levels, the limit "
        "when decoding (serialization.MAX_DEPTH); a state dict is only a few levels deep, so "
        "the data is corrupt or not a serialized state dict"
    )
    try:
        tree = msgpack.unpackb(encoded_pytree, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    except msgpack.exceptions.StackError as e:  # msgpack's own (larger) nesting limit
        raise too_deep from e
    except (ValueError, msgpack.exceptions.UnpackException, TypeError) as e:
        raise ValueError(f"msgpack_restore: the data is not a valid encoded tree: {type(e).__name__}: {e}") from e
    # msgpack's C decoder nests up to ~1000 levels without Python recursion; the tree walks
    # that follow are recursive, so the depth is bounded (and checked without recursion) first.
    if _nesting_depth(tree, MAX_DEPTH) > MAX_DEPTH:
        raise too_deep
    return _finish(tree, ".")


def to_bytes(target: Any) -> bytes:
    """Serializes ``target``'s state dict (see :func:`to_state_dict`) with msgpack."""
    return msgpack_serialize(to_state_dict(target), in_place=True)


def from_bytes(target: Any, encoded_bytes: bytes) -> Any:
    """Restores ``target`` from bytes written by :func:`to_bytes`.

    Args:
        target: template with the structure of the saved object.
        encoded_bytes: msgpack bytes.

    Returns:
        A copy of ``target`` holding the decoded leaves (NumPy arrays for arrays).

    Raises:
        ValueError: on corrupt bytes or a structure/shape mismatch (naming the path).
    """
    return from_state_dict(target, msgpack_restore(encoded_bytes))
