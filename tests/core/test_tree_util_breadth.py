"""Breadth of `fluxion.tree_util` / `fluxion.tree` against JAX 0.10.2's `jax.tree_util` / `jax.tree`.

Every public name of JAX's modules either exists in fluxion (`test_every_public_name_exists`) or is listed in
`MISSING_WITH_REASON`. Behaviour is compared with real JAX on the same trees; key entries are compared by their
string form (the classes differ, their rendering does not).
"""

from __future__ import annotations

import collections
import dataclasses
import operator
from typing import Any, NamedTuple

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import tree as ftree
from fluxion import tree_util

jax = pytest.importorskip("jax")

MISSING_WITH_REASON: dict[str, str] = {}


class Point(NamedTuple):
    x: Any
    y: Any


TREES = [
    {"a": [1, 2], "b": {"c": 3}},
    (1, (2, 3)),
    [4, None, 5],
    None,
    Point(1, [2, 3]),
    collections.OrderedDict([("z", 1), ("a", 2)]),
    collections.defaultdict(int, {"b": 1, "a": 2}),
]


def _keys(pairs):
    return [(str(k), c) for k, c in pairs]


@pytest.mark.parametrize("module, jax_module", [(tree_util, "tree_util"), (ftree, "tree")])
def test_every_public_name_exists(module, jax_module):
    names = [n for n in dir(getattr(jax, jax_module)) if not n.startswith("_")]
    missing = [n for n in names if not hasattr(module, n) and n not in MISSING_WITH_REASON]
    assert not missing, missing


@pytest.mark.parametrize("tree", TREES, ids=lambda t: type(t).__name__)
def test_flatten_one_level_matches_jax(tree):
    children, aux = tree_util.flatten_one_level(tree)
    j_children, j_aux = jax.tree_util.flatten_one_level(tree)
    assert list(children) == list(j_children)
    assert aux == j_aux
    pairs, aux_k = tree_util.flatten_one_level_with_keys(tree)
    j_pairs, _ = jax.tree_util.flatten_one_level_with_keys(tree)
    if isinstance(tree, Point):  # JAX 0.10.2 names every namedtuple field after the first one
        assert [str(k) for k, _ in pairs] == [".x", ".y"]
        assert [c for _, c in pairs] == [c for _, c in j_pairs]
    else:
        assert _keys(pairs) == _keys(j_pairs)
    assert aux_k == aux


@pytest.mark.parametrize("leaf", [3, "s", np.ones(2), jnp.ones(2)], ids=str)
def test_flatten_one_level_of_a_leaf_raises(leaf):
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tree_util.flatten_one_level(leaf)
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tree_util.flatten_one_level_with_keys(leaf)


@pytest.mark.parametrize("typ", [list, tuple, dict, type(None), Point, collections.OrderedDict,
                                 collections.defaultdict, int, str, np.ndarray, "Partial"])
def test_is_tree_node_matches_jax(typ):
    if typ == "Partial":  # each library's own Partial class
        assert tree_util.is_tree_node(tree_util.Partial) == jax.tree_util.is_tree_node(jax.tree_util.Partial)
        return
    assert tree_util.is_tree_node(typ) == jax.tree_util.is_tree_node(typ)
    assert tree_util.default_registry.is_node(typ) == tree_util.is_tree_node(typ)


@pytest.mark.parametrize("prefix, full", [
    (1, {"a": [1, 2], "b": 3}),
    ((1, {"a": 2, "b": 3}), ((7, 8), {"a": [1, 2], "b": (4, 5)})),
    ([None, 2], [None, (1, 3)]),
    ([0, 2], [(1, 2), 3]),
    ({"x": 0}, {"x": {"p": 1, "q": (2, 3)}}),
])
def test_broadcast_matches_jax(prefix, full):
    expected = jax.tree.broadcast(prefix, full)
    assert ftree.broadcast(prefix, full) == expected
    assert tree_util.tree_broadcast(prefix, full) == expected


