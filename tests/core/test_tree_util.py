"""Tests of pytrees (`fluxion.tree_util`): flattening, structure printing, registration, key paths, tree_map.

Oracles: hand-written expected leaves, treedef reprs and key paths (JAX's formats), and real `jax.tree_util` on
the same trees where JAX is installed.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest

import fluxion
import fluxion as jax
import fluxion.numpy as jnp
from fluxion import tree_util


class Point(NamedTuple):
    x: Any
    y: Any


def _example_trees():
    return [
        1,
        None,
        (),
        [],
        {},
        (1,),
        [1, 2.0, "leaf-string"],
        {"b": 1, "a": (2, 3), "c": [4, {"d": 5}]},
        [{"a": 1, "b": 2}],
        Point(1, (2, 3)),
        collections.OrderedDict([("z", 1), ("a", 2)]),
        [None, 1, (None, 2)],
        {"params": {"w": np.ones((2, 3)), "b": np.zeros(3)}, "step": 0},
        collections.defaultdict(list, {"k": [1, 2]}),
    ]


@pytest.mark.parametrize("tree", _example_trees(), ids=lambda t: type(t).__name__)
def test_flatten_unflatten_round_trip(tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    rebuilt = tree_util.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is type(tree)
    assert tree_util.tree_structure(rebuilt) == treedef
    assert [id(x) for x in tree_util.tree_leaves(rebuilt)] == [id(x) for x in leaves]
    assert treedef.num_leaves == len(leaves)


@pytest.mark.parametrize("tree", _example_trees(), ids=lambda t: type(t).__name__)
def test_leaves_and_repr_match_real_jax(tree):
    real = pytest.importorskip("jax")
    ours_leaves, ours_def = tree_util.tree_flatten(tree)
    theirs_leaves, theirs_def = real.tree_util.tree_flatten(tree)
    assert [id(x) for x in ours_leaves] == [id(x) for x in theirs_leaves]
    assert repr(ours_def) == repr(theirs_def)
    ours_paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(tree)[0]]
    theirs_paths = [real.tree_util.keystr(p) for p, _ in real.tree_util.tree_flatten_with_path(tree)[0]]
    assert ours_paths == theirs_paths


def test_treedef_reprs():
    assert repr(tree_util.tree_structure([{"a": 1, "b": 2}])) == "PyTreeDef([{'a': *, 'b': *}])"
    assert repr(tree_util.tree_structure((1, (2, 3)))) == "PyTreeDef((*, (*, *)))"
    assert repr(tree_util.tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tree_util.tree_structure(None)) == "PyTreeDef(None)"
    assert repr(tree_util.tree_structure([None, 1])) == "PyTreeDef([None, *])"
    assert repr(tree_util.tree_structure(Point(1, 2))) == "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    assert repr(tree_util.tree_structure(od)) == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"


def test_dict_keys_sorted_ordered_dict_keeps_order():
    assert tree_util.tree_leaves({"b": 1, "a": 2, "c": 3}) == [2, 1, 3]
    assert tree_util.tree_leaves(collections.OrderedDict([("b", 1), ("a", 2)])) == [1, 2]


def test_none_is_an_empty_subtree():
    assert tree_util.tree_leaves([1, None, 2]) == [1, 2]
    assert tree_util.tree_leaves({"a": None}) == []
    assert tree_util.tree_map(lambda x: x * 2, {"a": 1, "b": (2, None)}) == {"a": 2, "b": (4, None)}


def test_tree_map_several_trees_and_is_leaf():
    assert tree_util.tree_map(lambda a, b, c: a + b * c, [1, (2, 3)], [4, (5, 6)], [7, (8, 9)]) == [29, (42, 57)]
    out = tree_util.tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), 5], is_leaf=lambda x: isinstance(x, tuple))
    assert out == [(1, (3, 4)), (2, 5)]
    # is_leaf stops descent: the pairs stay whole.
    pairs = {"a": (1, 2), "b": (3, 4)}
    assert tree_util.tree_map(lambda p: p[0] * p[1], pairs, is_leaf=lambda x: isinstance(x, tuple)) == {"a": 2,
                                                                                                     "b": 12}
    assert jax.tree_map(lambda x: x + 1, (1, [2])) == (2, [3])
    assert jax.tree.map(lambda x: x + 1, (1, [2])) == (2, [3])


def test_tree_map_over_namedtuple_keeps_type():
    out = tree_util.tree_map(lambda v: v * 10, Point(1, (2, 3)))
    assert isinstance(out, Point) and out == Point(10, (20, 30))


def test_tree_map_structure_mismatch_names_the_key_path():
    with pytest.raises(ValueError, match=r"\['a'\]"):
        tree_util.tree_map(lambda a, b: a, {"a": [1, 2]}, {"a": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"(?s)\['a'\].*(list|tuple)"):
        tree_util.tree_map(lambda a, b: a, {"a": [1, 2], "b": 1}, {"a": (1, 2), "b": 2})
    with pytest.raises(ValueError, match=r"\['p'\]\[1\]"):
        tree_util.tree_map(lambda a, b: a, {"p": [1, {"x": 1}]}, {"p": [1, {"y": 1}]})


def test_unflatten_wrong_leaf_count():
    treedef = tree_util.tree_structure([1, 2])
    with pytest.raises(ValueError, match="(?i)leaves"):
        tree_util.tree_unflatten(treedef, [1])


def test_flatten_with_path_keys():
    tree = {"a": [1, (2, Point(3, 4))], "b": None}
    paths = tree_util.tree_flatten_with_path(tree)[0]
    keys = [p for p, _ in paths]
    assert keys[0] == (tree_util.DictKey("a"), tree_util.SequenceKey(0))
    assert keys[2] == (tree_util.DictKey("a"), tree_util.SequenceKey(1), tree_util.SequenceKey(1),
                       tree_util.GetAttrKey("x"))
    assert [tree_util.keystr(p) for p in keys] == ["['a'][0]", "['a'][1][0]", "['a'][1][1].x", "['a'][1][1].y"]
    assert [v for _, v in paths] == [1, 2, 3, 4]
    assert tree_util.keystr(keys[2], simple=True, separator="/") == "a/1/1/x"


def test_tree_map_with_path():
    out = tree_util.tree_map_with_path(lambda p, v: f"{tree_util.keystr(p)}={v}", {"w": 1, "b": [2]})
    assert out == {"w": "['w']=1", "b": ["['b'][0]=2"]}


def test_register_pytree_node():
    class Box:
        def __init__(self, value, tag):
            self.value, self.tag = value, tag

    tree_util.register_pytree_node(Box, lambda b: ((b.value,), b.tag), lambda tag, kids: Box(kids[0], tag))
    leaves, treedef = tree_util.tree_flatten([Box(3, "t"), Box((4, 5), "u")])
    assert leaves == [3, 4, 5]
    rebuilt = tree_util.tree_unflatten(treedef, [30, 40, 50])
    assert rebuilt[0].value == 30 and rebuilt[0].tag == "t" and rebuilt[1].value == (40, 50)
    assert "CustomNode(Box[" in repr(treedef)
    with pytest.raises(ValueError, match="(?i)duplicate"):
        tree_util.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)
    # Custom nodes work through transformations.
    g = jax.grad(lambda b: b.value ** 2)(Box(np.float32(3.0), "t"))
    assert isinstance(g, Box) and float(g.value) == 6.0 and g.tag == "t"


def test_register_pytree_node_class():
    @tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    out = tree_util.tree_map(lambda v: v + 1, Pair(1, Pair(2, 3)))
    assert out.a == 2 and out.b.a == 3 and out.b.b == 4
    vals = jax.vmap(lambda p: p.a * p.b)(Pair(jnp.arange(3.), jnp.ones(3)))
    assert vals.tolist() == [0.0, 1.0, 2.0]


def test_register_dataclass_fields_and_paths():
    @dataclasses.dataclass
    class Layer:
        w: Any
        b: Any
        name: str = "dense"

    tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=["name"])
    layer = Layer(1, 2, "enc")
    leaves, treedef = tree_util.tree_flatten(layer)
    assert leaves == [1, 2]
    rebuilt = tree_util.tree_unflatten(treedef, [10, 20])
    assert rebuilt == Layer(10, 20, "enc")
    assert [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(layer)[0]] == [".w", ".b"]
    # Meta fields are part of the structure.
    assert tree_util.tree_structure(Layer(1, 2, "a")) != tree_util.tree_structure(Layer(1, 2, "b"))


def test_register_dataclass_infers_static_fields():
    @dataclasses.dataclass
    class Cfg:
        x: Any
        n: int = dataclasses.field(default=3, metadata={"static": True})

    tree_util.register_dataclass(Cfg)
    assert tree_util.tree_leaves(Cfg(5)) == [5]
    assert tree_util.tree_unflatten(tree_util.tree_structure(Cfg(5, 7)), [1]) == Cfg(1, 7)


def test_partial_is_a_pytree():
    p = tree_util.Partial(lambda a, b: a * b, np.float32(3.0))
    leaves = tree_util.tree_leaves(p)
    assert len(leaves) == 1
    out = jax.jit(lambda f, x: f(x))(p, np.float32(2.0))
    assert float(out) == 6.0


def test_tree_reduce_all_transpose_and_helpers():
    assert tree_util.tree_reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]}) == 6
    assert tree_util.tree_reduce(lambda a, b: a + b, [], 10) == 10
    assert tree_util.tree_all([True, (True, 1)]) and not tree_util.tree_all([True, 0])
    outer = tree_util.tree_structure([0, 0])
    inner = tree_util.tree_structure({"a": 0, "b": 0})
    out = tree_util.tree_transpose(outer, inner, [{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    assert out == {"a": [1, 3], "b": [2, 4]}
    td = tree_util.tree_structure((1, [2]))
    assert not tree_util.treedef_is_leaf(td) and tree_util.treedef_is_leaf(tree_util.tree_structure(1))
    assert len(tree_util.treedef_children(td)) == 2
    assert tree_util.all_leaves([1, 2.0]) and not tree_util.all_leaves([1, (2,)])


def test_treedef_equality_and_hash():
    a = tree_util.tree_structure({"x": 1, "y": (2, 3)})
    b = tree_util.tree_structure({"x": "p", "y": ("q", "r")})
    c = tree_util.tree_structure({"x": 1, "y": [2, 3]})
    assert a == b and hash(a) == hash(b) and a != c
    assert len({a, b, c}) == 2


def test_arrays_are_leaves_and_transformations_accept_pytrees():
    params = {"w": jnp.ones((2, 2)), "b": [jnp.zeros(2), None]}
    assert len(tree_util.tree_leaves(params)) == 2
    g = jax.grad(lambda p: jnp.sum(p["w"]) + jnp.sum(p["b"][0] * 2))(params)
    assert tree_util.tree_structure(g) == tree_util.tree_structure(params)
    np.testing.assert_array_equal(np.asarray(g["b"][0]), np.full(2, 2.0, np.float32))
    assert g["b"][1] is None


def test_custom_node_repr_matches_real_jax():
    real = pytest.importorskip("jax")

    class Tagged:
        def __init__(self, v, tag):
            self.v, self.tag = v, tag

    for reg in (tree_util.register_pytree_node, real.tree_util.register_pytree_node):
        reg(Tagged, lambda b: ((b.v,), b.tag), lambda tag, c: Tagged(c[0], tag))
    assert repr(tree_util.tree_structure(Tagged(1, "t"))) == repr(real.tree_util.tree_structure(Tagged(1, "t")))


# -- typed PRNG key arrays are leaves of the public pytree functions, as in JAX -------------------------------------

def _key_state(lib):
    key = lib.random.key(3)
    return {"rng": key, "keys": lib.random.split(key, 4), "w": lib.numpy.ones((2, 3))}


def test_typed_keys_are_leaves_like_jax():
    jax = pytest.importorskip("jax")
    ours, theirs = _key_state(fluxion), _key_state(jax)
    assert str(tree_util.tree_structure(ours)) == str(jax.tree_util.tree_structure(theirs))
    assert ([(str(x.dtype), x.shape) for x in fluxion.tree.leaves(ours)]
            == [(str(x.dtype), x.shape) for x in jax.tree.leaves(theirs)])
    assert fluxion.tree.map(lambda x: x.shape, ours) == jax.tree.map(lambda x: x.shape, theirs)
    assert ([tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path(ours)]
            == [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(theirs)])
    assert not tree_util.is_tree_node(type(ours["rng"])) and not jax.tree_util.is_tree_node(type(theirs["rng"]))
    with pytest.raises(ValueError):
        jax.tree_util.flatten_one_level(theirs["rng"])
    with pytest.raises(ValueError):
        tree_util.flatten_one_level(ours["rng"])
    # A user's is_leaf still applies; key leaves come out whole either way.
    assert len(tree_util.tree_leaves(ours, is_leaf=lambda x: isinstance(x, dict))) == 1


def test_typed_key_leaves_pass_through_transformations():
    state = _key_state(fluxion)
    leaves, treedef = tree_util.tree_flatten(state)

    def draw(leaves):
        s = tree_util.tree_unflatten(treedef, leaves)
        return fluxion.random.normal(s["rng"], (2,)) + fluxion.vmap(lambda k: fluxion.random.uniform(k))(s["keys"])[:2]

    eager = draw(leaves)
    np.testing.assert_array_equal(np.asarray(fluxion.jit(draw)(leaves)), np.asarray(eager))
    out = fluxion.jit(lambda s: fluxion.tree.map(lambda x: x, s))(state)
    assert out["keys"].shape == (4,) and str(out["rng"].dtype) == "key<fry>"
