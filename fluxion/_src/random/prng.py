"""PRNG keys: seeding, splitting, folding in data, and drawing raw random bits (Threefry-2x32).

A key is 64 bits of data, stored as uint32[2]. Two representations are accepted everywhere, as in JAX:

* raw ("legacy") keys: a uint32 array whose last dimension is 2 (`PRNGKey(seed)`);
* typed keys: `PRNGKeyArray`, returned by `key(seed)`, whose shape excludes the key data dimension and whose
  dtype prints as `key<fry>`. To `fluxion.tree_util` it is a leaf, as in JAX; fluxion's transformations flatten
  it to its uint32 data, so jit and vmap see plain arrays (vmap over a batch of typed keys maps the data's
  leading axis). The `fluxion.numpy` and `fluxion.lax` functions that rearrange, select or compare whole keys
  (reshape, stack, where, take, lax.dynamic_slice, equal, ...) accept them, as JAX's do; see
  `fluxion/_src/numpy/key_arrays.py`.

Functions that return keys return the representation they were given.

Two counter layouts exist, selected by `fluxion.config.jax_threefry_partitionable` (JAX's flag and default):

* partitionable (True): the i-th of n outputs is the cipher of the 64-bit counter i, split into (high word,
  low word); `split` stacks both output words, `random_bits` (32-bit) xors them.
* original (False): the counters 0..m-1 are laid out as one flat uint32 array and hashed in two halves
  (`threefry_2x32`), the layout of JAX releases before 0.5.

Both layouts reproduce JAX's streams bit for bit (facts taken from JAX's documented behaviour and checked against
it; the cipher is Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3").
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import core, dtypes
from ..config import config
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from ..tree_util import register_opaque_leaf, register_pytree_node
from .threefry import key_words, threefry2x32, threefry_2x32

_UINT32 = np.dtype(np.uint32)
_UINT_BY_WIDTH = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
IMPL_NAME = "threefry2x32"


# --------------------------------------------------------------------------------------------------------------
# Key dtype and typed key arrays
# --------------------------------------------------------------------------------------------------------------

class extended(np.generic):  # noqa: N801  (mirrors jax.dtypes.extended)
    """Scalar type of all non-NumPy dtypes (`issubdtype(key.dtype, extended)` is True)."""


class prng_key(extended):  # noqa: N801  (mirrors jax.dtypes.prng_key)
    """Scalar type of PRNG key dtypes (`issubdtype(key.dtype, prng_key)` is True)."""


class KeyDType:
    """The dtype of typed key arrays: prints as `key<fry>` (the Threefry-2x32 implementation).

    Attributes:
      name: "key<fry>".
      type: `prng_key`, so `issubdtype(key.dtype, prng_key)` holds.
      impl_name: "threefry2x32".
      key_shape: (2,), the shape of one key's data.
      itemsize: 8 bytes of key data per key.
    """

    __slots__ = ()
    name = "key<fry>"
    type = prng_key
    impl_name = IMPL_NAME
    key_shape = (2,)
    itemsize = 8
    kind = "V"

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType)

    def __hash__(self) -> int:
        return hash(KeyDType)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


KEY_DTYPE = KeyDType()


class PRNGKeyArray:
    """An array of PRNG keys (`random.key(seed)`, or `split` of one): shape excludes the key data dimension.

    Attributes:
      shape: the batch shape of the keys (`()` for a single key).
      dtype: `key<fry>`.

    Methods, as JAX's key arrays: indexing, `reshape`, `ravel`/`flatten`, `T`, `squeeze`, `swapaxes`,
    `transpose`, `take`, `at[idx].get()` and `at[idx].set(keys)`, `==` and `!=` (whole keys).
    """

    __slots__ = ("_base",)
    __array_priority__ = 100

    def __init__(self, base: Any):
        self._base = base

    # Array-like metadata.
    @property
    def shape(self) -> tuple:
        return tuple(core.get_aval(self._base).shape[:-1])

    @property
    def dtype(self) -> KeyDType:
        return KEY_DTYPE

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return KEY_DTYPE.itemsize

    @property
    def T(self) -> "PRNGKeyArray":  # noqa: N802
        nd = self.ndim
        return PRNGKeyArray(st.transpose(self._base, tuple(reversed(range(nd))) + (nd,)))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a single PRNG key)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a single PRNG key (a 0-d key array)")
        return (PRNGKeyArray(st.index_in_dim(self._base, i, 0, keepdims=False)) for i in range(self.shape[0]))

    def __getitem__(self, idx) -> "PRNGKeyArray":
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(i is Ellipsis for i in idx):
            # The key data dimension must survive an ellipsis, so index it explicitly.
            idx = idx + (slice(None),)
        if all(isinstance(i, (int, np.integer)) or (isinstance(i, slice) and i.step in (None, 1)) for i in idx) \
                and len(idx) <= self.ndim:
            return PRNGKeyArray(_basic_index(self._base, idx))
        return PRNGKeyArray(self._base[idx])

    def reshape(self, *shape) -> "PRNGKeyArray":
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple(self.size // max(known, 1) if s == -1 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape a key array of shape {self.shape} into shape {shape}")
        return PRNGKeyArray(st.reshape(self._base, shape + (2,)))

    def ravel(self) -> "PRNGKeyArray":
        return self.reshape((self.size,))

    flatten = ravel

    def copy(self) -> "PRNGKeyArray":
        return self

    # The other array methods JAX's key arrays have, applied to whole keys (see numpy/key_arrays.py).
    def squeeze(self, axis=None) -> "PRNGKeyArray":
        from ..numpy import key_arrays, shape
        return key_arrays.apply_to_keys(shape.squeeze, self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> "PRNGKeyArray":
        from ..numpy import key_arrays, shape
        return key_arrays.apply_to_keys(shape.swapaxes, self, axis1, axis2)

    def transpose(self, *axes) -> "PRNGKeyArray":
        from ..numpy import key_arrays, shape
        axes = axes[0] if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))) else axes
        return key_arrays.apply_to_keys(shape.transpose, self, axes or None)

    def take(self, indices, axis=None, mode=None, **kwargs) -> "PRNGKeyArray":
        from ..numpy import indexing, key_arrays
        return key_arrays.apply_to_keys(indexing.take, self, indices, axis=axis, mode=mode, **kwargs)

    @property
    def at(self):
        from ..numpy import key_arrays
        return key_arrays.KeyIndexUpdateHelper(self)

    def block_until_ready(self) -> "PRNGKeyArray":
        return self

    def __array__(self, dtype=None, copy=None):
        raise TypeError("PRNG key arrays cannot be converted to NumPy arrays; use random.key_data(keys) to get "
                        "their uint32 data")

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        from ..lax.reductions import reduce_and
        same = ew.eq(self._base, other._base)
        return reduce_and(same, (core.get_aval(same).ndim - 1,))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else ew.bitwise_not(eq)

    __hash__ = None

    def __repr__(self) -> str:
        base = self._base
        if isinstance(base, Tracer):
            return f"Traced<key<fry>[{','.join(map(str, self.shape))}]>"
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{np.asarray(base)}"

    __str__ = __repr__


def _basic_index(x, idx: tuple):
    """Indexes leading dimensions of `x` by ints and slices, with lax slicing only (works on tracers)."""
    axis = 0
    for i in idx:
        if isinstance(i, slice):
            size = core.get_aval(x).shape[axis]
            start, stop, step = i.indices(size)
            if step != 1:
                raise IndexError("key arrays support only unit-stride slices")
            x = st.slice_in_dim(x, start, max(start, stop), 1, axis)
            axis += 1
        else:
            size = core.get_aval(x).shape[axis]
            j = operator.index(i)
            if not -size <= j < size:
                raise IndexError(f"index {j} is out of bounds for axis {axis} of a key array with size {size}")
            x = st.index_in_dim(x, j % size, axis, keepdims=False)
    return x


register_pytree_node(PRNGKeyArray, lambda k: ((k._base,), None), lambda _, children: PRNGKeyArray(children[0]))
# Users' pytree functions see a key array as one leaf, as in JAX; transformations see its uint32 data.
register_opaque_leaf(PRNGKeyArray)


def is_typed_key(x: Any) -> bool:
    return isinstance(x, PRNGKeyArray)


# --------------------------------------------------------------------------------------------------------------
# Argument checking
# --------------------------------------------------------------------------------------------------------------

def check_key(name: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool]:
    """Returns (uint32[..., 2] key data, whether `key` was a typed key array).

    Raises:
      TypeError: `key` is neither a typed key nor uint32 key data.
      ValueError: a key batch was given where one key is expected.
    """
    if isinstance(key, PRNGKeyArray):
        data, typed = key._base, True
    else:
        if not isinstance(key, (Array, Tracer, np.ndarray, list, tuple)):
            raise TypeError(f"{name}: unexpected PRNG key type {type(key).__name__}; expected a key from "
                            "random.key(seed) or random.PRNGKey(seed)")
        data = key if isinstance(key, (Array, Tracer)) else core.to_array(np.asarray(key))
        aval = core.get_aval(data)
        if aval.dtype != _UINT32:
            raise TypeError(f"{name}: invalid PRNG key data: expected dtype uint32, got {aval.dtype.name} "
                            f"(shape {aval.shape}); create keys with random.PRNGKey(seed) or random.key(seed)")
        if not aval.shape or aval.shape[-1] != 2:
            raise TypeError(f"{name}: invalid PRNG key data: expected a shape ending in (2,), got {aval.shape}")
        typed = False
    batch_shape = core.get_aval(data).shape[:-1]
    if batch_shape and not allow_batched:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape {batch_shape} != (). "
                         "Use vmap for batching.")
    return data, typed


def wrap_if(typed: bool, data: Any) -> Any:
    return PRNGKeyArray(data) if typed else data


def canonical_shape(name: str, shape: Any) -> tuple:
    """Checks a sample shape: a sequence of non-negative Python/NumPy integers.

    Raises:
      TypeError: `shape` is not a sequence of integers (e.g. a bare int or a traced value).
      ValueError: a dimension is negative.
    """
    if isinstance(shape, np.ndarray) and shape.ndim == 1:
        shape = shape.tolist()
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{name}: shape must be a tuple of integers, got {shape!r}; write (n,) for a 1-d shape")
    out = []
    for d in shape:
        try:
            d = operator.index(d)
        except TypeError:
            raise TypeError(f"{name}: shape entries must be concrete integers, got {d!r} in shape {shape!r}") \
                from None
        if d < 0:
            raise ValueError(f"{name}: shape dimensions must be non-negative, got {tuple(shape)}")
        out.append(d)
    return tuple(out)


# --------------------------------------------------------------------------------------------------------------
# Seeding
# --------------------------------------------------------------------------------------------------------------

def _seed_data(name: str, seed: Any):
    """uint32[2] key data for an integer seed: (high 32 bits, low 32 bits) of the seed."""
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
    if isinstance(seed, bool) or (isinstance(seed, int) and not isinstance(seed, np.integer)):
        # A Python int is taken as int64 first (as JAX does), then canonicalized: without x64 only its low
        # 32 bits survive.
        try:
            seed = np.int64(seed)
        except OverflowError:
            raise OverflowError(f"{name}: seed {seed} does not fit in 64 bits") from None
        seed = core.to_array(seed)
    elif not isinstance(seed, (Array, Tracer)):
        arr = np.asarray(seed)
        if arr.dtype.kind not in "iub":
            raise TypeError(f"{name}: the seed must be an integer, got {arr.dtype.name} value {seed!r}")
        seed = core.to_array(arr)
    aval = core.get_aval(seed)
    if aval.shape:
        raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape {aval.shape} != (). "
                        "Use vmap for batching")
    if not (dtypes.is_integer(aval.dtype) or aval.dtype == dtypes.bool_):
        raise TypeError(f"{name}: the seed must be an integer, got dtype {aval.dtype.name}")
    if aval.dtype == dtypes.bool_:
        seed = ew.convert_element_type(seed, np.int32)
        aval = core.get_aval(seed)
    if aval.dtype.itemsize == 8:
        hi = ew.convert_element_type(ew.shift_right_logical(seed, core.Array(np.asarray(32, aval.dtype))),
                                     _UINT32)
    else:
        hi = st.full((), 0, _UINT32)
    lo = ew.convert_element_type(seed, _UINT32)  # integer conversion keeps the low 32 bits
    return st.concatenate([st.reshape(hi, (1,)), st.reshape(lo, (1,))], 0)


def _check_impl(impl: Any) -> None:
    if impl is None:
        return
    name = getattr(impl, "impl_name", impl)
    if name not in (IMPL_NAME, "fry", "key<fry>"):
        raise ValueError(f'unrecognized PRNG implementation "{impl}". fluxion implements only "{IMPL_NAME}".')


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802  (JAX's name)
    """A raw (legacy) PRNG key: uint32[2] data (high and low 32 bits of `seed`).

    Args:
      seed: a scalar integer (Python int, NumPy or fluxion integer scalar; may be traced).
      impl: optional implementation name; only "threefry2x32" exists.

    Returns:
      uint32[2] Array.

    Raises:
      TypeError: `seed` is not a scalar integer.
    """
    _check_impl(impl)
    return _seed_data("PRNGKey", seed)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed PRNG key (shape `()`, dtype `key<fry>`) for an integer seed.

    Args:
      seed: a scalar integer.
      impl, dtype: optional implementation specification; only Threefry-2x32 exists.

    Returns:
      A `PRNGKeyArray` of shape ().

    Raises:
      TypeError: `seed` is not a scalar integer.
      ValueError: both `impl` and `dtype` are given, or an unknown implementation.
    """
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.key")
    _check_impl(impl if impl is not None else dtype)
    return PRNGKeyArray(_seed_data("key", seed))