def test_broadcast_rejects_a_non_prefix():
    with pytest.raises(ValueError):
        tree_util.tree_broadcast([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):  # None is an empty node, not a wildcard
        tree_util.tree_broadcast([None, 2], [(1, 2), 3])


@pytest.mark.parametrize("tree", [[1, 2, 3, 4, 5], {"a": 1, "b": (2, 3)}, [7], ["a", "b", "c", "d", "e", "f", "g"]],
                         ids=str)
@pytest.mark.parametrize("op", [operator.add, lambda a, b: f"({a}{b})" if isinstance(a, str) else a - 2 * b],
                         ids=["add", "non_associative"])
def test_reduce_associative_matches_jax(tree, op):
    expected = jax.tree.reduce_associative(op, tree)
    assert ftree.reduce_associative(op, tree) == expected
    assert tree_util.tree_reduce_associative(op, tree) == expected


def test_reduce_associative_empty_tree():
    assert tree_util.tree_reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match="identity"):
        tree_util.tree_reduce_associative(operator.add, [None])


def test_treedef_tuple_matches_structure_of_a_tuple():
    x, y = [1, 2, 3], {"a": 4, "b": 5}
    td = tree_util.treedef_tuple([tree_util.tree_structure(x), tree_util.tree_structure(y)])
    assert td == tree_util.tree_structure((x, y))
    jtd = jax.tree_util.treedef_tuple([jax.tree.structure(x), jax.tree.structure(y)])
    assert repr(td) == repr(jtd)
    assert td.unflatten(range(5)) == ([0, 1, 2], {"a": 3, "b": 4})
    with pytest.raises(TypeError):
        tree_util.treedef_tuple([1])


def _register_special(register, key_cls_module):
    @register
    class Special:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten_with_keys(self):
            return (((key_cls_module.GetAttrKey("x"), self.x), (key_cls_module.GetAttrKey("y"), self.y)), None)

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    return Special


def test_register_pytree_with_keys_class_matches_jax():
    ours = _register_special(tree_util.register_pytree_with_keys_class, tree_util)
    theirs = _register_special(jax.tree_util.register_pytree_with_keys_class, jax.tree_util)
    paths = tree_util.tree_flatten_with_path([ours(1, (2, 3))])[0]
    j_paths = jax.tree_util.tree_flatten_with_path([theirs(1, (2, 3))])[0]
    assert [(tree_util.keystr(p), v) for p, v in paths] == [(jax.tree_util.keystr(p), v) for p, v in j_paths]
    back = tree_util.tree_map(lambda v: v * 10, ours(1, 2))
    assert (back.x, back.y) == (10, 20)
    with pytest.raises(ValueError, match="Duplicate"):
        tree_util.register_pytree_with_keys_class(ours)


def test_register_static_is_a_leafless_node_and_static_under_jit():
    @tree_util.register_static
    class Op(str):
        pass

    leaves, td = tree_util.tree_flatten({"op": Op("add"), "x": 1})
    assert leaves == [1]
    assert td.unflatten([2]) == {"op": "add", "x": 2}
    assert tree_util.is_tree_node(Op)

    @jax.tree_util.register_static
    class JOp(str):
        pass
    assert jax.tree.leaves({"op": JOp("add"), "x": 1}) == leaves

    @fluxion.jit
    def f(x, op):
        return x + 1 if op == "add" else x - 1
    np.testing.assert_array_equal(f(jnp.ones(2), Op("add")), np.full(2, 2.0))
    np.testing.assert_array_equal(f(jnp.ones(2), Op("sub")), np.zeros(2))


def test_static_field_with_register_dataclass_matches_jax():
    def make(tree_mod, register):
        @dataclasses.dataclass
        class Cfg:
            w: Any
            op: str = tree_mod.static(default="add")
        register(Cfg)
        return Cfg

    ours = make(ftree, tree_util.register_dataclass)
    theirs = make(jax.tree, jax.tree_util.register_dataclass)
    assert tree_util.tree_leaves(ours(1.0)) == jax.tree.leaves(theirs(1.0)) == [1.0]
    assert dataclasses.fields(ours)[1].metadata["static"] is True
    assert tree_util.tree_structure(ours(1.0, "a")) != tree_util.tree_structure(ours(1.0, "b"))


def test_key_aliases_are_usable_in_annotations():
    def f(path: tree_util.KeyPath, entry: tree_util.KeyEntry) -> None:
        return None
    assert f((tree_util.DictKey("a"),), tree_util.SequenceKey(0)) is None
    assert tree_util.KeyPath is tuple
