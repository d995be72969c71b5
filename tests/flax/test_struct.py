"""Tests for fluxion.flax.struct.

Oracles: real flax.struct under real JAX (same leaves, key paths and state dicts) and
hand-computed values.
"""

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion.flax import serialization, struct


@struct.dataclass
class Model:
    params: Any
    apply_fn: Callable = struct.field(pytree_node=False)
    scale: float = 1.0


class TrainState(struct.PyTreeNode):
    step: int
    params: Any
    opt_state: Any
    tx_name: str = struct.field(pytree_node=False, default="adam")


def make_state():
    params = {"w": np.arange(6.0, dtype=np.float32).reshape(2, 3), "b": np.zeros(3, np.float32)}
    opt_state = ({"mu": {"w": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float32)}}, ())
    return TrainState(step=np.int32(3), params=params, opt_state=opt_state)


def test_frozen_and_replace():
    m = Model(params={"w": 1.0}, apply_fn=abs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.params = {}
    m2 = m.replace(scale=2.0)
    assert (m.scale, m2.scale) == (1.0, 2.0)
    assert m2.params is m.params and m2.apply_fn is abs


def test_leaves_exclude_static_fields_in_declaration_order():
    m = Model(params={"b": 2.0, "a": 1.0}, apply_fn=abs, scale=3.0)
    # params (dict, sorted keys) then scale; apply_fn is static.
    assert tree_util.tree_leaves(m) == [1.0, 2.0, 3.0]


def test_static_fields_live_in_treedef():
    a = Model(params=1.0, apply_fn=abs)
    b = Model(params=2.0, apply_fn=abs)
    c = Model(params=1.0, apply_fn=round)
    assert tree_util.tree_structure(a) == tree_util.tree_structure(b)
    assert tree_util.tree_structure(a) != tree_util.tree_structure(c)
    mapped = tree_util.tree_map(lambda x: x * 10, c)
    assert type(mapped) is Model and mapped.apply_fn is round
    assert (mapped.params, mapped.scale) == (10.0, 10.0)


def test_unflatten_roundtrip():
    s = make_state()
    leaves, treedef = tree_util.tree_flatten(s)
    rebuilt = tree_util.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is TrainState and rebuilt.tx_name == "adam"
    np.testing.assert_array_equal(rebuilt.params["w"], s.params["w"])


def test_matches_flax_struct_leaves_and_paths():
    jax = pytest.importorskip("jax")
    flax_struct = pytest.importorskip("flax.struct")

    class FlaxTrainState(flax_struct.PyTreeNode):
        step: int
        params: Any
        opt_state: Any
        tx_name: str = flax_struct.field(pytree_node=False, default="adam")

    ours = make_state()
    theirs = FlaxTrainState(step=ours.step, params=ours.params, opt_state=ours.opt_state)
    our_leaves = tree_util.tree_leaves(ours)
    their_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(our_leaves) == len(their_leaves)
    for a, b in zip(our_leaves, their_leaves):
        np.testing.assert_array_equal(a, b)
    if hasattr(tree_util, "tree_flatten_with_path") and hasattr(tree_util, "keystr"):
        our_paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(ours)[0]]
        their_paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(theirs)[0]]
        assert our_paths == their_paths
        assert our_paths[0] == ".step" and ".params['b']" in our_paths


def test_grad_through_struct():
    m = Model(params={"w": jnp.array([1.0, 2.0, 3.0])}, apply_fn=abs, scale=2.0)

    def loss(model):
        return model.scale * jnp.sum(model.params["w"] ** 2)

    g = fluxion.grad(loss)(m)
    assert type(g) is Model and g.apply_fn is abs
    np.testing.assert_allclose(np.asarray(g.params["w"]), [4.0, 8.0, 12.0])  # 2 * scale * w
    np.testing.assert_allclose(float(g.scale), 14.0)  # sum(w**2)


