"""Typed PRNG key arrays (`random.key`, dtype `key<fry>`) in the `fluxion.numpy` and `fluxion.lax` functions.

A key array of shape S is uint32 data of shape S + (2,): two 32-bit words per key. Every function JAX allows on
key arrays rearranges, selects or compares whole keys, and never looks inside one, so it is the same function
applied to each word of the data separately. This module runs it that way: the function is mapped (`vmap`) over
the trailing word axis of every key argument's data, and the results are wrapped back as key arrays. The key
axis therefore stays last, and every axis, shape and index argument keeps its meaning relative to the key array's
own shape (`expand_dims(keys, -1)` adds an axis after the last key axis, not after the word axis). Because it is a
`vmap`, the same code runs eagerly, under `jit`, under a user's `vmap`, and under `grad` (keys are integer data,
so they carry no derivative).

`install(namespace, rules, lax_fn)` replaces the listed functions of a public namespace (`fluxion.numpy`,
`fluxion.lax`) with wrappers generated from each function's own signature: the ordinary path tests the type of
the arguments that may hold keys (a list's first and last entries for list parameters) and calls the original;
only a call that passes a key array takes the key path. The functions in `fluxion/_src/numpy/*.py` themselves
are untouched, so code inside fluxion that calls them directly never sees keys.

Rule kinds:
  "keys": the result holds keys (reshape, stack, where, take, lax.dynamic_slice, ...);
  "compare": equality of whole keys: both words equal (`equal`, `lax.eq`, `array_equal`), or either word
    different (`not_equal`, `lax.ne`);
  "like": `zeros_like`/`ones_like`/`empty_like`/`full_like` of keys fill the key data (JAX's behaviour: the
    fill value is written to both words), or build an ordinary array when another dtype is asked for;
  "convert": `array`/`asarray`/`astype`/`lax.convert_element_type`: keys stay keys (a list of keys is stacked);
    another dtype, and `lax.bitcast_convert_type`, are refused with ValueError, as JAX;
  "filled": `zeros`/`ones`/`empty` with `dtype=key<fry>` and `full(shape, key)`;
  "isin": membership of whole keys.
In a key-valued parameter, keys mixed with ordinary arrays are refused: ValueError in `fluxion.numpy` (JAX's
promotion error), TypeError in `fluxion.lax`. `PRNGKeyArray`'s methods `squeeze`, `swapaxes`, `transpose`,
`take` and `.at[idx].get()/.set(keys)` go through `apply_to_keys`, the same per-word mapping.
Functions JAX refuses for keys (arithmetic, reductions, sorting) are not wrapped: fluxion's own argument check
raises TypeError for them, JAX's class.

Differences from JAX: `jnp.reshape(keys, ..., order="F")` and `lax.pad(keys, key, ...)` give the
well-defined key results where JAX 0.10 fails inside its compiler; mixing keys and ordinary arrays in a `lax`
function raises TypeError (JAX fails in its compiler).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from .. import core
from ..api import vmap
from ..lax import reductions as red
from ..lax import structural as st
from ..random.prng import KEY_DTYPE, KeyDType, PRNGKeyArray

_UINT32 = np.dtype(np.uint32)
_SEQ = (list, tuple)


def _holds_key(x: Any) -> bool:
    """Whether `x` is a key array or a (nested) list whose first or last entry holds one. Only the ends are
    looked at, so converting a long list of numbers costs nothing extra; a list that holds keys elsewhere is
    refused by the function's own argument check."""
    if type(x) is PRNGKeyArray:
        return True
    if type(x) in _SEQ and x:
        return _holds_key(x[0]) or (len(x) > 1 and _holds_key(x[-1]))
    return False


