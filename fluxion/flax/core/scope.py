"""The functional core under ``fluxion.flax.linen``: scopes (mirrors ``flax.core.scope``).

A :class:`Scope` is one node of a module tree during a single ``init`` or
``apply`` call. All scopes of a call share one *root state*:

* ``variables``: a dict ``{collection: nested dict}``, e.g.
  ``{'params': {'Dense_0': {'kernel': ..., 'bias': ...}}}``. A scope at path
  ``('Dense_0',)`` reads and writes the sub-dict at that path in every
  collection.
* ``mutable``: a collection filter saying which collections may be written.
* ``flags``: call-wide facts such as ``initializing``.

Each scope also owns PRNG streams (``'params'``, ``'dropout'``, ...) and a
per-stream counter. Key derivation reproduces Flax 0.12 exactly, so the same
module and seed give bit-identical parameters:

    key(scope at path p, n-th ``make_rng(stream)`` call in that scope)
      = random.fold_in(root_key[stream], H(p + (n,)))

where ``H`` is the first four bytes (big endian) of the SHA-1 digest of the
concatenation of every element of ``p + (n,)``: strings as UTF-8, integers as
their minimal big-endian byte string. Counters start at 0 and are incremented
before use, so the first call folds in ``n = 1``. The counters belong to the
scope *path*, not to a Scope object: a child re-created with the same name (a
``@compact`` method called twice) continues the counters of its previous
incarnation, and so do its own children at any depth, so every call draws
fresh keys (Flax keeps them the same way, nested in ``Scope.rng_counters``).

Nothing here knows about Modules: ``fluxion.flax.linen.module`` builds the
dataclass sugar on top of :func:`bind`, :meth:`Scope.push`,
:meth:`Scope.param`, :meth:`Scope.variable` and :meth:`Scope.make_rng`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional, Union

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import random, tree_util

from .. import errors
from . import meta
from .frozen_dict import FrozenDict

Array = Any
PRNGKey = Any
# A collection filter: True (all), False (none), a collection name, a
# DenyList, or an iterable of filters (their union).
Filter = Union[bool, str, 'DenyList', Iterable[Any]]
CollectionFilter = Filter


# ----------------------------------------------------------------------------
# Collection filters.
# ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DenyList:
    """A filter that matches every collection *except* those in ``deny``.

    ``init`` uses ``DenyList('intermediates')`` by default: everything a
    module creates is returned except sown intermediates.

    Attributes:
        deny: a filter (name, list of names, ...) of the excluded collections.
    """

    deny: Filter


@dataclasses.dataclass(frozen=True)
class AllOf:
    """A filter matching the collections matched by every one of ``filters`` (an intersection).

    Lifted transforms use it to restrict an inner scope's mutability to what
    both the outer call and the transform allow.
    """

    filters: tuple


def in_filter(filter_like: Filter, col: str) -> bool:
    """Returns whether collection ``col`` matches ``filter_like``.

    Raises:
        TypeError: if ``filter_like`` is not a bool, str, DenyList or iterable.
    """
    if isinstance(filter_like, bool):
        return filter_like
    if isinstance(filter_like, str):
        return col == filter_like
    if isinstance(filter_like, DenyList):
        return not in_filter(filter_like.deny, col)
    if isinstance(filter_like, AllOf):
        return all(in_filter(f, col) for f in filter_like.filters)
    if isinstance(filter_like, Iterable):
        return any(in_filter(f, col) for f in filter_like)
    raise TypeError(
        f'Invalid collection filter {filter_like!r} (type {type(filter_like).__name__}); '
        'expected a bool, a collection name, a DenyList or a list of those.')


# ----------------------------------------------------------------------------
# PRNG derivation.
# ----------------------------------------------------------------------------


def _static_hash(data: tuple) -> int:
    """Hashes a tuple of strings and non-negative ints to a uint32 (Flax 0.12 recipe)."""
    digest = hashlib.sha1()
    for item in data:
        if isinstance(item, str):
            digest.update(item.encode('utf-8'))
        elif isinstance(item, int) and not isinstance(item, bool):
            digest.update(item.to_bytes((item.bit_length() + 7) // 8, byteorder='big'))
        else:
            raise ValueError(f'Only str and int can be folded into a PRNG key, got {item!r}.')
    return int.from_bytes(digest.digest()[:4], byteorder='big')


def fold_in_static(key: PRNGKey, data: tuple) -> PRNGKey:
    """Folds a tuple of names/counters into ``key``; the empty tuple returns ``key``.

    Args:
        key: a ``uint32[2]`` key or a typed key array.
        data: strings and non-negative ints, hashed with :func:`_static_hash`.

    Returns:
        ``random.fold_in(key, uint32 hash of data)``.
    """
    if not data:
        return key
    return random.fold_in(key, jnp.uint32(_static_hash(tuple(data))))


class _RngCounters:
    """How many keys each stream has drawn at one scope path, and the same for each child path.

    One instance per path for a whole ``init``/``apply`` call: re-created
    scopes at that path share it (see :meth:`Scope.push`).
    """

    __slots__ = ('children', 'drawn')

    def __init__(self) -> None:
        self.drawn: dict[str, int] = {}
        self.children: dict[str, _RngCounters] = {}

    def copy(self) -> '_RngCounters':
        """A deep copy (lifted transforms trace a body from a saved counter state)."""
        out = _RngCounters()
        out.drawn = dict(self.drawn)
        out.children = {name: c.copy() for name, c in self.children.items()}
        return out

    def assign(self, other: '_RngCounters') -> None:
        """Takes over the state of ``other`` in place (shared references see it)."""
        self.drawn = dict(other.drawn)
        for name, c in other.children.items():
            self.child(name).assign(c)

    def child(self, name: str) -> '_RngCounters':
        counters = self.children.get(name)
        if counters is None:
            counters = self.children[name] = _RngCounters()
        return counters


@dataclasses.dataclass(frozen=True)
class _RngStream:
    """A root key plus the scope names still to be folded into it (lazily)."""

    key: PRNGKey
    path: tuple = ()

    def child(self, name: str) -> '_RngStream':
        return _RngStream(self.key, self.path + (name,))


def is_valid_rng(rng: Any) -> bool:
    """Whether ``rng`` is a ``uint32[2]`` key or a scalar typed key array."""
    shape = getattr(rng, 'shape', None)
    dtype = getattr(rng, 'dtype', None)
    if shape is None or dtype is None:
        return False
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        # Typed key arrays (random.key) have a key dtype that NumPy cannot interpret.
        return tuple(shape) == ()
    return tuple(shape) == (2,) and np_dtype == np.uint32


def _check_rngs(rngs: Any) -> dict:
    if rngs is None:
        return {}
    if not isinstance(rngs, Mapping):
        raise errors.InvalidRngError(
            f'rngs must be a dict mapping stream names to PRNG keys, got {type(rngs).__name__}.')
    out = {}
    for name, key in rngs.items():
        if not isinstance(name, str):
            raise errors.InvalidRngError(f'PRNG stream names must be strings, got {name!r}.')
        if not is_valid_rng(key):
            raise errors.InvalidRngError(
                f'The PRNG key for stream "{name}" must be a uint32[2] array from '
                f'random.PRNGKey or a typed key from random.key; got {_describe(key)}.')
        out[name] = _RngStream(key)
    return out


def _describe(value: Any) -> str:
    if hasattr(value, 'shape') and hasattr(value, 'dtype'):
        return f'an array of shape {tuple(value.shape)} and dtype {value.dtype}'
    return f'{value!r} (type {type(value).__name__})'


# ----------------------------------------------------------------------------
# Variables.
# ----------------------------------------------------------------------------


class Variable:
    """A handle on one variable: reading or writing ``.value`` goes through its scope.

    Attributes:
        scope: the scope that owns the variable.
        collection: the collection name, e.g. ``'batch_stats'``.
        name: the variable name within the scope.
        unbox: if True, a boxed value (``Partitioned``, ...) reads as its bare
            value, and writing a bare value keeps the stored box around it.
    """

    def __init__(self, scope: 'Scope', collection: str, name: str, unbox: bool = True):
        self.scope = scope
        self.collection = collection
        self.name = name
        self.unbox = unbox

    @property
    def value(self) -> Any:
        """The current value; raises ScopeVariableNotFoundError if it was never set."""
        value = self.scope.get_variable(self.collection, self.name, _MISSING_OK)
        return meta.unbox(value) if self.unbox else value

    @value.setter
    def value(self, value: Any) -> None:
        if self.unbox and self.scope.has_variable(self.collection, self.name):
            current = self.scope.get_variable(self.collection, self.name)
            boxed = tree_util.tree_leaves(current, is_leaf=meta.is_box)
            same = (tree_util.tree_structure(current, is_leaf=meta.is_box)
                    == tree_util.tree_structure(value, is_leaf=meta.is_box))
            if same and any(meta.is_box(x) for x in boxed):
                value = meta.replace_boxed(current, value)
        self.scope.put_variable(self.collection, self.name, value)

    def is_mutable(self) -> bool:
        """Whether the variable's collection may be written in this call."""
        return self.scope.is_mutable_collection(self.collection)

    def __repr__(self) -> str:
        return f'Variable(collection={self.collection!r}, name={self.name!r}, value={self.value!r})'


