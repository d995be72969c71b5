"""Tests for fluxion.flax.serialization.

Oracles: real flax.serialization (state dicts must be equal, msgpack bytes identical, and
each side must read the other's bytes) and hand-written expected values.
"""

import collections
import pickle
from typing import NamedTuple

import ml_dtypes
import msgpack
import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion.flax import serialization as ser


def assert_tree_equal(got, want, path="."):
    """Exact structural and value equality; arrays must also agree in dtype and shape."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{path}: {type(got)} is not a dict"
        assert set(got) == set(want), f"{path}: keys {set(got)} != {set(want)}"
        for k in want:
            assert_tree_equal(got[k], want[k], f"{path}/{k}")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want), f"{path}: {type(got)} != {type(want)}"
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_tree_equal(g, w, f"{path}/{i}")
    elif isinstance(want, (np.ndarray, np.generic)) or hasattr(want, "__array__"):
        assert type(got) is type(want) or isinstance(got, np.ndarray), f"{path}: {type(got)} vs {type(want)}"
        got_a, want_a = np.asarray(got), np.asarray(want)
        assert got_a.dtype == want_a.dtype, f"{path}: {got_a.dtype} != {want_a.dtype}"
        assert got_a.shape == want_a.shape, f"{path}: {got_a.shape} != {want_a.shape}"
        np.testing.assert_array_equal(got_a, want_a, err_msg=path)
    else:
        assert type(got) is type(want) and got == want, f"{path}: {got!r} != {want!r}"


Point = collections.namedtuple("Point", ["x", "y"])


class Empty(NamedTuple):
    pass


class AdamLike(NamedTuple):
    count: np.ndarray
    mu: dict
    nu: dict


def sample_trees():
    w = {"kernel": np.ones((2, 3), np.float32), "bias": np.zeros(3, np.float32)}
    return {
        "nested": {"params": {"Dense_0": w, "Dense_1": {"kernel": np.eye(3)}}},
        "list-tuple": [1, (2.5, np.int8(3)), [np.arange(4)]],
        "empties": {"a": None, "b": [], "c": {}, "d": ()},
        "none": None,
        "scalar": 3.0,
        "namedtuple": Point(np.float32(1.0), None),
        "optimizer-state": (AdamLike(np.array(0, np.int32), w, w), Empty()),
        "int-keys": {1: np.ones(2), 2: "two"},
    }


@pytest.mark.parametrize("case", sorted(sample_trees()))
def test_to_state_dict_matches_flax(case):
    flax_ser = pytest.importorskip("flax.serialization")
    tree = sample_trees()[case]
    assert_tree_equal(ser.to_state_dict(tree), flax_ser.to_state_dict(tree))


def test_to_state_dict_layout_by_hand():
    state = ser.to_state_dict({"a": [10, (20, 30)], "n": Point(1, 2), "e": Empty()})
    assert state == {"a": {"0": 10, "1": {"0": 20, "1": 30}}, "n": {"x": 1, "y": 2}, "e": {}}


@pytest.mark.parametrize("case", sorted(sample_trees()))
def test_from_state_dict_roundtrip(case):
    tree = sample_trees()[case]
    assert_tree_equal(ser.from_state_dict(tree, ser.to_state_dict(tree)), tree)


def test_optax_adam_state_matches_flax():
    flax_ser = pytest.importorskip("flax.serialization")
    optax = pytest.importorskip("optax")
    params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}
    state = optax.adam(1e-3).init(params)
    ours, theirs = ser.to_state_dict(state), flax_ser.to_state_dict(state)
    assert_tree_equal(ours, theirs)
    assert set(ours) == {"0", "1"} and set(ours["0"]) == {"count", "mu", "nu"}
    restored = ser.from_state_dict(state, ours)
    assert type(restored) is tuple and type(restored[0]) is type(state[0])
    assert_tree_equal(ser.msgpack_restore(ser.to_bytes(state)), flax_ser.msgpack_restore(flax_ser.to_bytes(state)))


def test_partial_state_dict():
    flax_ser = pytest.importorskip("flax.serialization")
    jtu = pytest.importorskip("jax.tree_util")
    if not hasattr(tree_util, "Partial"):
        pytest.skip("fluxion.tree_util.Partial not available")

    def f(a, b, scale):
        return (a + b) * scale

    p = tree_util.Partial(f, np.float32(1.0), scale=np.float32(2.0))
    want = flax_ser.to_state_dict(jtu.Partial(f, np.float32(1.0), scale=np.float32(2.0)))
    state = ser.to_state_dict(p)
    assert_tree_equal(state, want)
    restored = ser.from_state_dict(p, {"args": {"0": np.float32(5.0)}, "keywords": {"scale": np.float32(3.0)}})
    assert float(restored(np.float32(1.0))) == 18.0


# --- from_state_dict errors name the path -------------------------------------------------


def test_missing_key_names_path():
    target = {"params": {"w": np.zeros(2), "b": np.zeros(1)}}
    with pytest.raises(ValueError, match=r"at path \./params; keys missing from the state dict: \['b'\]"):
        ser.from_state_dict(target, {"params": {"w": np.ones(2)}})


def test_extra_key_names_path():
    target = {"params": {"w": np.zeros(2)}}
    with pytest.raises(ValueError, match=r"at path \./params; keys not in the target: \['extra'\]"):
        ser.from_state_dict(target, {"params": {"w": np.ones(2), "extra": np.ones(1)}})


def test_shape_mismatch_names_path_and_shapes():
    target = {"layers": [{"kernel": np.zeros((3, 4))}]}
    state = {"layers": {"0": {"kernel": np.zeros((4, 3))}}}
    with pytest.raises(ValueError, match=r"path \./layers/0/kernel: the target has shape \(3, 4\), the state dict has shape \(4, 3\)"):
        ser.from_state_dict(target, state)


def test_list_length_mismatch():
    with pytest.raises(ValueError, match=r"list has 2 elements but the state dict has 3 at path \./xs"):
        ser.from_state_dict({"xs": [1, 2]}, {"xs": {"0": 1, "1": 2, "2": 3}})


def test_subtree_where_array_expected():
    with pytest.raises(ValueError, match=r"expected an array of shape \(2,\) at path \./w"):
        ser.from_state_dict({"w": np.zeros(2)}, {"w": {"0": 1}})


def test_non_dict_state_for_container():
    with pytest.raises(ValueError, match=r"expected a dict \(the state of a dict\) at path \./p, got ndarray"):
        ser.from_state_dict({"p": {"w": 1}}, {"p": np.zeros(2)})


def test_namedtuple_field_mismatch():
    with pytest.raises(ValueError, match=r"target Point at path \./pt; keys missing from the state dict: \['y'\]"):
        ser.from_state_dict({"pt": Point(1, 2)}, {"pt": {"x": 1}})


def test_leaf_without_shape_takes_state_value():
    # A None or Python-scalar template leaf carries no shape to check (as in Flax).
    got = ser.from_state_dict({"a": None, "b": 0}, {"a": np.ones(3), "b": 7})
    np.testing.assert_array_equal(got["a"], np.ones(3))
    assert got["b"] == 7


def test_path_stack_is_clean_after_error():
    with pytest.raises(ValueError):
        ser.from_state_dict({"a": {"b": np.zeros(1)}}, {"a": {}})
    assert ser.current_path() == ""


# --- registry -----------------------------------------------------------------------------


class Counter:
    def __init__(self, count, name):
        self.count, self.name = count, name


def test_register_custom_type():
    assert not ser.is_serializable(Counter)
    ser.register_serialization_state(
        Counter,
        lambda c: {"count": ser.to_state_dict(c.count)},
        lambda c, s: Counter(ser.from_state_dict(c.count, s["count"], name="count"), c.name),
    )
    try:
        assert ser.is_serializable(Counter(1, "a")) and ser.is_serializable(Counter)
        restored = ser.from_bytes(Counter(np.zeros(2), "kept"), ser.to_bytes(Counter(np.arange(2.0), "lost")))
        np.testing.assert_array_equal(restored.count, [0.0, 1.0])
        assert restored.name == "kept"
        with pytest.raises(ValueError, match="already registered"):
            ser.register_serialization_state(Counter, lambda c: {}, lambda c, s: c)
        ser.register_serialization_state(Counter, lambda c: {"n": c.name}, lambda c, s: c, override=True)
        assert ser.to_state_dict(Counter(1, "z")) == {"n": "z"}
    finally:
        ser._STATE_DICT_REGISTRY.pop(Counter, None)


def test_non_string_state_dict_key_rejected():
    class Bad:
        pass

    ser.register_serialization_state(Bad, lambda b: {1: 2}, lambda b, s: b)
    try:
        with pytest.raises(TypeError, match="non-string key 1"):
            ser.to_state_dict(Bad())
    finally:
        ser._STATE_DICT_REGISTRY.pop(Bad, None)


def test_colliding_dict_keys_rejected():
    with pytest.raises(ValueError, match="distinct string forms"):
        ser.to_state_dict({1: "a", "1": "b"})


# --- msgpack ------------------------------------------------------------------------------


def msgpack_cases():
    return {
        "float32": {"a": np.arange(6, dtype=np.float32).reshape(2, 3)},
        "many-dtypes": {
            str(dt): np.arange(5).astype(dt)
            for dt in [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.float16, np.float64, np.bool_]
        },
        "complex-array": {"c": np.array([1 + 2j, 3 - 4j], np.complex64)},
        "bfloat16": {"w": np.array([1.5, -2.25, 3.0], ml_dtypes.bfloat16)},
        "float8": {"w": np.array([0.5, 1.0], ml_dtypes.float8_e4m3fn)},
        "zero-d-and-empty": {"s": np.array(3.5), "e": np.zeros((0, 4), np.float32)},
        "np-scalars": {"f": np.float32(1.25), "i": np.int64(-7), "b": np.bool_(True), "c": np.complex128(1j)},
        "python": {"i": 3, "f": 2.5, "b": False, "n": None, "s": "text", "y": b"raw", "c": 1 + 2j},
        "lists": {"l": [1, np.ones(2), {"x": [None]}]},
        "int-keys": {1: np.ones(1), 2: {3: 4}},
        "top-level-array": np.arange(3),
    }


@pytest.mark.parametrize("case", sorted(msgpack_cases()))
def test_msgpack_bytes_identical_to_flax_and_cross_readable(case):
    flax_ser = pytest.importorskip("flax.serialization")
    tree = msgpack_cases()[case]
    ours = ser.msgpack_serialize(tree)
    assert ours == flax_ser.msgpack_serialize(tree)
    assert_tree_equal(flax_ser.msgpack_restore(ours), tree)
    assert_tree_equal(ser.msgpack_restore(ours), flax_ser.msgpack_restore(ours))


@pytest.mark.parametrize("case", sorted(msgpack_cases()))
def test_msgpack_roundtrip(case):
    tree = msgpack_cases()[case]
    restored = ser.msgpack_restore(ser.msgpack_serialize(tree))
    assert_tree_equal(restored, tree)


def test_restored_arrays_are_writeable_numpy():
    restored = ser.msgpack_restore(ser.msgpack_serialize({"a": np.ones(3)}))
    assert type(restored["a"]) is np.ndarray
    restored["a"][0] = 5.0  # owns its memory
    assert restored["a"][0] == 5.0


def test_fluxion_arrays_are_encoded_as_numpy():
    tree = {"w": jnp.ones((2, 3), dtype=jnp.float32), "i": jnp.arange(4, dtype=jnp.int32)}
    want = {"w": np.ones((2, 3), np.float32), "i": np.arange(4, dtype=np.int32)}
    assert ser.msgpack_serialize(tree) == ser.msgpack_serialize(want)
    restored = ser.from_bytes(tree, ser.to_bytes(tree))
    assert_tree_equal(restored, want)


def test_big_endian_arrays_keep_their_values():
    big = np.arange(4, dtype=">f4") * 1.5
    restored = ser.msgpack_restore(ser.msgpack_serialize({"a": big}))["a"]
    np.testing.assert_array_equal(restored, [0.0, 1.5, 3.0, 4.5])
    assert restored.dtype == np.float32


def test_key_order_like_flax():
    flax_ser = pytest.importorskip("flax.serialization")
    tree = {"b": 1, "a": {"d": 2, "c": 3}}
    # msgpack_serialize sorts keys (Flax's defensive copy does), to_bytes keeps them.
    assert list(ser.msgpack_restore(ser.msgpack_serialize(tree))) == ["a", "b"]
    assert list(ser.msgpack_restore(ser.to_bytes(tree))) == ["b", "a"]
    assert ser.to_bytes(tree) == flax_ser.to_bytes(tree)
    assert ser.msgpack_serialize(tree, in_place=True) == flax_ser.msgpack_serialize(dict(tree), in_place=True)


def test_to_bytes_and_from_bytes_by_hand():
    data = ser.to_bytes([np.int32(7)])
    # {'0': ext(3, [[], 'int32', <4 bytes>])}, checked against a hand-built encoding.
    record = msgpack.packb(((), "int32", np.int32(7).tobytes()), use_bin_type=True)
    assert data == msgpack.packb({"0": msgpack.ExtType(3, record)}, use_bin_type=True)
    assert ser.from_bytes([np.int32(0)], data) == [np.int32(7)]


def test_chunking_matches_flax(monkeypatch):
    flax_ser = pytest.importorskip("flax.serialization")
    monkeypatch.setattr(ser, "MAX_CHUNK_SIZE", 64)
    monkeypatch.setattr(flax_ser, "MAX_CHUNK_SIZE", 64)
    tree = {"big": np.arange(50, dtype=np.float32).reshape(5, 10), "small": np.ones(3, np.float32)}
    ours = ser.msgpack_serialize(tree)
    assert ours == flax_ser.msgpack_serialize(tree)
    raw = msgpack.unpackb(ours, strict_map_key=False)
    assert raw["big"]["__msgpack_chunked_array__"] is True and len(raw["big"]["chunks"]) == 4  # 200 bytes / 64
    assert_tree_equal(ser.msgpack_restore(ours), tree)


def test_tuple_rejected_with_path():
    with pytest.raises(TypeError, match=r"tuple at path \./a/0"):
        ser.msgpack_serialize({"a": [(1, 2)]})


class Opaque:
    """A plain object: pickle can store it, so only a pickle fallback would accept it."""


def test_unsupported_leaf_rejected_and_never_pickled():
    assert pickle.loads(pickle.dumps(Opaque())).__class__ is Opaque
    with pytest.raises(TypeError, match=r"cannot serialize 'Opaque' object at path \./x"):
        ser.to_bytes({"x": Opaque()})


def test_object_dtype_rejected():
    with pytest.raises(TypeError, match="object and structured dtypes"):
        ser.msgpack_serialize({"x": np.array([object()])})


@pytest.mark.parametrize(
    "blob, message",
    [
        (ser.msgpack_serialize({"a": np.ones(8)})[:-5], "not a valid encoded tree"),
        (ser.msgpack_serialize({"a": 1}) + b"\x01", "not a valid encoded tree"),
        (msgpack.packb({"a": msgpack.ExtType(9, b"x")}), "unknown msgpack extension type code 9"),
        (
            msgpack.packb({"a": msgpack.ExtType(1, msgpack.packb(((3,), "float32", b"\x00" * 8), use_bin_type=True))}),
            r"shape \(3,\) of float32 needs 12 bytes, the record has 8",
        ),
        (
            msgpack.packb({"a": msgpack.ExtType(1, msgpack.packb(((1,), "object", b"\x00" * 8), use_bin_type=True))}),
            "unsupported dtype name 'object'",
        ),
    ],
    ids=["truncated", "trailing", "unknown-ext", "short-array", "object-dtype"],
)
def test_msgpack_restore_rejects_corrupt_bytes(blob, message):
    with pytest.raises(ValueError, match=message):
        ser.msgpack_restore(blob)


# --- the same program's arrays, fluxion vs JAX ------------------------------------------------


def _computed_leaves(jnp_, lib, x64):
    """A tree whose leaves are arrays a program makes: literals, weak-typed scalars, results of arithmetic."""
    tree = {
        "f32": jnp_.array([0.1, 2.2, -3.3], jnp_.float32),
        "f32_scalar": jnp_.float32(0.1),
        "f32_zero_d": jnp_.asarray(0.1, jnp_.float32),
        "weak": jnp_.asarray(0.1) * 3,
        "mean": jnp_.mean(jnp_.array([0.1, 0.7, 0.3], jnp_.float32)),
        "sqrt": jnp_.sqrt(jnp_.float32(2.0)),
        "int": jnp_.arange(5),
        "int_scalar": jnp_.asarray(7),
        "bool": jnp_.array([True, False]),
        "bool_scalar": jnp_.asarray(True),
        "bf16": jnp_.array([0.1, 3.3, 1 + 2 ** -8 + 2 ** -30], jnp_.bfloat16),
        "bf16_scalar": jnp_.bfloat16(0.1),
        "bf16_div": jnp_.arange(4, dtype=jnp_.bfloat16) / 3,
        "f16": jnp_.float16(1.1),
        "jit": lib.jit(lambda v: v * 0.1 + 1)(jnp_.ones(3)),
        "transposed": jnp_.arange(6.0).reshape(2, 3).T,
        "nested": {"z": [jnp_.ones((2, 2)), 1.5, 3, None], "a": {"b": jnp_.zeros(())}},
        "python": 0.1,
    }
    if x64:
        tree.update(f64=jnp_.array([0.1, 1 / 3]), f64_scalar=jnp_.float64(0.1), weak64=jnp_.asarray(0.1) * 3,
                    i64=jnp_.arange(3, dtype=jnp_.int64))
    return tree


@pytest.mark.parametrize("x64", [False, True])
def test_to_bytes_of_computed_arrays_identical_to_flax(x64):
    """Every float leaf, scalar or array, is the same ext record (code, shape, dtype name, little-endian bytes)."""
    flax_ser = pytest.importorskip("flax.serialization")
    jax = pytest.importorskip("jax")
    import fluxion

    old = (fluxion.config.jax_enable_x64, jax.config.jax_enable_x64)
    fluxion.config.update("jax_enable_x64", x64)
    jax.config.update("jax_enable_x64", x64)
    try:
        ours = _computed_leaves(jnp, fluxion, x64)
        theirs = _computed_leaves(jax.numpy, jax, x64)
        for name in theirs:
            assert ser.to_bytes({name: ours[name]}) == flax_ser.to_bytes({name: theirs[name]}), name
        assert ser.to_bytes(ours) == flax_ser.to_bytes(theirs)
        assert ser.msgpack_serialize(ser.to_state_dict(ours)) == flax_ser.msgpack_serialize(
            flax_ser.to_state_dict(theirs))
    finally:
        fluxion.config.update("jax_enable_x64", old[0])
        jax.config.update("jax_enable_x64", old[1])


def test_nesting_depth_is_bounded_on_both_sides():
    too_deep = b"\x91" * (ser.MAX_DEPTH + 1) + b"\x01"  # [[[...1...]]]
    with pytest.raises(ValueError, match=rf"nests containers deeper than {ser.MAX_DEPTH} levels, the limit when "
                                         "decoding"):
        ser.msgpack_restore(too_deep)
    with pytest.raises(ValueError, match="deeper than"):
        ser.msgpack_restore(b"\x91" * 100_000 + b"\x01")  # past msgpack's own stack limit
    ok = b"\x91" * ser.MAX_DEPTH + b"\x01"
    restored = ser.msgpack_restore(ok)
    for _ in range(ser.MAX_DEPTH):
        (restored,) = restored
    assert restored == 1
    tree = 1
    for _ in range(ser.MAX_DEPTH + 1):
        tree = {"k": tree}
    with pytest.raises(ValueError, match=rf"deeper than {ser.MAX_DEPTH} levels, the limit of msgpack_restore"):
        ser.msgpack_serialize(tree)
