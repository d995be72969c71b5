"""Pytrees: nested containers of arrays, flattened to leaves plus a structure (`PyTreeDef`) and rebuilt.

Built in: tuple, list, dict (keys sorted), None (an empty node), NamedTuple, OrderedDict, defaultdict. Other types
are leaves unless registered with `register_pytree_node`, `register_pytree_node_class`,
`register_pytree_with_keys` or `register_dataclass`. Transformations flatten only at their API boundary.

Two views of one registry: the functions here are fluxion's internal view, used by the transformations, in which
an opaque array type (a typed PRNG key array) is a node over its raw data so that tracing sees plain arrays. Users
see the public view (`fluxion/_src/public_tree.py`, exported as `fluxion.tree_util` and `fluxion.tree`), in which
such arrays are leaves, as JAX's extended-dtype arrays are.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, Hashable, Iterable, NamedTuple, Sequence


class _NodeKind(NamedTuple):
    type: type
    to_iter: Callable  # x -> (children, aux_data)
    from_iter: Callable  # (aux_data, children) -> x
    to_iter_with_keys: Callable | None  # x -> ([(key, child)], aux_data)


_registry: dict[type, _NodeKind] = {}


# --------------------------------------------------------------------------------------------------------------
# Key paths
# --------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    key: Hashable

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(path: Sequence[Any], *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path like `['params']['Dense_0'][0]` (or `params/Dense_0/0` style with simple=True)."""
    if simple:
        parts = []
        for k in path:
            for attr in ("key", "idx", "name"):
                if hasattr(k, attr):
                    parts.append(str(getattr(k, attr)))
                    break
            else:
                parts.append(str(k))
        return separator.join(parts)
    return separator.join(str(k) for k in path)


# --------------------------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------------------------

def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Registers `nodetype` as a pytree node.

    Args:
      nodetype: the class.
      flatten_func: x -> (iterable of children, hashable aux data).
      unflatten_func: (aux data, children) -> x.
      flatten_with_keys_func: optional x -> (iterable of (key, child), aux data), for key paths.

    Raises:
      ValueError: `nodetype` is already registered.
    """
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = _NodeKind(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


# Types registered as nodes for fluxion's transformations but shown to users as leaves (see the module docstring).
_opaque_leaf_types: tuple = ()


def register_opaque_leaf(nodetype: type) -> None:
    """Marks the registered node type `nodetype` as a leaf of the public pytree view (fluxion-internal)."""
    global _opaque_leaf_types
    if nodetype not in _registry:
        raise ValueError(f"register_opaque_leaf: {nodetype.__name__} is not a registered pytree node")
    _opaque_leaf_types = _opaque_leaf_types + (nodetype,)


def opaque_leaf_types() -> tuple:
    """The types registered with `register_opaque_leaf`."""
    return _opaque_leaf_types


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Registers a node whose flattening also names its children (used by `tree_flatten_with_path`)."""
    if flatten_func is None:
        def flatten_func(x):
            kc, aux = flatten_with_keys(x)
            return [c for _, c in kc], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: registers a class with `tree_flatten(self)` and classmethod `tree_unflatten(aux, children)`."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()) -> type:
    """Registers a dataclass: `data_fields` are children, `meta_fields` go in the (hashable) aux data.

    With no field lists, fields whose metadata has `static=True` are meta fields and the rest data fields.
    """
    if data_fields is None or meta_fields is None:
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(aux, children):
        kwargs = dict(zip(meta_fields, aux))
        kwargs.update(zip(data_fields, children))
        return nodetype(**kwargs)

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def _dict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], tuple(keys)


def _sorted_keys(d) -> list:
    """A dict's keys in sorted order (its leaves' order), as JAX orders them.

    Raises:
      ValueError: the keys cannot be compared (e.g. `{1: ..., "y": ...}`), as in JAX: a pytree's leaf order must
        not depend on insertion order.
    """
    try:
        return sorted(d.keys())
    except TypeError as err:
        raise ValueError(f"Comparator raised exception while sorting pytree dictionary keys: {err}. Keys of a dict "
                         f"pytree must be mutually comparable (got {', '.join(repr(k) for k in list(d)[:5])}); "
                         "use keys of one type.") from None


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c),
                     lambda t: ([(SequenceKey(i), x) for i, x in enumerate(t)], None))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c),
                     lambda t: ([(SequenceKey(i), x) for i, x in enumerate(t)], None))
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)),
                     lambda d: ([(DictKey(k), d[k]) for k in _dict_flatten(d)[1]], _dict_flatten(d)[1]))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None, lambda _: ((), None))