class _Slot:
    """Stands for the i-th key argument inside the per-word function."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


def _strip(x: Any, datas: list) -> Any:
    """`x` with every key array replaced by a `_Slot`; the key data is appended to `datas`."""
    if type(x) is PRNGKeyArray:
        datas.append(x._base)
        return _Slot(len(datas) - 1)
    if type(x) in _SEQ:
        return type(x)(_strip(y, datas) for y in x)
    return x


def _fill(x: Any, words: tuple) -> Any:
    if type(x) is _Slot:
        return words[x.i]
    if type(x) in _SEQ:
        return type(x)(_fill(y, words) for y in x)
    return x


def _wrap_keys(out: Any) -> Any:
    if type(out) in _SEQ:
        return type(out)(_wrap_keys(o) for o in out)
    return PRNGKeyArray(out)


def _leaves(x: Any):
    if type(x) in _SEQ:
        for y in x:
            yield from _leaves(y)
    else:
        yield x


def _on_words(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """`fn` applied to each 32-bit word of the key arguments' data; the results' word axis is last."""
    datas: list = []
    sargs = tuple(_strip(a, datas) for a in args)
    skw = {k: _strip(v, datas) for k, v in kwargs.items()}

    def per_word(*words):
        return fn(*(_fill(a, words) for a in sargs), **{k: _fill(v, words) for k, v in skw.items()})

    return vmap(per_word, in_axes=-1, out_axes=-1)(*datas)


def apply_to_keys(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` with the key arrays among the arguments: the key result(s) of `fn` applied to each
    word of their data (the engine of every "keys" rule; PRNGKeyArray's methods use it directly)."""
    return _wrap_keys(_on_words(fn, args, kwargs))


class KeyIndexUpdateRef:
    """`keys.at[idx]`: `get()` reads keys, `set(new_keys)` writes keys; JAX offers nothing else on keys (the
    arithmetic updates raise TypeError)."""

    __slots__ = ("keys", "index")

    def __init__(self, keys: PRNGKeyArray, index: Any):
        self.keys, self.index = keys, index

    def get(self, **kwargs) -> PRNGKeyArray:
        return apply_to_keys(lambda w: w.at[self.index].get(**kwargs), self.keys)

    def set(self, values: Any, **kwargs) -> PRNGKeyArray:
        if type(values) is not PRNGKeyArray:
            raise _mixing_error("at[].set", True, values)  # TypeError, as JAX
        return apply_to_keys(lambda w, v: w.at[self.index].set(v, **kwargs), self.keys, values)

    def __getattr__(self, name: str):
        if name in ("add", "subtract", "multiply", "divide", "power", "min", "max", "apply"):
            raise TypeError(f"at[].{name}: key<fry> arrays support only at[].get() and at[].set(keys)")
        raise AttributeError(name)


class KeyIndexUpdateHelper:
    """The `keys.at` property of key arrays."""

    __slots__ = ("keys",)

    def __init__(self, keys: PRNGKeyArray):
        self.keys = keys

    def __getitem__(self, index: Any) -> KeyIndexUpdateRef:
        return KeyIndexUpdateRef(self.keys, index)


def _mixing_error(name: str, lax_fn: bool, other: Any) -> Exception:
    dt = getattr(other, "dtype", type(other).__name__)
    msg = (f"{name}: cannot combine key<fry> arrays with values of dtype {dt}; every operand in this position "
           "must be a key array (wrap uint32 key data with random.wrap_key_data)")
    # jnp promotes dtypes and, as JAX's, refuses keys there with ValueError; lax does not promote: TypeError.
    return TypeError(msg) if lax_fn else ValueError(msg)


class _Rule:
    """How one function treats key arrays: `kind` (see the module docstring), its key-valued parameters
    (`values`: where keys may appear; keys mixed with other arrays there are refused), and the parameters whose
    arguments decide whether a call takes the key path (`probe`, by default `values`)."""

    def __init__(self, kind: str, values: tuple = (), probe: tuple | None = None):
        self.kind = kind
        self.values = values
        self.probe = values if probe is None else probe


def _bind(sig: inspect.Signature, args: tuple, kwargs: dict):
    try:
        return sig.bind(*args, **kwargs)
    except TypeError:
        return None


def _check_values(name: str, lax_fn: bool, rule: _Rule, bound) -> bool:
    """Whether the keys sit only in key-valued parameters (else the function's own check reports them); raises
    when such a parameter mixes keys with other arrays."""
    for pname, value in bound.arguments.items():
        if pname not in rule.values and _holds_key(value):
            return False
    saw_key, other = False, None
    for pname in rule.values:
        if pname not in bound.arguments:
            continue
        for leaf in _leaves(bound.arguments[pname]):
            if type(leaf) is PRNGKeyArray:
                saw_key = True
            elif leaf is not None and other is None:
                other = leaf
    if saw_key and other is not None:
        raise _mixing_error(name, lax_fn, other)
    return saw_key


