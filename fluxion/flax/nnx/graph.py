"""The graph system: split a mutable object graph into a static GraphDef and a State, and back
(mirrors ``flax.nnx.graphlib``).

Graph nodes are :class:`~fluxion.flax.nnx.Object` instances (Modules, Rngs,
Optimizers, Metrics ...) and the lists, tuples and dicts that hold nodes,
variables or arrays.  Leaves of the state are :class:`Variable` objects and
arrays stored directly as attributes; every other attribute is static and is
kept in the :class:`GraphDef`.  Objects reachable along several paths (shared
submodules or variables) are stored once, at their first path in sorted
attribute order, and restored as one object.

Differences from Flax 0.12: modules are not JAX pytrees (this graph is the only
way to take them apart; pass them to the ``nnx`` transforms, not to raw
``fluxion.jit``); ``iter_graph`` yields nodes, variables and attribute leaves
but not Flax's internal bookkeeping attributes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from fluxion import tree_util

from . import filters as filterlib
from .pytreelib import Pytree
from .state import FlatState, State, _sort_key, from_flat_state, split_state, to_flat_state
from .variables import Variable




def is_array(x: Any) -> bool:
    """True for fluxion arrays and tracers (state leaves when stored directly as attributes)."""
    return hasattr(x, 'shape') and hasattr(x, 'dtype') and not isinstance(x, (np.ndarray, np.generic, Variable, type))


def _holds_state(x: Any) -> bool:
    if isinstance(x, (Pytree, Variable)) or is_array(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(_holds_state(v) for v in x)
    if isinstance(x, (dict, State)):
        return any(_holds_state(v) for v in x.values())
    return False


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), '_fields')


def _is_plain_leaf(x: Any) -> bool:
    leaves = tree_util.tree_leaves(x)
    return len(leaves) == 1 and leaves[0] is x


def is_graph_node(x: Any) -> bool:
    """True for Objects and for lists/tuples/dicts that (transitively) hold nodes, variables or arrays."""
    if isinstance(x, Pytree):
        return True
    return isinstance(x, (list, tuple, dict, State)) and _holds_state(x)


def is_node(x: Any) -> bool:
    return is_graph_node(x) or isinstance(x, Variable)


def _children(node: Any) -> list[tuple[Any, Any]]:
    """The (key, value) pairs of a node, keys in sorted order (Flax's order, which fixes state paths)."""
    if isinstance(node, Pytree):
        items = vars(node).items()
    elif isinstance(node, (dict, State)):
        items = node.items()
    elif _is_namedtuple(node):
        items = zip(node._fields, node)
    else:
        items = enumerate(node)
    return sorted(items, key=lambda kv: _sort_key(kv[0]))


# -- GraphDef ----------------------------------------------------------------

def _static_eq(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # arrays and other objects without a boolean ==: fall back to identity
        return False


def _static_hash(a: Any) -> int:
    try:
        return hash(a)
    except TypeError:
        return hash(type(a))


@dataclasses.dataclass(frozen=True, eq=False)
class Static:
    """An attribute value kept in the GraphDef (not part of the state)."""
    value: Any

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Static) and _static_eq(self.value, other.value)

    def __hash__(self) -> int:
        return _static_hash(self.value)


@dataclasses.dataclass(frozen=True)
class ArrayAttr:
    """Marks an attribute that holds an array directly; its value is in the state."""


@dataclasses.dataclass(frozen=True)
class NodeRef:
    """A second (or later) reference to the node or variable with this index."""
    index: int


@dataclasses.dataclass(frozen=True)
class VariableDef:
    """A Variable: its type, its index (for shared references) and its metadata."""
    type: type
    index: int
    metadata: Static


@dataclasses.dataclass(frozen=True)
class NodeDef:
    """A graph node: its type, index, the definitions of its attributes in sorted order and, for pytree-mode
    objects, the data/static status of each attribute (``((name, is_data), ...)``)."""
    type: type
    index: int
    attributes: tuple
    status: tuple | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class GraphDef:
    """The static structure of a graph: node types, static attributes, variable types and sharing.

    Hashable and comparable, so it can key caches (the ``nnx.jit`` cache does),
    and a pytree without leaves (so it can sit in a pytree such as
    :class:`~fluxion.flax.nnx.TrainState`).  :meth:`apply` gives a functional
    interface: ``graphdef.apply(state)(*args)`` merges, calls, and returns
    ``(output, (graphdef, new_state))``.
    """
    root: Any

    def __hash__(self) -> int:
        # GraphDefs key the nnx.jit cache on every call: hash the (immutable) tree once.
        cached = self.__dict__.get('_hash')
        if cached is None:
            cached = hash(self.root)
            object.__setattr__(self, '_hash', cached)
        return cached

    def __eq__(self, other: Any) -> bool:
        return self is other or (isinstance(other, GraphDef) and hash(self) == hash(other) and self.root == other.root)

    def merge(self, state: Any, /, *states: Any) -> Any:
        """``nnx.merge(self, state, *states)``."""
        return merge(self, state, *states)

    def apply(self, state: Any, *states: Any) -> ApplyCaller:
        """``call((self, merged_states))``: call (a method of) the node, get ``(out, (graphdef, state))``."""
        from .state import merge_state
        return ApplyCaller((self, merge_state(state, *states) if states else state))


tree_util.register_pytree_node(GraphDef, lambda g: ((), g), lambda g, _: g)


def _make_def(node: Any, path: tuple, seen: dict, leaves: list) -> Any:
    if isinstance(node, Variable):
        if id(node) in seen:
            return NodeRef(seen[id(node)])
        seen[id(node)] = len(seen)
        leaves.append((path, node))
        return VariableDef(type(node), seen[id(node)], Static(tuple(node._var_metadata.items())))
    if is_graph_node(node):
        if id(node) in seen:
            return NodeRef(seen[id(node)])
        seen[id(node)] = index = len(seen)
        pytree_mode = isinstance(node, Pytree) and type(node)._pytree__is_pytree
        attrs, status = [], []
        for key, value in _children(node):
            if pytree_mode:
                is_data = node._pytree__status(key)
                status.append((str(key), is_data))
                if not is_data:
                    # Static attributes stay in the GraphDef whatever they hold (Flax's StaticElem).
                    attrs.append((key, Static(value)))
                    continue
                if _is_plain_leaf(value) and not is_node(value) and not is_array(value):
                    # A data attribute holding a plain leaf (nnx.data(42)) is a state leaf.
                    leaves.append((path + (key,), value))
                    attrs.append((key, ArrayAttr()))
                    continue
            attrs.append((key, _make_def(value, path + (key,), seen, leaves)))
        return NodeDef(type(node), index, tuple(attrs), tuple(status) if pytree_mode else None)
    if is_array(node):
        leaves.append((path, node))
        return ArrayAttr()
    return Static(node)


def flatten(node: Any, /) -> tuple[GraphDef, Any]:
    """The GraphDef and the :class:`FlatState` (``(path, leaf)`` pairs, leaves the live Variables) of a node."""
    seen: dict = {}
    leaves: list = []
    root = _make_def(node, (), seen, leaves)
    return GraphDef(root), FlatState(leaves)


def unflatten(graphdef: GraphDef, state: Any, /) -> Any:
    """The inverse of :func:`flatten`: a node from its GraphDef and a State, FlatState or ``(path, leaf)`` list."""
    return merge(graphdef, state if isinstance(state, State) else from_flat_state(state))


def graphdef(node: Any, /) -> GraphDef:
    """The GraphDef of a graph node."""
    return flatten(node)[0]


def split(node: Any, *filters: Any) -> tuple:
    """Splits a node into ``(graphdef, state)`` or, with filters, ``(graphdef, state_1, ..., state_n)``.

    The states hold the node's live Variable objects (as in Flax), so writing
    to them writes to the node.  With filters each leaf goes to the first
    filter that matches.

    Raises:
      ValueError: with filters, a leaf matches none (end with ``...`` to keep the rest).
    """
    gdef, leaves = flatten(node)
    state = from_flat_state(leaves)
    if not filters:
        return gdef, state
    states = split_state(state, *filters)
    return (gdef, *states) if isinstance(states, tuple) else (gdef, states)


def state(node: Any, *filters: Any) -> Any:
    """The state of a node (live Variables), filtered: one State, or a tuple for several filters.

    Unlike :func:`split`, leaves matching no filter are dropped.
    """
    _, leaves = flatten(node)
    full = from_flat_state(leaves)
    if not filters:
        return full
    from .state import filter_state
    return filter_state(full, *filters)


def _build(d: Any, path: tuple, flat: dict, built: dict) -> Any:
    if isinstance(d, NodeRef):
        return built[d.index]
    if isinstance(d, Static):
        return d.value
    if isinstance(d, ArrayAttr):
        if path not in flat:
            raise ValueError(f'merge: no value in the state for the array at path {path!r}')
        leaf = flat[path]
        return leaf.get_value() if isinstance(leaf, Variable) else leaf
    if isinstance(d, VariableDef):
        if path not in flat:
            raise ValueError(f'merge: no value in the state for the {d.type.__name__} at path {path!r}')
        leaf = flat[path]
        if not isinstance(leaf, Variable):
            leaf = d.type(leaf, **dict(d.metadata.value))
        built[d.index] = leaf
        return leaf
    cls = d.type
    if issubclass(cls, Pytree):
        obj = cls.__new__(cls)
        built[d.index] = obj
        if d.status is not None:
            object.__setattr__(obj, '_pytree__nodes', {**cls._pytree__class_nodes, **dict(d.status)})
        for key, sub in d.attributes:
            vars(obj)[key] = _build(sub, path + (key,), flat, built)
        return obj
    if cls is list or issubclass(cls, list):
        obj = cls()
        built[d.index] = obj
        for key, sub in d.attributes:
            obj.append(_build(sub, path + (key,), flat, built))
        return obj
    if issubclass(cls, (dict, State)):
        obj = cls()
        built[d.index] = obj
        for key, sub in d.attributes:
            obj[key] = _build(sub, path + (key,), flat, built)
        return obj
    # Tuples are immutable: a tuple that refers to itself is impossible, so build children first.
    values = [_build(sub, path + (key,), flat, built) for key, sub in d.attributes]
    if hasattr(cls, '_fields'):
        obj = cls(**{key: v for (key, _), v in zip(d.attributes, values)})
    else:
        obj = cls(values) if cls is tuple else cls(*values)
    built[d.index] = obj
    return obj


def merge(graphdef: GraphDef, state: Any = None, /, *states: Any) -> Any:
    """Rebuilds a node from its GraphDef and state(s) (the inverse of :func:`split`).

    The new node holds the Variable objects of the given states (as in Flax);
    raw values in the state are wrapped in the Variable type the GraphDef records.

    Raises:
      ValueError: the states lack a leaf the GraphDef needs.
    """
    if not isinstance(graphdef, GraphDef):
        raise TypeError(f'merge expects a GraphDef first, got {type(graphdef).__name__}')
    flat: dict = {}
    for s in (state, *states):
        if s is not None:
            flat.update(to_flat_state(s))
    return _build(graphdef.root, (), flat, {})


def _get_child(node: Any, key: Any) -> Any:
    if isinstance(node, Pytree):
        return vars(node)[key]
    return getattr(node, key) if _is_namedtuple(node) and isinstance(key, str) else node[key]


def _set_child(node: Any, key: Any, value: Any) -> None:
    if isinstance(node, Pytree):
        vars(node)[key] = value
    elif isinstance(node, (dict, State)):
        node[key] = value
    elif isinstance(node, list):
        node[key] = value
    else:
        raise ValueError(f'cannot update an element of an immutable {type(node).__name__}')


def _has_child(node: Any, key: Any) -> bool:
    if isinstance(node, Pytree):
        return key in vars(node)
    if isinstance(node, (dict, State)):
        return key in node
    if _is_namedtuple(node) and isinstance(key, str):
        return key in node._fields
    return isinstance(key, int) and 0 <= key < len(node)


def update(node: Any, state: Any, /, *states: Any) -> None:
    """Writes the values (and metadata) of ``state``'s leaves into the node's variables, in place.

    A path that names a missing attribute whose leaf is a Variable adds a copy of
    that Variable (so variables created inside a transform, e.g. by ``sow``,
    reach the outer module).

    Raises:
      ValueError: a path leads through something that is not a node, or names a
        missing attribute with a raw (non-Variable) value.
    """
    for s in (state, *states):
        for path, leaf in to_flat_state(s):
            _update_path(node, path, leaf)


def _update_path(node: Any, path: tuple, leaf: Any) -> None:
    if not path:
        raise ValueError('update: a state leaf with an empty path cannot be written')
    parent = node
    for key in path[:-1]:
        if not _has_child(parent, key):
            raise ValueError(f'update: no attribute {key!r} on the path {path!r}')
        parent = _get_child(parent, key)
    key = path[-1]
    if not _has_child(parent, key):
        if isinstance(leaf, Variable):
            _set_child(parent, key, leaf.copy())
            return
        raise ValueError(f'update: no attribute at path {path!r} to write a raw value to')
    target = _get_child(parent, key)
    if isinstance(target, Variable):
        if isinstance(leaf, Variable):
            target.copy_from(leaf)
        else:
            target.set_value(leaf)
    elif isinstance(leaf, Variable) and not is_array(target):
        _set_child(parent, key, leaf.copy())
    else:
        _set_child(parent, key, leaf.get_value() if isinstance(leaf, Variable) and is_array(target) else leaf)


def clone(node: Any, /) -> Any:
    """A deep copy of the graph: new nodes and new Variables (array values are shared, being immutable)."""
    gdef, st = split(node)
    copied = from_flat_state([(p, v.copy() if isinstance(v, Variable) else v) for p, v in to_flat_state(st)])
    return merge(gdef, copied)


def pop(node: Any, *filters: Any) -> Any:
    """Removes the variables matching the filters from the node and returns them as State(s).

    Raises:
      ValueError: no filter given.
    """
    if not filters:
        raise ValueError('pop expects at least one filter')
    predicates = filterlib.filters_to_predicates(filters)
    _, leaves = flatten(node)
    buckets: list[list] = [[] for _ in filters]
    for path, leaf in leaves:
        for i, pred in enumerate(predicates):
            if pred(path, leaf):
                buckets[i].append((path, leaf))
                parent = node
                for key in path[:-1]:
                    parent = _get_child(parent, key)
                del (vars(parent) if isinstance(parent, Pytree) else parent)[path[-1]]
                break
    states = tuple(from_flat_state(b) for b in buckets)
    return states[0] if len(states) == 1 else states


def iter_graph(node: Any, /) -> Iterator[tuple[tuple, Any]]:
    """Yields ``(path, value)`` for every node, variable and attribute leaf, children before parents.

    Each shared object is yielded once, at its first path.
    """
    seen: set = set()

    def visit(x: Any, path: tuple) -> Iterator:
        if is_graph_node(x) or isinstance(x, Variable):
            if id(x) in seen:
                return
            seen.add(id(x))
        if is_graph_node(x):
            for key, value in _children(x):
                yield from visit(value, path + (key,))
        yield path, x

    yield from visit(node, ())


class ApplyCaller:
    """The proxy :func:`call` returns: attribute access and indexing select a (nested) method; calling it
    merges the graph, calls the method and returns ``(output, (graphdef, new_state))``."""

    def __init__(self, graphdef_state: tuple, accessors: tuple = ()):
        self._graphdef_state = graphdef_state
        self._accessors = accessors

    def __getattr__(self, name: str) -> ApplyCaller:
        if name.startswith('__'):
            raise AttributeError(name)
        return ApplyCaller(self._graphdef_state, self._accessors + (('attr', name),))

    def __getitem__(self, key: Any) -> ApplyCaller:
        return ApplyCaller(self._graphdef_state, self._accessors + (('item', key),))

    def __call__(self, *args: Any, **kwargs: Any) -> tuple:
        graphdef, st = self._graphdef_state
        node = merge(graphdef, st)
        target = node
        for kind, key in self._accessors:
            target = getattr(target, key) if kind == 'attr' else target[key]
        out = target(*args, **kwargs)
        return out, split(node)


def call(graphdef_state: tuple, /) -> ApplyCaller:
    """Calls a method of the node described by ``(graphdef, state)``: ``nnx.call((g, s)).method(*args)``
    returns ``(output, (graphdef, new_state))`` (merge, call, split in one step, for pure functions)."""
    return ApplyCaller(graphdef_state)


def map(f: Any, node: Any, /, *, graph: Any = None, recreate_variables: bool = True) -> Any:  # noqa: A001
    """A new graph with ``f(path, leaf)`` at every state leaf (leaves are usually Variables).

    ``f`` may return a Variable or a raw value (wrapped in the leaf's Variable
    type).  With ``recreate_variables`` (default) the new graph gets new
    Variable objects; otherwise Variables returned by ``f`` are used as they are.
    """
    gdef, leaves = flatten(node)
    new = []
    for path, leaf in leaves:
        value = f(path, leaf)
        if recreate_variables and isinstance(value, Variable):
            value = value.copy()
        new.append((path, value))
    return merge(gdef, from_flat_state(new))


def set_metadata(node: Any, /, *, only: Any = Variable, **metadata: Any) -> None:
    """Updates, in place, the metadata of the node's Variables selected by ``only``."""
    for _, leaf in to_flat_state(state(node, only)):
        if isinstance(leaf, Variable):
            leaf.set_metadata(**metadata)


def variables(node: Any, *filters: Any) -> Any:
    """Like :func:`state` (the State holds the live Variables)."""
    return state(node, *filters)


def find_duplicates(node: Any, /) -> list[list[tuple]]:
    """Groups of paths that reach the same node or variable (shared references)."""
    paths: dict[int, list] = {}

    def visit(x: Any, path: tuple) -> None:
        if is_graph_node(x) or isinstance(x, Variable):
            first = id(x) not in paths
            paths.setdefault(id(x), []).append(path)
            if first and is_graph_node(x):
                for key, value in _children(x):
                    visit(value, path + (key,))

    visit(node, ())
    return [p for p in paths.values() if len(p) > 1]