register_pytree_node(collections.OrderedDict,
                     lambda d: (list(d.values()), tuple(d.keys())),
                     lambda keys, c: collections.OrderedDict(zip(keys, c)),
                     lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d.keys())))
register_pytree_node(collections.defaultdict,
                     lambda d: (_dict_flatten(d)[0], (d.default_factory, _dict_flatten(d)[1])),
                     lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
                     lambda d: ([(DictKey(k), d[k]) for k in _dict_flatten(d)[1]],
                                (d.default_factory, _dict_flatten(d)[1])))


def _is_namedtuple(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields") and t is not tuple


def _kind_of(x) -> _NodeKind | None:
    t = type(x)
    kind = _registry.get(t)
    if kind is not None:
        return kind
    if _is_namedtuple(t):
        return _NodeKind(t, lambda v: (tuple(v), None), lambda _, c, _t=t: _t(*c),
                         lambda v: ([(GetAttrKey(f), getattr(v, f)) for f in t._fields], None))
    return None


def node_kind(x) -> _NodeKind | None:
    """How `x` flattens (its registered or namedtuple node kind: `to_iter`, `from_iter`), or None for a leaf.

    For code that walks pytrees by hand on a hot path (`jit`'s dispatch), which must flatten exactly as
    `tree_flatten` does."""
    return _kind_of(x)


def registered_kind(t: type) -> _NodeKind | None:
    """The node kind registered for type `t` (by `register_pytree_node` or built in), or None."""
    return _registry.get(t)


# --------------------------------------------------------------------------------------------------------------
# PyTreeDef
# --------------------------------------------------------------------------------------------------------------

class PyTreeDef:
    """The structure of a pytree: node types, their aux data and children, with leaves as `*`."""

    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_type: type | None, aux: Any, children: tuple):
        self.node_type = node_type
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = None

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree: Any) -> list:
        return _flatten_up_to(self, tree, ())

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if type(other) is not PyTreeDef:
            return False
        return (self.node_type is other.node_type and self.num_leaves == other.num_leaves
                and _aux_eq(self.aux, other.aux) and self.children == other.children)

    def __hash__(self) -> int:
        if self._hash is None:
            try:
                aux_h = hash(self.aux)
            except TypeError:
                aux_h = hash(repr(self.aux))
            self._hash = hash((self.node_type, aux_h, self.children))
        return self._hash

    def _str(self) -> str:
        t = self.node_type
        if t is None:
            return "*"
        kids = [c._str() for c in self.children]
        if t is tuple:
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if t is list:
            return "[" + ", ".join(kids) + "]"
        if t is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(self.aux, kids)) + "}"
        if t is type(None):
            return "None"
        if _is_namedtuple(t) and t not in _registry:
            return f"CustomNode(namedtuple[{t.__name__}], [{', '.join(kids)}])"
        return f"CustomNode({t.__name__}[{self.aux}], [{', '.join(kids)}])"

    def __repr__(self) -> str:
        return f"PyTreeDef({self._str()})"


def _aux_eq(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # aux data with array-valued equality: compare by identity
        return a is b


_LEAF = PyTreeDef(None, None, ())


def _flatten(x, is_leaf, leaves: list) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    kind = _kind_of(x)
    if kind is None:
        leaves.append(x)
        return _LEAF
    children, aux = kind.to_iter(x)
    return PyTreeDef(kind.type, aux, tuple(_flatten(c, is_leaf, leaves) for c in children))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    """Flattens `tree` into (leaves in canonical order, treedef). `is_leaf(x)` True stops descent at x."""
    leaves: list = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuilds a pytree of structure `treedef` from `leaves`.

    Raises:
      ValueError: the number of leaves does not match the structure.
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"Too {'few' if len(leaves) < treedef.num_leaves else 'many'} leaves for PyTreeDef; "
                         f"expected {treedef.num_leaves}, got {len(leaves)}.")
    it = iter(leaves)
    return _unflatten(treedef, it)


def _unflatten(td: PyTreeDef, it):
    if td.node_type is None:
        return next(it)
    children = [_unflatten(c, it) for c in td.children]
    kind = _registry.get(td.node_type)
    if kind is None:  # namedtuple
        return td.node_type(*children)
    return kind.from_iter(td.aux, children)