class _MissingOk:
    pass


_MISSING_OK = _MissingOk()


def _copy_tree(x: Any) -> Any:
    """Copies the dict structure of a variable tree (leaves are shared)."""
    if isinstance(x, (dict, FrozenDict)):
        return {k: _copy_tree(v) for k, v in x.items()}
    return x


# ----------------------------------------------------------------------------
# Scope.
# ----------------------------------------------------------------------------


class _Root:
    """State shared by every scope of one init/apply call."""

    def __init__(self, variables: dict, mutable: Filter, flags: dict):
        self.variables = variables
        self.mutable = mutable
        self.flags = flags


class Scope:
    """A node of the variable tree for one ``init``/``apply`` call.

    Create the root with :func:`bind`; children with :meth:`push`.

    Attributes:
        name: this scope's name within its parent (None for the root).
        parent: the parent scope (None for the root).
        path: names from the root to this scope, e.g. ``('Encoder', 'Dense_0')``.
    """

    def __init__(self, root: _Root, rngs: dict, rng_counters: _RngCounters,
                 name: Optional[str] = None, parent: Optional['Scope'] = None,
                 path: tuple = ()):
        self._root = root
        self.rngs = rngs
        # Keys drawn so far at this path (and below), shared with every other
        # incarnation of this path in the call, so none repeats a key.
        self.rng_counters = rng_counters
        # name -> set of collections using it (None marks a child scope).
        self.reservations: dict[str, set] = {}
        self.name = name
        self.parent = parent
        self.path = path

    # -- introspection --------------------------------------------------------

    @property
    def root(self) -> 'Scope':
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    @property
    def path_text(self) -> str:
        """The path as ``'/a/b'`` (``'/'`` for the root)."""
        return '/' + '/'.join(self.path)

    @property
    def mutable(self) -> Filter:
        return self._root.mutable

    @property
    def flags(self) -> dict:
        return self._root.flags

    def is_mutable_collection(self, col: str) -> bool:
        """Whether collection ``col`` may be written in this call."""
        return in_filter(self._root.mutable, col)

    # -- naming ---------------------------------------------------------------

    def name_reserved(self, name: str, col: Optional[str] = None) -> bool:
        """Whether ``name`` is taken for a child (col None) or a variable of ``col``.

        A variable may reuse a name in another collection (``BatchNorm`` has
        no clash between ``params/scale`` and ``batch_stats/mean``), but a
        child scope's name excludes everything.
        """
        used = self.reservations.get(name)
        if not used:
            return False
        return None in used or col is None or col in used

    def reserve(self, name: str, col: Optional[str] = None) -> None:
        """Marks ``name`` as used in this scope.

        Raises:
            TypeError: if ``name`` is not a string.
            ValueError: if the name is already reserved (see :meth:`name_reserved`).
        """
        if not isinstance(name, str):
            raise TypeError(f'Scope and variable names must be strings, got {name!r} '
                            f'(type {type(name).__name__}).')
        if self.name_reserved(name, col):
            raise ValueError(f'Duplicate use of name "{name}" in scope "{self.path_text}".')
        self.reservations.setdefault(name, set()).add(col)

    def rewind(self) -> None:
        """Forgets all reserved names, keeping variables and PRNG counters.

        Called after each outermost ``@compact`` call, so that the next call
        re-creates the same names (and finds the same variables).
        """
        self.reservations = {}

    def default_name(self, prefix: str) -> str:
        """Returns ``prefix + str(i)`` for the smallest unreserved i."""
        i = 0
        while f'{prefix}{i}' in self.reservations:
            i += 1
        return f'{prefix}{i}'

    def push(self, name: str, reuse: bool = False) -> 'Scope':
        """Creates the child scope ``name``.

        Args:
            name: the child's name (becomes the next element of the path).
            reuse: if True, an already reserved name is accepted.

        Returns:
            The child scope; it shares this call's variables, mutability and
            flags, and continues the PRNG counters of earlier children of the
            same name.

        Raises:
            ValueError: if ``name`` is reserved and ``reuse`` is False.
        """
        if not (reuse and name in self.reservations):
            self.reserve(name)
        rngs = {stream: rng.child(name) for stream, rng in self.rngs.items()}
        return Scope(self._root, rngs, self.rng_counters.child(name), name=name, parent=self,
                     path=self.path + (name,))

    # -- PRNG ---------------------------------------------------------------

    def has_rng(self, name: str) -> bool:
        """Whether a PRNG stream called ``name`` was provided to this call."""
        return name in self.rngs

    def make_rng(self, name: str = 'params') -> PRNGKey:
        """Draws a new key from stream ``name`` (falls back to ``'params'``).

        Raises:
            InvalidRngError: if neither ``name`` nor ``'params'`` was provided.
        """
        if name not in self.rngs:
            if 'params' not in self.rngs:
                where = self.path_text
                raise errors.InvalidRngError(
                    f'Scope "{where}" needs a PRNG key for stream "{name}", but none was '
                    f'provided: pass rngs={{"{name}": key}} to init()/apply().')
            name = 'params'
        drawn = self.rng_counters.drawn
        drawn[name] = drawn.get(name, 0) + 1
        stream = self.rngs[name]
        return fold_in_static(stream.key, stream.path + (drawn[name],))

    # -- variables ------------------------------------------------------------

    def _collection(self, col: str, create: bool = False) -> Optional[dict]:
        """The sub-dict of ``col`` at this scope's path (created if asked)."""
        tree = self._root.variables.get(col)
        if tree is None:
            if not create:
                return None
            tree = self._root.variables[col] = {}
        for name in self.path:
            sub = tree.get(name)
            if not isinstance(sub, dict):
                if sub is not None:
                    raise ValueError(
                        f'Collection "{col}" holds a leaf at "{name}" where scope '
                        f'"{self.path_text}" expects a dict of variables.')
                if not create:
                    return None
                sub = tree[name] = {}
            tree = sub
        return tree

    def is_collection_empty(self, col: str) -> bool:
        """Whether ``col`` has no variables at (or below) this scope."""
        return not self._collection(col)

    def has_variable(self, col: str, name: str) -> bool:
        """Whether variable ``name`` exists in collection ``col`` of this scope."""
        tree = self._collection(col)
        return tree is not None and name in tree

    def get_variable(self, col: str, name: str, default: Any = None) -> Any:
        """Returns the value of a variable, or ``default`` if it does not exist.

        ``default=_MISSING_OK`` (internal) raises instead of returning.
        """
        tree = self._collection(col)
        if tree is not None and name in tree:
            return tree[name]
        if default is _MISSING_OK:
            if self.is_collection_empty(col):
                raise errors.ScopeCollectionNotFound(col, name, self.path_text)
            raise errors.ScopeVariableNotFoundError(name, col, self.path_text)
        return default

    def put_variable(self, col: str, name: str, value: Any) -> None:
        """Writes a variable.

        Raises:
            ModifyScopeVariableError: if ``col`` is not mutable in this call.
        """
        if not self.is_mutable_collection(col):
            raise errors.ModifyScopeVariableError(col, name, self.path_text)
        self._collection(col, create=True)[name] = value

    def variable(self, col: str, name: str, init_fn: Optional[Callable[..., Any]] = None,
                 *init_args: Any, unbox: bool = True, **init_kwargs: Any) -> Variable:
        """Declares a variable, initializing it with ``init_fn(*init_args)`` if absent.

        Raises:
            ScopeCollectionNotFound / ScopeVariableNotFoundError: if the variable
                is absent and ``col`` is immutable (or ``init_fn`` is None).
        """
        self.reserve(name, col)
        if not self.has_variable(col, name):
            if init_fn is None or not self.is_mutable_collection(col):
                if self.is_collection_empty(col):
                    raise errors.ScopeCollectionNotFound(col, name, self.path_text)
                raise errors.ScopeVariableNotFoundError(name, col, self.path_text)
            self.put_variable(col, name, init_fn(*init_args, **init_kwargs))
        return Variable(self, col, name, unbox=unbox)

    def param(self, name: str, init_fn: Callable[..., Any], *init_args: Any,
              **init_kwargs: Any) -> Any:
        """Returns parameter ``name``, creating it with ``init_fn(key, *init_args)``.

        When the parameter exists, its shape is checked against what
        ``init_fn`` would produce (computed with ``fluxion.eval_shape``, no
        numbers are generated), to catch a module configured differently from
        the one that created the parameters.

        Raises:
            ScopeParamShapeError: existing value and initializer disagree on shape.
            ScopeCollectionNotFound: ``params`` is immutable and empty here.
            ScopeParamNotFoundError: ``params`` is immutable and lacks ``name``.
        """
        self.reserve(name, 'params')
        if self.has_variable('params', name):
            value = self.get_variable('params', name)
            expected = fluxion.eval_shape(
                lambda: init_fn(random.PRNGKey(0), *init_args, **init_kwargs))
            for val, abstract in zip(tree_util.tree_leaves(value),
                                     tree_util.tree_leaves(expected)):
                if tuple(jnp.shape(val)) != tuple(abstract.shape):
                    raise errors.ScopeParamShapeError(
                        name, self.path_text, jnp.shape(val), abstract.shape)
            return value
        if not self.is_mutable_collection('params'):
            if self.is_collection_empty('params'):
                raise errors.ScopeCollectionNotFound('params', name, self.path_text)
            raise errors.ScopeParamNotFoundError(name, self.path_text)
        value = init_fn(self.make_rng('params'), *init_args, **init_kwargs)
        self.put_variable('params', name, value)
        return value

    def variables(self) -> dict:
        """A copy of ``{collection: sub-dict at this path}`` for non-empty collections."""
        out = {}
        for col in self._root.variables:
            tree = self._collection(col)
            if tree:
                out[col] = _copy_tree(tree)
        return out

    def mutable_variables(self) -> dict:
        """A copy of every mutable collection at this path (used as apply's second output)."""
        out = {}
        for col in self._root.variables:
            if self.is_mutable_collection(col):
                tree = self._collection(col)
                if tree is not None:
                    out[col] = _copy_tree(tree)
        return out