def _key_dtype(dtype: Any) -> bool:
    return dtype is None or dtype == KEY_DTYPE


def _convert_error(name: str, dtype: Any) -> ValueError:
    try:
        dtype = np.dtype(dtype).name
    except TypeError:
        pass
    return ValueError(f"{name}: cannot convert key<fry> data to dtype {dtype}; random.key_data(keys) gives the "
                      "uint32 data of keys")


def _shape_of(shape: Any, default: tuple) -> tuple:
    if shape is None:
        return default
    return tuple(shape) if isinstance(shape, (list, tuple)) else (int(shape),)


def _like(name: str, fn: Callable, bound) -> Any:
    """`zeros_like(keys)` and kin: key data filled with the value (JAX writes it to both words), or, when an
    ordinary dtype is asked for, that function applied to a uint32 array of the keys' shape."""
    args = dict(bound.arguments)
    keys = args.pop(next(iter(bound.arguments)))
    if not _key_dtype(args.get("dtype")):
        return fn(core.to_array(np.zeros(keys.shape, _UINT32)), **args)
    shape = _shape_of(args.get("shape"), keys.shape)
    fill = {"zeros_like": 0, "empty_like": 0, "ones_like": 1}.get(name, args.get("fill_value"))
    from .creation import full
    return PRNGKeyArray(full(shape + (2,), fill, dtype=_UINT32))


def _filled(name: str, fn: Callable, bound) -> Any:
    """`zeros(shape, dtype=key<fry>)` and `full(shape, key)`: keys of `shape` (zero data, or copies of a key)."""
    args = bound.arguments
    shape = _shape_of(args.get("shape"), ())
    fill = args.get("fill_value")
    if type(fill) is PRNGKeyArray:
        if not _key_dtype(args.get("dtype")):
            raise _convert_error(name, args.get("dtype"))
        from .shape import broadcast_to
        return _wrap_keys(_on_words(broadcast_to, (fill, shape), {}))
    if args.get("dtype") != KEY_DTYPE:
        return fn(*bound.args, **bound.kwargs)
    from .creation import full
    return PRNGKeyArray(full(shape + (2,), 1 if name == "ones" else 0 if fill is None else fill, dtype=_UINT32))


def _stack_keys(name: str, x: Any) -> PRNGKeyArray:
    """One key array from a (nested) list of key arrays of one shape, as `array` builds an array from a list."""
    if type(x) is PRNGKeyArray:
        return x
    if type(x) not in _SEQ or not x:
        raise _mixing_error(name, False, x)
    parts = [_stack_keys(name, y)._base for y in x]
    return PRNGKeyArray(st.concatenate([st.expand_dims(p, (0,)) for p in parts], 0))


def _convert(name: str, fn: Callable, bound) -> Any:
    """`array`/`asarray`/`astype`/`convert_element_type`: keys stay keys; another dtype is refused (ValueError,
    as JAX); `bitcast_convert_type` of keys is always refused."""
    args = bound.arguments
    x = next(iter(args.values()))
    dtype = args.get("dtype", args.get("new_dtype"))
    if name == "bitcast_convert_type" or not _key_dtype(dtype):
        raise _convert_error(name, dtype)
    return _stack_keys(name, x)


def _isin(bound) -> Any:
    """Whether each key of `element` equals some key of `test_elements` (both words equal)."""
    from . import reductions, ufuncs
    args = bound.arguments
    element, test = args["element"], args["test_elements"]
    if type(element) is not PRNGKeyArray or type(test) is not PRNGKeyArray:
        raise _mixing_error("isin", False, test if type(element) is PRNGKeyArray else element)
    e = st.expand_dims(element._base, (element.ndim,))                     # S + (1, 2)
    t = st.reshape(test._base, (test.size, 2))                              # (n, 2)
    found = reductions.any(reductions.all(ufuncs.equal(e, t), axis=-1), axis=-1)
    return ufuncs.logical_not(found) if args.get("invert", False) else found


def _compare(name: str, result: Any) -> Any:
    """Reduces per-word comparisons (word axis last) to one answer per key."""
    nd = core.get_aval(result).ndim
    if name in ("not_equal", "ne"):
        return red.reduce_or(result, (nd - 1,))
    return red.reduce_and(result, (nd - 1,))