def _flatten_up_to(td: PyTreeDef, tree, path) -> list:
    if td.node_type is None:
        return [tree]
    kind = _kind_of(tree)
    if kind is None or kind.type is not td.node_type:
        raise ValueError(f"Tree structure mismatch at {keystr(path) or 'the root'}: expected a "
                         f"{td.node_type.__name__} node, got {type(tree).__name__}: {tree!r:.80}")
    children, aux = kind.to_iter(tree)
    children = list(children)
    if not _aux_eq(aux, td.aux) or len(children) != len(td.children):
        raise ValueError(f"Tree structure mismatch at {keystr(path) or 'the root'}: expected node data {td.aux!r} "
                         f"with {len(td.children)} children, got {aux!r} with {len(children)}")
    out = []
    keys = _child_keys(tree, kind, len(children))
    for c_td, c, k in zip(td.children, children, keys):
        out.extend(_flatten_up_to(c_td, c, path + (k,)))
    return out


def _child_keys(tree, kind: _NodeKind, n: int) -> list:
    if kind.to_iter_with_keys is not None:
        return [k for k, _ in kind.to_iter_with_keys(tree)[0]]
    return [FlattenedIndexKey(i) for i in range(n)]


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    """The leaves of `tree` in canonical (flattening) order.

    Examples:
      >>> import fluxion
      >>> fluxion.tree_leaves({"b": (2, 3), "a": 1})
      [1, 2, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> PyTreeDef:
    """The treedef of `tree`.

    Examples:
      >>> import fluxion
      >>> fluxion.tree_structure({"a": 1, "b": (2, 3)}).num_leaves
      3
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Applies `f` leafwise to `tree` and the trees in `rest`, which must share (a suffix of) its structure.

    Raises:
      ValueError: naming the key path where the structures differ.

    Examples:
      >>> import fluxion
      >>> fluxion.tree_map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
      {'a': 2, 'b': (4, 6)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten(f(x) for x in leaves)
    others = []
    for r in rest:
        try:
            others.append(treedef.flatten_up_to(r))
        except ValueError as e:
            raise ValueError(f"tree_map: the trees have different structures. {e}") from None
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_flatten_with_path(tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
    """Like `tree_flatten`, but each leaf comes with its key path: ([(path, leaf)], treedef)."""
    out: list = []

    def walk(x, path):
        if is_leaf is not None and is_leaf(x):
            out.append((path, x))
            return
        kind = _kind_of(x)
        if kind is None:
            out.append((path, x))
            return
        if kind.to_iter_with_keys is not None:
            items, _ = kind.to_iter_with_keys(x)
        else:
            children, _ = kind.to_iter(x)
            items = [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]
        for k, c in items:
            walk(c, path + (k,))

    walk(tree, ())
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf: Callable | None = None) -> list:
    """The leaves of `tree` in flattening order, each as a `(key_path, leaf)` pair; a key path is a tuple of
    `DictKey`, `SequenceKey`, `GetAttrKey` or `FlattenedIndexKey` entries from the root to the leaf (format it
    with `keystr`).

    >>> from fluxion import tree_util
    >>> [(tree_util.keystr(p), v) for p, v in tree_util.tree_leaves_with_path({"w": [1, 2], "b": 3})]
    [("['b']", 3), ("['w'][0]", 1), ("['w'][1]", 2)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Like `tree_map`, but `f` receives the key path first: f(path, leaf, *others)."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(p, x, *xs) for (p, x), *xs in zip(path_leaves, *others))


def tree_reduce(function: Callable, tree: Any, initializer: Any = ..., is_leaf: Callable | None = None) -> Any:
    """Folds the leaves of `tree` from left to right with `function(accumulated, leaf)`, starting from
    `initializer` when given (`functools.reduce` over `tree_leaves(tree, is_leaf)`). A tree without leaves and no
    `initializer` raises `TypeError`.

    >>> from fluxion import tree_util
    >>> tree_util.tree_reduce(lambda a, b: a + b, {"x": 1, "y": (2, 3)})
    6
    >>> tree_util.tree_reduce(max, [], initializer=0)
    0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is ...:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, is_leaf: Callable | None = None) -> bool:
    """True if every leaf of `tree` is truthy (Python's `all` over `tree_leaves(tree, is_leaf)`; True for a tree
    without leaves). A leaf array of more than one element raises `ValueError`, as `bool()` of it does; reduce it
    first (`jnp.all`).

    >>> from fluxion import tree_util
    >>> tree_util.tree_all({"a": True, "b": [1, 2]}), tree_util.tree_all([True, 0])
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, pytree_to_transpose: Any) -> Any:
    """Turns a tree of trees (outer of inner) into the inner structure of outer trees."""
    flat = outer_treedef.flatten_up_to(pytree_to_transpose)
    inner = [inner_treedef.flatten_up_to(x) for x in flat]
    cols = list(zip(*inner)) if inner else [[] for _ in range(inner_treedef.num_leaves)]
    return inner_treedef.unflatten(outer_treedef.unflatten(c) for c in cols)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True if `treedef` is the structure of a single leaf (not of a container, and not of `None`, which is an
    empty node).

    >>> from fluxion import tree_util
    >>> leaf, node = tree_util.tree_structure(1.0), tree_util.tree_structure([1.0])
    >>> tree_util.treedef_is_leaf(leaf), tree_util.treedef_is_leaf(node)
    (True, False)
    """
    return treedef.node_type is None