# --------------------------------------------------------------------------------------------------------------
# Counters
# --------------------------------------------------------------------------------------------------------------

def _partitionable() -> bool:
    return bool(config.jax_threefry_partitionable)


def _iota_2x32(shape: tuple) -> tuple:
    """(high, low) uint32 words of the row-major 64-bit index of each position of `shape` (high: a scalar 0)."""
    n = math.prod(shape)
    if n >= 2 ** 32:
        raise NotImplementedError(f"random draws of {n} >= 2**32 values are not supported")
    lo = st.reshape(st.iota(_UINT32, n), shape)
    # The high words are all zero; the cipher broadcasts a scalar operand.
    return st.full((), 0, _UINT32), lo


def _hash_counters(data, shape: tuple) -> tuple:
    """The two cipher output words for the 64-bit counters 0..n-1 laid out in `shape` (partitionable mode)."""
    hi, lo = _iota_2x32(shape)
    k1, k2 = key_words(data)
    return threefry2x32(k1, k2, hi, lo)


# --------------------------------------------------------------------------------------------------------------
# split / fold_in / random_bits on raw key data (uint32[2])
# --------------------------------------------------------------------------------------------------------------

def split_data(data, shape: tuple):
    """uint32[*shape, 2]: new keys derived from one key's data."""
    if _partitionable():
        y1, y2 = _hash_counters(data, shape)
        return st.concatenate([st.expand_dims(y1, (len(shape),)), st.expand_dims(y2, (len(shape),))], len(shape))
    n = math.prod(shape)
    bits = threefry_2x32(data, st.iota(_UINT32, 2 * n))
    return st.reshape(bits, shape + (2,))