# ----------------------------------------------------------------------------
# Boundary: building a root scope, init and apply.
# ----------------------------------------------------------------------------


def _check_variables(variables: Any) -> dict:
    if not isinstance(variables, Mapping):
        raise errors.ApplyScopeInvalidVariablesTypeError(variables)
    for col, tree in variables.items():
        if not isinstance(col, str) or not isinstance(tree, Mapping):
            raise errors.ApplyScopeInvalidVariablesTypeError(variables)
    params = variables.get('params')
    if isinstance(params, Mapping) and 'params' in params:
        raise errors.ApplyScopeInvalidVariablesStructureError(variables)
    return _copy_tree(dict(variables))


def bind(variables: Mapping, rngs: Optional[Mapping] = None, mutable: Filter = False,
         flags: Optional[Mapping] = None) -> Scope:
    """Creates the root scope of a call.

    Args:
        variables: ``{collection: nested dict of arrays}``; never modified (its
            dict structure is copied, the arrays are shared).
        rngs: ``{stream name: key}``.
        mutable: filter of the collections that may be written.
        flags: call-wide flags (``{'initializing': True}`` in ``init``).

    Returns:
        The root Scope.

    Raises:
        ApplyScopeInvalidVariablesTypeError: ``variables`` is not a dict of dicts.
        ApplyScopeInvalidVariablesStructureError: ``{'params': {'params': ...}}``.
        InvalidRngError: a key is not a valid PRNG key.
    """
    root = _Root(_check_variables(variables), mutable, dict(flags or {}))
    return Scope(root, _check_rngs(rngs), _RngCounters())