def key_aware(fn: Callable, rule: _Rule, lax_fn: bool) -> Callable:
    """`fn` extended to typed key arrays by `rule` (see the module docstring)."""
    name = fn.__name__
    sig = inspect.signature(fn)
    missing = [v for v in rule.values + rule.probe if v not in sig.parameters]
    assert not missing, f"key rule of {name} names unknown parameters {missing}"

    def key_path(args, kwargs):
        bound = _bind(sig, args, kwargs)
        if bound is None:
            return fn(*args, **kwargs)
        first = next(iter(bound.arguments.values()), None)
        if rule.kind == "like":
            return _like(name, fn, bound) if type(first) is PRNGKeyArray else fn(*args, **kwargs)
        if rule.kind == "convert":
            return _convert(name, fn, bound) if _holds_key(first) else fn(*args, **kwargs)
        if rule.kind == "filled":
            return _filled(name, fn, bound)
        if rule.kind == "isin":
            return _isin(bound)
        if not _check_values(name, lax_fn, rule, bound):
            return fn(*args, **kwargs)
        if name == "pad" and not lax_fn and bound.arguments.get("mode", "constant") == "constant":
            raise ValueError("pad: mode='constant' would write a number into key<fry> data; key arrays can be "
                             "padded with the modes that copy existing keys ('edge', 'wrap', 'reflect', ...)")
        out = _on_words(fn, args, kwargs)
        if rule.kind == "compare":
            return _compare(name, out)
        return _wrap_keys(out)

    first = next(iter(sig.parameters))
    probe = rule.probe or {"like": (first,), "convert": (first,), "isin": ("element", "test_elements"),
                           "filled": tuple(n for n in ("fill_value", "dtype") if n in sig.parameters)}[rule.kind]
    return _generate_wrapper(fn, sig, rule.kind, probe, key_path)


# Parameters that take a list of arrays (or are *args): their check also looks into a list's ends.
_SEQ_PARAMS = frozenset({"arrays", "tup", "arys", "args", "choices", "choicelist", "operands", "cases", "object",
                         "a", "test_elements"})


def _generate_wrapper(fn: Callable, sig: inspect.Signature, kind: str, probe: tuple, key_path: Callable) -> Callable:
    """A wrapper with `fn`'s own parameter list whose ordinary path is one type test per key-valued parameter.

    A generic `*args, **kwargs` wrapper that scanned every argument would cost several times more on calls like
    `x == y` (which go through `equal`), so the wrapper is generated from the signature, as `dataclasses` and
    `namedtuple` generate theirs: the test reads the key-valued parameters by name and the call forwards every
    parameter as it was declared."""
    env = {"__name__": __name__, "_fn": fn, "_key_path": key_path, "_K": PRNGKeyArray, "_KD": KeyDType, "_SEQ": _SEQ,
           "_holds_key": _holds_key}
    params, call_pos, call_kw = [], [], []
    star_done = False
    prev_kind = None
    for p in sig.parameters.values():
        if prev_kind is p.POSITIONAL_ONLY and p.kind is not p.POSITIONAL_ONLY:
            params.append("/")
        text = p.name
        if p.default is not inspect.Parameter.empty:
            env[f"_d_{p.name}"] = p.default
            text += f"=_d_{p.name}"
        if p.kind is p.VAR_POSITIONAL:
            text, star_done = "*" + p.name, True
            call_pos.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + p.name
            call_kw.append("**" + p.name)
        elif p.kind is p.KEYWORD_ONLY:
            if not star_done:
                params.append("*")
                star_done = True
            call_kw.append(f"{p.name}={p.name}")
        else:
            call_pos.append(p.name)
        params.append(text)
        prev_kind = p.kind
    if prev_kind is inspect.Parameter.POSITIONAL_ONLY:
        params.append("/")
    tests = []
    for name in probe:
        if kind == "filled":
            tests.append(f"type({name}) is _K or type({name}) is _KD")
        elif name in _SEQ_PARAMS or sig.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            tests.append(f"type({name}) is _K or (type({name}) in _SEQ and _holds_key({name}))")
        else:
            tests.append(f"type({name}) is _K")
    call = ", ".join(call_pos + call_kw)
    kw = "{" + ", ".join(f"{c.split('=')[0]!r}: {c.split('=')[0]}" for c in call_kw if not c.startswith("**")) + "}"
    if any(c.startswith("**") for c in call_kw):
        kw = f"dict({kw}, **{call_kw[-1][2:]})"
    fixed = [c for c in call_pos if not c.startswith("*")]
    args = "(" + "".join(c + ", " for c in fixed) + ")"
    star = next((c for c in call_pos if c.startswith("*")), None)
    if star:
        args = f"{args} + tuple({star[1:]})"
    src = (f"def {fn.__name__}({', '.join(params)}):\n"
           f"    if {' or '.join(tests)}:\n"
           f"        return _key_path({args}, {kw})\n"
           f"    return _fn({call})\n")
    exec(compile(src, f"<key-aware {fn.__name__}>", "exec"), env)  # noqa: S102  (generated from a signature)
    wrapper = functools.wraps(fn)(env[fn.__name__])
    wrapper.__wrapped_for_keys__ = fn
    return wrapper