def test_jit_returns_struct_with_static_field():
    m = Model(params={"w": jnp.array([1.0, -2.0])}, apply_fn=abs, scale=3.0)

    @fluxion.jit
    def step(model):
        return model.replace(params={"w": model.params["w"] * model.scale})

    out = step(m)
    assert type(out) is Model and out.apply_fn is abs
    np.testing.assert_allclose(np.asarray(out.params["w"]), [3.0, -6.0])


def test_pytreenode_kwargs_and_inheritance():
    class Base(struct.PyTreeNode):
        a: int

    class Child(Base, kw_only=True):
        b: int = struct.field(pytree_node=False, default=5)

    c = Child(1)
    with pytest.raises(TypeError):
        Child(1, 2)  # b is keyword-only
    assert tree_util.tree_leaves(c) == [1]
    assert c.replace(b=7).b == 7
    assert serialization.to_state_dict(c) == {"a": 1}


def test_decorating_twice_is_harmless():
    assert struct.dataclass(Model) is Model


def test_decorator_with_arguments():
    @struct.dataclass(frozen=False)
    class Mutable:
        x: int

    m = Mutable(1)
    m.x = 2
    assert tree_util.tree_leaves(m) == [2]


def test_field_metadata_merges():
    f = struct.field(pytree_node=False, metadata={"doc": "d"}, default=0)
    assert dict(f.metadata) == {"doc": "d", "pytree_node": False}
    assert f.default == 0


def test_init_false_field_survives_tree_map():
    @struct.dataclass
    class WithDerived:
        x: Any
        double: Any = struct.field(init=False, default=None)

        def __post_init__(self):
            object.__setattr__(self, "double", None if self.x is None else self.x * 2)

    w = WithDerived(3.0)
    assert tree_util.tree_leaves(w) == [3.0, 6.0]
    mapped = tree_util.tree_map(lambda v: v + 1, w)
    assert (mapped.x, mapped.double) == (4.0, 7.0)  # leaves mapped, not recomputed


# --- serialization of struct dataclasses --------------------------------------------------


def test_state_dict_has_pytree_fields_only():
    state = serialization.to_state_dict(make_state())
    assert set(state) == {"step", "params", "opt_state"}
    assert set(state["opt_state"]) == {"0", "1"} and state["opt_state"]["1"] == {}


def test_state_dict_matches_flax():
    flax_struct = pytest.importorskip("flax.struct")
    flax_ser = pytest.importorskip("flax.serialization")

    @flax_struct.dataclass
    class FlaxModel:
        params: Any
        apply_fn: Callable = flax_struct.field(pytree_node=False)
        scale: float = 1.0

    params = {"w": np.ones((2, 2), np.float32)}
    ours = serialization.to_bytes(Model(params, abs, 2.0))
    assert ours == flax_ser.to_bytes(FlaxModel(params, abs, 2.0))


def test_restore_struct():
    target = make_state()
    state = serialization.to_state_dict(target)
    state["params"]["w"] = np.full((2, 3), 7.0, np.float32)
    restored = serialization.from_state_dict(target.replace(tx_name="sgd"), state)
    assert type(restored) is TrainState and restored.tx_name == "sgd"
    np.testing.assert_array_equal(restored.params["w"], np.full((2, 3), 7.0))


def test_restore_struct_missing_and_unknown_fields():
    target = {"state": make_state()}
    state = serialization.to_state_dict(target)
    del state["state"]["step"]
    with pytest.raises(ValueError, match=r"missing field\(s\) \['step'\] in the state dict of a TrainState at path \./state"):
        serialization.from_state_dict(target, state)
    state = serialization.to_state_dict(target)
    state["state"]["extra"] = 1
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['extra'\] .* TrainState at path \./state"):
        serialization.from_state_dict(target, state)


def test_restore_struct_shape_mismatch_path():
    target = make_state()
    state = serialization.to_state_dict(target)
    state["params"]["b"] = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"path \./params/b: the target has shape \(3,\), the state dict has shape \(4,\)"):
        serialization.from_state_dict(target, state)