def treedef_children(treedef: PyTreeDef) -> list:
    """The tree structures of the root's immediate children, in flattening order (empty for a leaf).

    >>> from fluxion import tree_util
    >>> [c.num_leaves for c in tree_util.treedef_children(tree_util.tree_structure(((1, 2), 3)))]
    [2, 1]
    """
    return list(treedef.children)


def all_leaves(iterable: Iterable[Any], is_leaf: Callable | None = None) -> bool:
    """True if every element of `iterable` is a leaf: a value that flattens to itself (an array, a scalar,
    `None` is not a leaf but an empty node) rather than a container. `is_leaf` marks extra values as leaves, as in
    `tree_flatten`.

    >>> from fluxion import tree_util
    >>> tree_util.all_leaves([1.0, 2]), tree_util.all_leaves([1.0, (2,)])
    (True, False)
    """
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) for x in iterable)


def tree_broadcast_prefix(prefix: Any, full: Any, is_leaf: Callable | None = None) -> list:
    """Expands a prefix tree (e.g. vmap's in_axes) to one entry per leaf of `full`.

    Raises:
      ValueError: `prefix` is not a tree prefix of `full` (naming the key path).
    """
    out: list = []

    def walk(p, f, path):
        if p is None or _kind_of(p) is None or (is_leaf is not None and is_leaf(p)):
            out.extend([p] * len(tree_leaves(f)))
            return
        pk, fk = _kind_of(p), _kind_of(f)
        if fk is None or pk.type is not fk.type:
            raise ValueError(f"pytree prefix mismatch at {keystr(path) or 'the root'}: prefix has a "
                             f"{type(p).__name__}, the full tree a {type(f).__name__}")
        pc, pa = pk.to_iter(p)
        fc, fa = fk.to_iter(f)
        pc, fc = list(pc), list(fc)
        if not _aux_eq(pa, fa) or len(pc) != len(fc):
            raise ValueError(f"pytree prefix mismatch at {keystr(path) or 'the root'}: {pa!r} vs {fa!r}")
        keys = _child_keys(f, fk, len(fc))
        for a, b, k in zip(pc, fc, keys):
            walk(a, b, path + (k,))

    walk(prefix, full, ())
    return out


