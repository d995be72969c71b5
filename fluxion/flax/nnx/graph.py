"""The graph system: split a mutable object graph into a static GraphDef and a State, and back
(mirrors ``flax.nnx.graphlib``; ``nnx.graphlib`` gathers this module's names with the contexts').

Graph nodes are :class:`~fluxion.flax.nnx.Pytree` instances (Modules, Rngs,
Optimizers, Metrics ...) and the lists, tuples and dicts that hold nodes,
variables or arrays.  Leaves of the state are :class:`Variable` objects and
arrays stored directly as attributes (for pytree-mode objects: the attributes
with *data* status, see ``nnx.pytreelib``); every other attribute is static and
is kept in the :class:`GraphDef`.  Objects reachable along several paths
(shared submodules or variables) are stored once, at their first path in sorted
attribute order, and restored as one object.  ``graph=False`` (tree mode)
takes a node apart as a plain pytree instead.

Differences from Flax 0.12: ``iter_graph`` yields nodes, variables and
attribute leaves but not Flax's internal bookkeeping attributes; the GraphDef
is a tree of definitions rather than Flax's flat node list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, MutableMapping
from typing import Any

import numpy as np

from fluxion import tree_util

from . import filters as filterlib
from .modes import resolve_graph
from .pytreelib import Pytree
from .state import (FlatState, State, _flatten_state_with_keys, _sort_key, _unflatten_state, from_flat_state,
                    split_state, to_flat_state)
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
    """A Variable: its type, its index (for shared references), its metadata and, inside an update context,
    the index of the outer Variable it stands for."""
    type: type
    index: int
    metadata: Static
    outer_index: int | None = None


@dataclasses.dataclass(frozen=True)
class NodeDef:
    """A graph node: its type, index, the definitions of its attributes in sorted order and, for pytree-mode
    objects, the data/static status of each attribute (``((name, is_data), ...)``)."""
    type: type
    index: int
    attributes: tuple
    status: tuple | None = None
    outer_index: int | None = None


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


class RefMap:
    """Object -> index of the nodes and Variables met while flattening (by identity; keeps them alive)."""

    def __init__(self) -> None:
        self._index: dict[int, int] = {}
        self._objects: list = []

    def __contains__(self, obj: Any) -> bool:
        return id(obj) in self._index

    def __getitem__(self, obj: Any) -> int:
        return self._index[id(obj)]

    def __len__(self) -> int:
        return len(self._objects)

    def add(self, obj: Any, index: int | None = None) -> int:
        """Records ``obj`` under ``index`` (default: the next free index) and returns the index."""
        index = len(self._objects) if index is None else index
        self._index[id(obj)] = index
        self._objects.append(obj)
        return index

    def get(self, obj: Any, default: Any = None) -> Any:
        return self._index.get(id(obj), default)

    def items(self) -> Iterator[tuple[Any, int]]:
        return ((obj, self._index[id(obj)]) for obj in self._objects)


def _make_def(node: Any, path: tuple, seen: RefMap, leaves: list, outer: Any = None) -> Any:
    """The definition of ``node``; ``outer`` (inner object -> outer index, inside an update context) marks the
    nodes that stand for an object outside the transform."""
    if isinstance(node, Variable):
        if node in seen:
            return NodeRef(seen[node])
        index = seen.add(node)
        leaves.append((path, node))
        return VariableDef(type(node), index, Static(tuple(node._var_metadata.items())),
                           None if outer is None else outer.get(node))
    if is_graph_node(node):
        if node in seen:
            return NodeRef(seen[node])
        index = seen.add(node)
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
                if not is_node(value) and not is_array(value) and _is_plain_leaf(value):
                    # A data attribute holding a plain leaf (nnx.data(42)) is a state leaf.
                    leaves.append((path + (key,), value))
                    attrs.append((key, ArrayAttr()))
                    continue
            attrs.append((key, _make_def(value, path + (key,), seen, leaves, outer)))
        return NodeDef(type(node), index, tuple(attrs), tuple(status) if pytree_mode else None,
                       None if outer is None else outer.get(node))
    if is_array(node):
        leaves.append((path, node))
        return ArrayAttr()
    return Static(node)


def flatten(node: Any, /, *, ref_index: RefMap | None = None, ref_outer_index: Any = None,
            graph: bool | None = None) -> tuple[GraphDef, Any]:
    """The GraphDef and the :class:`FlatState` (``(path, leaf)`` pairs, leaves the live Variables) of a node.

    ``graph=False`` (or ``set_graph_mode(False)``) flattens in tree mode (see
    :func:`split`).  ``ref_index`` (a :class:`RefMap`) is shared by the
    flattens of one split context, so an object met in an earlier call becomes
    a reference; ``ref_outer_index`` is used by update contexts (see
    ``nnx.update_context``).

    Raises:
      ValueError: tree mode meets a shared Variable or a ``pytree=False`` object.
    """
    if not resolve_graph(graph):
        return _tree_flatten(node)
    seen = RefMap() if ref_index is None else ref_index
    leaves: list = []
    root = _make_def(node, (), seen, leaves, ref_outer_index)
    return GraphDef(root), FlatState(leaves)


@dataclasses.dataclass(frozen=True)
class TreeNodeDef:
    """The GraphDef root of a tree-mode split: the pytree structure, the state path of each leaf (in leaf
    order) and, for Variable leaves, their type and metadata."""
    treedef: Any
    paths: tuple
    variables: tuple


def _path_entry(key: Any) -> Any:
    for attr in ('name', 'idx', 'key'):
        if hasattr(key, attr):
            return getattr(key, attr)
    return key


def _tree_flatten(node: Any) -> tuple[GraphDef, FlatState]:
    def is_leaf(x: Any) -> bool:
        if isinstance(x, Pytree) and not type(x)._pytree__is_pytree:
            raise ValueError(f"Cannot use 'flatten' with graph=False on a '{type(x).__name__}' instance that has "
                             'pytree=False. Pytree subclasses with pytree=False are not registered as pytrees and '
                             'cannot be used in tree-mode; use graph mode (graph=True) instead.')
        return isinstance(x, Variable)
    with_path, treedef = tree_util.tree_flatten_with_path(node, is_leaf=is_leaf)
    paths = tuple(tuple(_path_entry(k) for k in path) for path, _ in with_path)
    seen: dict[int, tuple] = {}
    for path, (_, leaf) in zip(paths, with_path):
        if isinstance(leaf, Variable):
            if id(leaf) in seen:
                raise ValueError(f"Duplicate {type(leaf).__name__} found at paths:\n\n  - {seen[id(leaf)]}\n"
                                 f"  - {path}\n\nTree mode (graph=False) does not support shared references; "
                                 'use graph mode (graph=True) instead.')
            seen[id(leaf)] = path
    variables = tuple((type(leaf), Static(tuple(leaf._var_metadata.items()))) if isinstance(leaf, Variable)
                      else None for _, leaf in with_path)
    gdef = GraphDef(TreeNodeDef(treedef, paths, variables))
    order = sorted(range(len(paths)), key=lambda i: tuple(_sort_key(k) for k in paths[i]))
    return gdef, FlatState([(paths[i], with_path[i][1]) for i in order])


def _tree_unflatten(d: TreeNodeDef, flat: dict, copy: bool) -> Any:
    leaves = []
    for path, var in zip(d.paths, d.variables):
        if path not in flat:
            raise ValueError(f'merge: no value in the state for the leaf at path {path!r}')
        leaf = flat[path]
        if var is not None and not isinstance(leaf, Variable):
            leaf = var[0](leaf, **dict(var[1].value))
        elif copy and isinstance(leaf, Variable):
            leaf = leaf.copy()
        leaves.append(leaf)
    return tree_util.tree_unflatten(d.treedef, leaves)


def unflatten(graphdef: GraphDef, state: Any, /) -> Any:
    """The inverse of :func:`flatten`: a node from its GraphDef and a State, FlatState or ``(path, leaf)`` list."""
    return merge(graphdef, state if isinstance(state, State) else from_flat_state(state))


def graphdef(node: Any, /, *, graph: bool | None = None) -> GraphDef:
    """The GraphDef of a graph node (``graph`` as in :func:`split`)."""
    return flatten(node, graph=graph)[0]


def split(node: Any, *filters: Any, graph: bool | None = None) -> tuple:
    """Splits a node into ``(graphdef, state)`` or, with filters, ``(graphdef, state_1, ..., state_n)``.

    The states hold the node's live Variable objects (as in Flax), so writing
    to them writes to the node.  With filters each leaf goes to the first
    filter that matches.

    ``graph=False`` (default: ``set_graph_mode``'s value, ``True``) splits in
    tree mode: the node is taken apart as a pytree (modules through their data
    attributes, Variables as leaves), so state paths are the pytree paths;
    shared Variables and ``pytree=False`` objects are errors there.

    Raises:
      ValueError: with filters, a leaf matches none (end with ``...`` to keep the rest); in tree mode, a shared
        Variable or a ``pytree=False`` object.
    """
    gdef, leaves = flatten(node, graph=graph)
    state = from_flat_state(leaves)
    if not filters:
        return gdef, state
    states = split_state(state, *filters)
    return (gdef, *states) if isinstance(states, tuple) else (gdef, states)


def state(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """The state of a node (live Variables), filtered: one State, or a tuple for several filters.

    Unlike :func:`split`, leaves matching no filter are dropped.
    """
    _, leaves = flatten(node, graph=graph)
    full = from_flat_state(leaves)
    if not filters:
        return full
    from .state import filter_state
    return filter_state(full, *filters)


def _outer(d: Any, outer: Any) -> Any:
    """The outer object ``d`` stands for (update contexts), if it is still of the recorded type."""
    if outer is None or d.outer_index is None or d.outer_index not in outer:
        return None
    obj = outer[d.outer_index]
    return obj if type(obj) is d.type else None


def _build(d: Any, path: tuple, flat: dict, built: dict, outer: Any = None, copy: bool = False) -> Any:
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
        existing = _outer(d, outer)
        if existing is not None:
            # Update context, final merge: the outer Variable takes the new value and metadata in place.
            if isinstance(leaf, Variable):
                existing.copy_from(leaf)
            else:
                existing.set_value(leaf)
            leaf = existing
        elif not isinstance(leaf, Variable):
            leaf = d.type(leaf, **dict(d.metadata.value))
        elif copy:
            leaf = leaf.copy()
        built[d.index] = leaf
        return leaf
    cls = d.type
    obj = _outer(d, outer)
    if issubclass(cls, Pytree):
        if obj is None:
            obj = cls.__new__(cls)
        else:
            vars(obj).clear()
        built[d.index] = obj
        if d.status is not None:
            object.__setattr__(obj, '_pytree__nodes', {**cls._pytree__class_nodes, **dict(d.status)})
        for key, sub in d.attributes:
            vars(obj)[key] = _build(sub, path + (key,), flat, built, outer, copy)
        return obj
    if cls is list or issubclass(cls, list):
        obj = cls() if obj is None else obj
        obj.clear()
        built[d.index] = obj
        for key, sub in d.attributes:
            obj.append(_build(sub, path + (key,), flat, built, outer, copy))
        return obj
    if issubclass(cls, (dict, State)):
        obj = cls() if obj is None else obj
        obj.clear()
        built[d.index] = obj
        for key, sub in d.attributes:
            obj[key] = _build(sub, path + (key,), flat, built, outer, copy)
        return obj
    # Tuples are immutable: a tuple that refers to itself is impossible, so build children first.
    values = [_build(sub, path + (key,), flat, built, outer, copy) for key, sub in d.attributes]
    if hasattr(cls, '_fields'):
        obj = cls(**{key: v for (key, _), v in zip(d.attributes, values)})
    else:
        obj = cls(values) if cls is tuple else cls(*values)
    built[d.index] = obj
    return obj


def merge(graphdef: Any, /, *states: Any, copy: bool = False) -> Any:
    """Rebuilds a node from its GraphDef and state(s) (the inverse of :func:`split`).

    The first argument may also be a :class:`GraphState` (from :func:`unpack`),
    then every state must be a GraphState of the same GraphDef.  The new node
    holds the Variable objects of the given states (as in Flax), or copies of
    them with ``copy=True``; raw values in the state are wrapped in the
    Variable type the GraphDef records.

    Raises:
      TypeError: the first argument is neither a GraphDef nor a GraphState, or no state is given.
      ValueError: the states lack a leaf the GraphDef needs; GraphStates of different GraphDefs.
    """
    graphdef, states = _graphdef_and_states(graphdef, states)
    if isinstance(graphdef.root, TreeNodeDef):
        return _tree_unflatten(graphdef.root, _flat_of(states), copy)
    return _build(graphdef.root, (), _flat_of(states), {}, copy=copy)


def _graphdef_and_states(first: Any, states: tuple) -> tuple:
    if isinstance(first, GraphState):
        all_states = (first, *states)
        for gs in all_states:
            if not isinstance(gs, GraphState):
                raise ValueError(f'Expected GraphState object, got {type(gs)}')
            if gs.graphdef != first.graphdef:
                raise ValueError('GraphDef must be the same for all GraphState objects')
        return first.graphdef, tuple(gs.state for gs in all_states)
    if not isinstance(first, GraphDef):
        raise TypeError(f'Expected a GraphDef or GraphState object, got: {first!r}')
    if not states:
        raise TypeError("merge() missing 1 required positional argument: 'state'")
    return first, states


def _flat_of(states: tuple) -> dict:
    flat: dict = {}
    for s in states:
        if s is not None:
            flat.update(to_flat_state(s))
    return flat


class GraphState(MutableMapping):
    """A :class:`State` bundled with the GraphDef it belongs to (what :func:`unpack` returns).

    Reads and writes go to the State (``gs['kernel']``, ``gs.kernel``);
    ``nnx.merge(gs)`` or ``nnx.merge(gs_1, gs_2)`` rebuilds the node.  A
    pytree: its leaves are the State's, the GraphDef is static.

    Raises:
      ValueError: ``state`` is not a State.
    """

    __slots__ = ('_graphdef', '_state')

    def __init__(self, graphdef: GraphDef, state: State):
        if not isinstance(state, State):
            raise ValueError(f'Expected a State object, got {type(state).__name__}')
        object.__setattr__(self, '_graphdef', graphdef)
        object.__setattr__(self, '_state', state)

    @property
    def graphdef(self) -> GraphDef:
        return self._graphdef

    @property
    def state(self) -> State:
        return self._state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._state, name, value)

    def __getitem__(self, key: Any) -> Any:
        return self._state[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._state[key]

    def __iter__(self) -> Iterator:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def __repr__(self) -> str:
        return f'GraphState({self._state!r})'


def _graph_state_flatten_with_keys(gs: GraphState) -> tuple:
    children, keys = _flatten_state_with_keys(gs._state)
    return children, (gs._graphdef, keys)


def _graph_state_unflatten(aux: tuple, children: Any) -> GraphState:
    graphdef, keys = aux
    return GraphState(graphdef, _unflatten_state(keys, children))


tree_util.register_pytree_with_keys(GraphState, _graph_state_flatten_with_keys, _graph_state_unflatten)

PureState = tuple[GraphDef, State]
"""The type of a ``(graphdef, state)`` pair as returned by ``split`` (a typing alias)."""


def unpack(node: Any, /, *filters: Any, graph: bool | None = None) -> Any:
    """Like :func:`split` but each State comes bundled with the GraphDef as a :class:`GraphState`.

    Returns one GraphState for zero or one filter, a tuple for several.
    ``nnx.merge(*unpack(node, ...))`` rebuilds the node.

    Raises:
      ValueError: as :func:`split`.
    """
    gdef, *states = split(node, *filters, graph=graph)
    if len(states) == 1:
        return GraphState(gdef, states[0])
    return tuple(GraphState(gdef, s) for s in states)


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