def apply(fn: Callable[..., Any], mutable: Filter = False,
          flags: Optional[Mapping] = None) -> Callable[..., Any]:
    """Turns ``fn(scope, *args)`` into ``apply_fn(variables, *args, rngs=None)``.

    The returned function gives ``fn``'s output, or ``(output, mutated
    collections)`` when ``mutable`` is not False.
    """
    def wrapper(variables: Mapping, *args: Any, rngs: Optional[Mapping] = None,
                **kwargs: Any) -> Any:
        scope = bind(variables, rngs=rngs, mutable=mutable, flags=flags)
        out = fn(scope, *args, **kwargs)
        if mutable is False:
            return out
        return out, scope.mutable_variables()
    return wrapper


def init(fn: Callable[..., Any], mutable: Filter = True,
         flags: Optional[Mapping] = None) -> Callable[..., Any]:
    """Turns ``fn(scope, *args)`` into ``init_fn(rngs, *args) -> (output, variables)``.

    ``rngs`` is a key (used as the ``'params'`` stream) or a dict of keys.
    """
    def wrapper(rngs: Any, *args: Any, **kwargs: Any) -> tuple[Any, dict]:
        if not isinstance(rngs, Mapping):
            rngs = {'params': rngs}
        all_flags = {**(flags or {}), 'initializing': True}
        return apply(fn, mutable=mutable, flags=all_flags)({}, *args, rngs=rngs, **kwargs)
    return wrapper