class Partial(functools.partial):
    """A `functools.partial` that is a pytree: its bound arguments are leaves, the function is static."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):
            original = func
            func = func.func
            args = original.args + args
            kw = {**original.keywords, **kw}
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial,
                     lambda p: ((p.args, p.keywords), p.func),
                     lambda func, xs: Partial(func, *xs[0], **xs[1]))


# --------------------------------------------------------------------------------------------------------------
# One-level flattening, registry queries and the remaining `jax.tree_util` / `jax.tree` helpers
# --------------------------------------------------------------------------------------------------------------

# Type aliases for annotations, as `jax.tree_util` names them: a key entry is any of the key classes above (or a
# user's own), a key path the tuple of entries from the root to a leaf.
KeyEntry = Any
KeyPath = tuple


class _Registry:
    """The pytree registry as one object (`default_registry`): which types are nodes and how they flatten.

    JAX exposes its C++ registry here; fluxion's registry is the module-level table every flattening function
    uses, so this object is a view of it with the query methods JAX's registry has (`flatten`, `flatten_one_level`,
    `flatten_one_level_with_keys`, `is_node`)."""

    def is_node(self, typ: type) -> bool:
        return typ in _registry or (isinstance(typ, type) and _is_namedtuple(typ))

    def flatten(self, tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
        return tree_flatten(tree, is_leaf)

    def flatten_one_level(self, tree: Any):
        kind = _kind_of(tree)
        if kind is None:
            return None
        children, aux = kind.to_iter(tree)
        return children, self._aux(tree, aux)

    def flatten_one_level_with_keys(self, tree: Any):
        kind = _kind_of(tree)
        if kind is None:
            return None
        if kind.to_iter_with_keys is not None:
            pairs, aux = kind.to_iter_with_keys(tree)
        else:
            children, aux = kind.to_iter(tree)
            pairs = [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]
        return pairs, self._aux(tree, aux)

    @staticmethod
    def _aux(tree, aux):
        # An unregistered namedtuple's treedef keeps its class as the node type; JAX reports the class as its
        # one-level aux data.
        t = type(tree)
        return t if t not in _registry and _is_namedtuple(t) else aux

    def __repr__(self) -> str:
        return "fluxion.tree_util.default_registry"


default_registry = _Registry()


def is_tree_node(typ: type) -> bool:
    """Whether instances of `typ` are pytree nodes (built in, registered, or a namedtuple class), not leaves."""
    return default_registry.is_node(typ)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """Splits one pytree node into (its children, its aux data) without descending further.

    Raises:
      ValueError: `tree` is a leaf (not a built-in or registered node).
    """
    out = default_registry.flatten_one_level(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[Any, Any]], Hashable]:
    """Like `flatten_one_level`, with each child paired with its key entry: ([(key, child)], aux data).

    Nodes registered without key functions name their children `FlattenedIndexKey(i)`. (JAX 0.10.2 repeats the
    first field's `GetAttrKey` for every field of a namedtuple here; fluxion names each field.)

    Raises:
      ValueError: `tree` is a leaf.
    """
    out = default_registry.flatten_one_level_with_keys(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: registers a class with `tree_flatten_with_keys(self)` -> ([(key, child)], aux) and a
    classmethod `tree_unflatten(aux, children)`; a `tree_flatten` method, if present, is used for plain flattening.

    Raises:
      ValueError: `cls` is already registered.
    """
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten)
    return cls


def register_static(cls: type) -> type:
    """Registers `cls` as a pytree node with no children: an instance lives entirely in the treedef, so `jit`
    treats it as static. Instances must be hashable.

    Raises:
      ValueError: `cls` is already registered.
    """
    register_pytree_with_keys(cls, lambda x: ((), x), lambda aux, _: aux, lambda x: ((), x))
    return cls


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable | None = None) -> Any:
    """A tree of `full_tree`'s structure whose leaves are the `prefix_tree` leaf covering each position.

    Unlike `tree_broadcast_prefix` (vmap's `in_axes`), a None in `prefix_tree` is an empty node, as in JAX, so it
    matches only a None in `full_tree`.

    Raises:
      ValueError: `prefix_tree` is not a prefix of `full_tree`.
    """
    leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    try:
        subtrees = prefix_def.flatten_up_to(full_tree)
    except ValueError as e:
        raise ValueError(f"tree_broadcast: prefix_tree is not a prefix of full_tree. {e}") from None
    out: list = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * tree_structure(sub).num_leaves)
    return tree_structure(full_tree).unflatten(out)


_NO_IDENTITY = object()


def tree_reduce_associative(operation: Callable, tree: Any, *, identity: Any = _NO_IDENTITY,
                            is_leaf: Callable | None = None) -> Any:
    """Reduces the leaves with an associative `operation` as a balanced binary tree (halving the leaf list, as
    JAX does, so a non-associative operation gives JAX's result too).

    Raises:
      TypeError: the tree has no leaves and no `identity` was given.
    """
    def reduce(seq):
        if len(seq) == 1:
            return seq[0]
        half = len(seq) // 2
        return operation(reduce(seq[:half]), reduce(seq[half:]))

    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_IDENTITY:
            raise TypeError("tree_reduce_associative: the tree has no leaves; pass `identity`.")
        return identity
    return reduce(leaves)


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the given treedefs."""
    treedefs = tuple(treedefs)
    for td in treedefs:
        if not isinstance(td, PyTreeDef):
            raise TypeError(f"treedef_tuple: expected PyTreeDefs, got {type(td).__name__}")
    return PyTreeDef(tuple, None, treedefs)


def static(**kwargs) -> Any:
    """A `dataclasses.field` marked static (`metadata={"static": True}`), so `register_dataclass` puts it in the
    treedef rather than the leaves. Keyword arguments go to `dataclasses.field`."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