def fold_in_data(data, value):
    """uint32[2]: the key `data` with the uint32 scalar `value` folded in (same in both modes)."""
    counts = st.concatenate([st.full((1,), 0, _UINT32), st.reshape(value, (1,))], 0)
    return threefry_2x32(data, counts)


def random_bits(data, bit_width: int, shape: tuple):
    """Uniform random unsigned integers of `bit_width` (8, 16, 32 or 64) bits and `shape` from one key's data."""
    out_dtype = _UINT_BY_WIDTH[bit_width]
    if _partitionable():
        y1, y2 = _hash_counters(data, shape)
        if bit_width == 64:
            hi = ew.convert_element_type(y1, out_dtype)
            lo = ew.convert_element_type(y2, out_dtype)
            return ew.bitwise_or(ew.shift_left(hi, core.Array(np.asarray(32, out_dtype))), lo)
        bits = ew.bitwise_xor(y1, y2)
        return bits if bit_width == 32 else ew.convert_element_type(bits, out_dtype)
    return _random_bits_original(data, bit_width, shape)


def _random_bits_original(data, bit_width: int, shape: tuple):
    size = math.prod(shape)
    words = -(-bit_width * size // 32)  # ceil: 32-bit words needed
    if words >= 2 ** 32 - 1:
        raise NotImplementedError(f"random draws of {size} values of {bit_width} bits are not supported")
    bits = threefry_2x32(data, st.iota(_UINT32, words))
    out_dtype = _UINT_BY_WIDTH[bit_width]
    if bit_width == 64:
        half = words // 2
        hi = ew.convert_element_type(st.slice(bits, (0,), (half,)), out_dtype)
        lo = ew.convert_element_type(st.slice(bits, (half,), (words,)), out_dtype)
        bits = ew.bitwise_or(ew.shift_left(hi, core.Array(np.asarray(32, out_dtype))), lo)
    elif bit_width in (8, 16):
        # Each 32-bit word supplies 32 // bit_width values, least significant bits first (a little-endian view).
        per_word = 32 // bit_width
        wide = st.broadcast_in_dim(bits, (words, per_word), (0,))
        shifts = ew.mul(st.broadcasted_iota(_UINT32, (words, per_word), 1),
                        core.Array(np.asarray(bit_width, _UINT32)))
        parts = ew.bitwise_and(ew.shift_right_logical(wide, shifts),
                               core.Array(np.asarray((1 << bit_width) - 1, _UINT32)))
        parts = st.slice(st.reshape(parts, (words * per_word,)), (0,), (size,))
        bits = ew.convert_element_type(parts, out_dtype)
    return st.reshape(bits, shape)


# --------------------------------------------------------------------------------------------------------------
# Public key operations
# --------------------------------------------------------------------------------------------------------------

def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """Splits a key into `num` new keys (or an array of keys of shape `num`).

    Args:
      key: a single key (typed, or uint32[2] data).
      num: a non-negative int, or a tuple of ints giving the shape of the new key array. Default 2.

    Returns:
      Keys of shape `(num,)` (or `num`): uint32[..., 2] data for raw keys, a `PRNGKeyArray` for typed ones.

    Raises:
      ValueError: `key` is a batch of keys (use vmap), or `num` is negative.
    """
    data, typed = check_key("split", key)
    shape = canonical_shape("split", tuple(num) if isinstance(num, (tuple, list)) else (num,))
    return wrap_if(typed, split_data(data, shape))


def fold_in(key: Any, data: Any) -> Any:
    """Folds a 32-bit integer into a key, giving a new key.

    Args:
      key: a single key (typed, or uint32[2] data).
      data: a scalar integer (converted to uint32; may be traced).

    Returns:
      A new key of the same representation as `key`.

    Raises:
      TypeError: `data` is not a scalar.
      OverflowError: a Python int outside the uint32 range.
    """
    kdata, typed = check_key("fold_in", key)
    if isinstance(data, (bool, int)) and not isinstance(data, np.integer):
        if not 0 <= int(data) < 2 ** 32:
            raise OverflowError(f"fold_in: Python int {data} is out of the uint32 range [0, 2**32)")
        value = core.Array(np.asarray(data, _UINT32))
    else:
        value = data if isinstance(data, (Array, Tracer)) else core.to_array(np.asarray(data))
        if core.get_aval(value).shape:
            raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                            f"{core.get_aval(value).shape} != (). Use vmap for batching.")
        value = ew.convert_element_type(value, _UINT32)
    return wrap_if(typed, fold_in_data(kdata, value))


def key_data(keys: Any) -> Any:
    """The uint32[..., 2] data of a key array (raw key data is returned unchanged)."""
    data, _ = check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """Wraps uint32[..., 2] key data as a typed key array of shape `key_bits_array.shape[:-1]`.

    Raises:
      TypeError: the data is not uint32 with a trailing dimension of 2.
    """
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.wrap_key_data")
    _check_impl(impl if impl is not None else dtype)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data: the argument is already a typed key array")
    data, _ = check_key("wrap_key_data", key_bits_array, allow_batched=True)
    return PRNGKeyArray(data)


def key_impl(keys: Any) -> str:
    """The name of the PRNG implementation of `keys` ("threefry2x32")."""
    check_key("key_impl", keys, allow_batched=True)
    return IMPL_NAME


def clone(key: Any) -> Any:
    """Returns `key` (keys are immutable values; exists for API compatibility)."""
    return key


def bits_for(key: Any, name: str, bit_width: int, shape: tuple):
    """Checks a single key and draws raw bits (the entry point of every sampler)."""
    data, _ = check_key(name, key)
    return random_bits(data, bit_width, shape)