def install(namespace: dict, rules: dict, lax_fn: bool) -> None:
    """Replaces `namespace[name]` by its key-aware wrapper for every `name` in `rules`."""
    for name, rule in rules.items():
        namespace[name] = key_aware(namespace[name], rule, lax_fn)


def _keys(*values: str) -> _Rule:
    return _Rule("keys", values)


NUMPY_RULES = {
    # Arrangement of one key array.
    **{n: _keys("a") for n in ("reshape", "expand_dims", "squeeze", "moveaxis", "swapaxes", "transpose",
                               "permute_dims", "roll", "rollaxis", "repeat", "take", "ravel", "copy", "diagonal",
                               "resize", "compress")},
    **{n: _keys("m") for n in ("flip", "fliplr", "flipud", "rot90", "tril", "triu")},
    "broadcast_to": _keys("array"), "matrix_transpose": _keys("x"), "tile": _keys("A"),
    "take_along_axis": _keys("arr"), "diag": _keys("v"), "unstack": _keys("x"), "extract": _keys("arr"),
    "pad": _keys("array"), "delete": _keys("arr"),
    # Splitting.
    **{n: _keys("ary") for n in ("split", "array_split", "hsplit", "vsplit", "dsplit")},
    # Several key arrays.
    **{n: _keys("arrays") for n in ("stack", "concatenate", "concat", "block")},
    **{n: _keys("arys") for n in ("atleast_1d", "atleast_2d", "atleast_3d")},
    **{n: _keys("tup") for n in ("hstack", "vstack", "dstack", "column_stack", "row_stack")},
    "broadcast_arrays": _keys("args"), "append": _keys("arr", "values"), "insert": _keys("arr", "values"),
    "where": _keys("x", "y"), "choose": _keys("choices"), "select": _keys("choicelist", "default"),
    # Comparisons of whole keys.
    **{n: _Rule("compare", ("x", "y")) for n in ("equal", "not_equal")},
    **{n: _Rule("compare", ("a1", "a2")) for n in ("array_equal", "array_equiv")},
    # Creation and conversion.
    **{n: _Rule("like") for n in ("zeros_like", "ones_like", "empty_like", "full_like")},
    **{n: _Rule("convert") for n in ("array", "asarray", "astype")},
    **{n: _Rule("filled") for n in ("zeros", "ones", "empty", "full")},
    "isin": _Rule("isin"),
}

LAX_RULES = {
    **{n: _keys("x") for n in ("broadcast", "broadcast_in_dim", "dynamic_slice", "reshape", "transpose", "rev",
                               "slice", "squeeze", "index_in_dim", "slice_in_dim", "broadcast_to_rank", "unstack",
                               "expand_dims")},
    **{n: _keys("operand") for n in ("dynamic_slice_in_dim", "dynamic_index_in_dim", "split", "collapse", "tile",
                                     "gather")},
    "dynamic_update_slice": _keys("x", "update"),
    **{n: _keys("operand", "update") for n in ("dynamic_update_slice_in_dim", "dynamic_update_index_in_dim")},
    "concatenate": _keys("operands"), "stack": _keys("operands"),
    "select": _keys("on_true", "on_false"), "select_n": _keys("cases"), "pad": _keys("x", "padding_value"),
    "index_take": _keys("src"), "scatter": _keys("operand", "updates"),
    "eq": _Rule("compare", ("x", "y")), "ne": _Rule("compare", ("x", "y")),
    "full_like": _Rule("like"),
    **{n: _Rule("convert") for n in ("convert_element_type", "bitcast_convert_type")},
}
