"""Sharding annotations on NNX Variables (mirrors ``flax.nnx.spmd`` and the eager-sharding switch of
``flax.nnx.variablelib``).

A Variable is annotated through its ``out_sharding`` metadata: a tuple with one
entry per array dimension, each a mesh axis name, a logical axis name (mapped
to mesh axes by :func:`logical_axis_rules` or the Variable's own
``sharding_rules`` metadata) or ``None`` (replicated).  :func:`with_partitioning`
attaches it at initialisation; :func:`get_partition_spec` and
:func:`get_named_sharding` read it back from a State as
:class:`fluxion.sharding.PartitionSpec` / :class:`~fluxion.sharding.NamedSharding`
leaves.  With :func:`use_eager_sharding` on (Flax's default) a Variable created
with ``out_sharding`` is placed on its mesh at once (``fluxion.device_put``);
without a mesh that is a ``ValueError``, as in Flax.

Sharding never changes values: fluxion keeps one global buffer per array, so
every program computes what the unsharded program computes.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import fluxion
from fluxion import tree_util
from fluxion.sharding import NamedSharding, PartitionSpec, get_abstract_mesh, set_mesh

from ..linen import get_logical_axis_rules
from ..linen import logical_axis_rules as logical_axis_rules
from .variables import Variable, with_metadata

#: The ``transform_metadata`` key naming the mesh axis a lifted transform (vmap/scan) adds to ``out_sharding``.
PARTITION_NAME = 'partition_name'


# -- the eager-sharding switch ---------------------------------------------------------------------------------

class _Stack(threading.local):
    def __init__(self) -> None:
        self.values: list[bool] = []


_EAGER = _Stack()


class use_eager_sharding:  # noqa: N801 (Flax's name)
    """Sets whether new Variables with ``out_sharding`` metadata are placed on their mesh at creation.

    Calling it sets the value (for the thread) at once; used as a context
    manager it restores the previous value on exit; used as a decorator the
    value holds only while the decorated function runs (and the call itself
    changes nothing).  The default is ``True`` (Flax's ``flax_always_shard_variable``).
    """

    def __init__(self, value: bool, /):
        stack = _EAGER.values
        self.prev_value = stack[-1] if stack else None
        if stack:
            stack[-1] = value
        else:
            stack.append(value)
        self.new_value = value

    def __enter__(self) -> use_eager_sharding:
        if self.prev_value is not None:
            _EAGER.values.insert(-1, self.prev_value)
        return self

    def __exit__(self, *exc: Any) -> None:
        _EAGER.values.pop()

    def __call__(self, f: Callable) -> Callable:
        # As a decorator the constructor's global change is undone; the value applies only inside calls.
        _EAGER.values.pop()
        if self.prev_value is not None:
            _EAGER.values.append(self.prev_value)

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            _EAGER.values.append(self.new_value)
            try:
                return f(*args, **kwargs)
            finally:
                _EAGER.values.pop()
        return wrapper


def using_eager_sharding() -> bool:
    """Whether Variables created now are eagerly sharded (see :class:`use_eager_sharding`)."""
    return _EAGER.values[-1] if _EAGER.values else True


# -- specs from metadata -------------------------------------------------------------------------------------------

def _composite_rules(context: Any, local: Any) -> tuple:
    rules = dict(context or ())
    for alias, value in local or ():
        if alias in rules and rules[alias] != value:
            raise ValueError(f'Inconsistent logical axis annotations for {alias}: {rules[alias]} vs {value}')
        rules[alias] = value
    return tuple(rules.items())


def _spec_from_names(names: Any, metadata: dict) -> PartitionSpec:
    if isinstance(names, PartitionSpec):
        names = tuple(names)
    context = get_logical_axis_rules()
    if context or 'sharding_rules' in metadata:
        rules = dict(_composite_rules(context, metadata.get('sharding_rules', ())))
        names = tuple(rules.get(str(n), n) if n else n for n in names)
    return PartitionSpec(*names)


def get_var_pspec(v: Variable) -> PartitionSpec | None:
    """The PartitionSpec of one Variable: from ``out_sharding`` (through the axis rules), else ``P()`` for an
    array value, else ``None``."""
    metadata = v.get_metadata()
    if metadata.get('out_sharding'):
        return _spec_from_names(metadata['out_sharding'], metadata)
    if hasattr(v.get_value(), 'shape'):
        return PartitionSpec()
    return None


def _is_variable(x: Any) -> bool:
    return isinstance(x, Variable)


def get_partition_spec(tree: Any) -> Any:
    """The same tree (e.g. a State) with each Variable's value replaced by its :class:`PartitionSpec`.

    Variables stay Variables of the same type (holding the spec); bare arrays
    become ``P()``; anything else becomes ``None``.
    """
    def spec(x: Any) -> Any:
        if isinstance(x, Variable):
            return x.replace(get_var_pspec(x))
        return PartitionSpec() if hasattr(x, 'shape') else None
    return tree_util.tree_map(spec, tree, is_leaf=_is_variable)


def get_named_sharding(tree: Any, mesh: Any) -> Any:
    """Like :func:`get_partition_spec` with each spec turned into ``NamedSharding(mesh, spec)``."""
    def named(x: Any) -> Any:
        if isinstance(x, Variable):
            return x.replace(NamedSharding(mesh, x.get_value()))
        return NamedSharding(mesh, x)
    specs = get_partition_spec(tree)
    return tree_util.tree_map(named, specs, is_leaf=lambda x: isinstance(x, (Variable, PartitionSpec)))


def with_partitioning(initializer: Callable, sharding: Any, mesh: Any = None, **metadata: Any) -> Callable:
    """Wraps an initializer so the Variable built from its output gets ``out_sharding=sharding`` (and ``mesh``,
    and any other ``metadata``) as metadata."""
    return with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)


def shard_value(value: Any, out_sharding: Any, sharding_rules: Any, mesh: Any) -> Any:
    """Places ``value`` on ``mesh`` (or the current mesh) as ``out_sharding`` says; the value is unchanged.

    Raises:
      ValueError: no mesh is given and none is set (``fluxion.set_mesh``).
    """
    if not out_sharding:
        return value
    if isinstance(out_sharding, NamedSharding):
        return fluxion.device_put(value, out_sharding)
    if mesh is None:
        current = get_abstract_mesh()
        mesh = fluxion.sharding.get_mesh() if current.axis_names else None
    if mesh is None:
        raise ValueError('An auto mesh context or metadata is required if creating a variable with annotation '
                         f'out_sharding={PartitionSpec(*out_sharding)}. For more guidance, see '
                         'https://flax.readthedocs.io/en/latest/flip/4844-var-eager-sharding.html.')
    spec = _spec_from_names(out_sharding, {'sharding_rules': sharding_rules} if sharding_rules else {})
    return fluxion.device_put(value, NamedSharding(mesh, spec))


def maybe_shard_new_variable(value: Any, metadata: dict) -> Any:
    """The eager-sharding step of Variable creation: shard ``value`` if eager sharding is on and
    ``metadata`` has ``out_sharding`` (abstract values such as ShapeDtypeStructs are left alone)."""
    if not metadata.get('out_sharding') or not metadata.get('eager_sharding', using_eager_sharding()):
        return value
    if not hasattr(value, 'shape') or isinstance(value, fluxion.ShapeDtypeStruct):
        return value
    return shard_value(value, metadata['out_sharding'], metadata.get('sharding_rules'), metadata.get('mesh'))


# -- abstract models -----------------------------------------------------------------------------------------------

def as_abstract(tree: Any, graph: Any = None) -> Any:
    """A copy of the graph whose abstract Variables (ShapeDtypeStruct values without a sharding) that carry
    ``out_sharding`` get a ShapeDtypeStruct with ``NamedSharding(mesh, spec)`` (``mesh`` metadata, else the
    current abstract mesh)."""
    from .graph import map as graph_map

    def add(_path: Any, x: Any) -> Any:
        value = x.get_value() if isinstance(x, Variable) else None
        if (isinstance(x, Variable) and hasattr(value, 'shape') and hasattr(value, 'dtype')
                and getattr(value, 'sharding', None) is None and 'out_sharding' in x.get_metadata()):
            mesh = x.get_metadata().get('mesh') or get_abstract_mesh()
            sharding = NamedSharding(mesh, get_var_pspec(x))
            return x.replace(fluxion.ShapeDtypeStruct(value.shape, value.dtype, sharding=sharding))
        return x
    return graph_map(add, tree)


def abstract_with_sharding(tree: Any, graph: Any = None) -> Any:
    """Deprecated name of :func:`as_abstract` (Flax keeps it as a deprecated alias)."""
    return as_abstract(tree, graph=graph)


def get_abstract_model(init_fn: Callable, mesh: Any, *, graph: Any = None) -> tuple:
    """``(graphdef, abstract_state)`` of the model ``init_fn()`` builds, without computing it: the state's
    leaves are Variables holding ShapeDtypeStructs with the ``NamedSharding`` their metadata gives on ``mesh``."""
    from .graph import split
    from .transforms.compilation import eval_shape
    with set_mesh(mesh):
        gdef, abs_state = split(eval_shape(init_fn))
        shardings = get_named_sharding(abs_state, mesh)
        abs_state = tree_util.tree_map(
            lambda a, s: fluxion.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abs_state, shardings)
    return gdef, abs_state


# -- shardings per filter and lifted-axis metadata -----------------------------------------------------------------

class StateSharding:
    """A sharding per Variable filter, as an ``in_shardings``/``out_shardings`` prefix for a State.

    ``StateSharding({nnx.Param: s1, ...: s2})`` (or an iterable of pairs)
    gives each Variable the sharding of the first filter it matches;
    :meth:`map_prefix` resolves one ``(path, variable)``.  ``nnx.jit`` accepts
    shardings but fluxion runs one global buffer per array, so they never change values.
    """

    def __init__(self, filter_sharding: Any, /):
        from .state import State, to_flat_state
        if isinstance(filter_sharding, State):
            # One path filter per leaf: the leaf's value is its sharding.
            filter_sharding = [(_path_filter(p), v.get_value() if isinstance(v, Variable) else v)
                               for p, v in to_flat_state(filter_sharding)]
        items = tuple(filter_sharding.items() if hasattr(filter_sharding, 'items') else filter_sharding)
        self._filters = tuple(f for f, _ in items)
        self._shardings = tuple(s for _, s in items)

    @property
    def filters(self) -> tuple:
        return self._filters

    @property
    def shardings(self) -> tuple:
        return self._shardings

    def map_prefix(self, path: tuple, variable: Any) -> Any:
        """The sharding of the first filter matching ``(path, variable)``.

        Raises:
          ValueError: no filter matches.
        """
        from .filters import to_predicate
        for f, sharding in zip(self._filters, self._shardings):
            if to_predicate(f)(path, variable):
                return sharding
        raise ValueError(f'No axis found for path={path!r}, variable={variable!r}')

    def __repr__(self) -> str:
        return f'StateSharding({dict(zip(self._filters, self._shardings))})'

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, StateSharding) and self._filters == other._filters
                and self._shardings == other._shardings)

    def __hash__(self) -> int:
        return hash((self._filters, self._shardings))


def _path_filter(path: tuple) -> Callable:
    def matches(p: tuple, _x: Any) -> bool:
        return tuple(p) == tuple(path)
    return matches


def _edit_axis(tree: Any, index: int, name: Any, insert: bool, extra: dict | None = None) -> None:
    """Inserts ``name`` at ``index`` of (or removes it from) the ``out_sharding`` of each Variable in ``tree``
    (and, for each ``key: value`` of ``extra``, ``value`` in a tuple-valued ``key`` metadata of the Variable).

    Raises:
      ValueError: removing, the entry at ``index`` is not ``name``; nothing is changed then.
    """
    from .graph import is_graph_node, iter_graph
    leaves = tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, Variable) or is_graph_node(x))
    seen: set = set()
    edits = []
    fields = [('out_sharding', name)] + list((extra or {}).items())
    for leaf in leaves:
        found = [v for _, v in iter_graph(leaf) if isinstance(v, Variable)] if is_graph_node(leaf) else [leaf]
        for v in found:
            if not isinstance(v, Variable) or id(v) in seen:
                continue
            seen.add(id(v))
            for key, value in fields:
                names = v.get_metadata().get(key)
                if not names or not isinstance(names, tuple):
                    continue
                names = list(names)
                if insert:
                    names += [None] * (index - len(names))
                    names.insert(index, value)
                else:
                    removed = names.pop(index)
                    if removed != value:
                        raise ValueError(f'Expected to remove {value!r} at index {index} from '
                                         f'{tuple(v.get_metadata()[key])!r}, but found {removed!r}.')
                edits.append((v, key, tuple(names)))
    # Validate every Variable before changing any, so a bad axis leaves the metadata untouched.
    for v, key, names in edits:
        v.set_metadata(**{key: names})


def _partition_and_rest(transform_metadata: Any) -> tuple:
    if PARTITION_NAME not in transform_metadata:
        raise ValueError('Trying to transform a Partitioned variable but "partition_name" is not specified in '
                         f'transform_metadata: {transform_metadata}')
    rest = dict(transform_metadata)
    return rest.pop(PARTITION_NAME), rest


def add_axis(tree: Any, index: int, transform_metadata: Any) -> Any:
    """Inserts ``transform_metadata[PARTITION_NAME]`` at ``index`` of the ``out_sharding`` of every Variable in
    ``tree`` (in place; returns ``tree``), as a lifted transform does for the axis it adds.

    Raises:
      ValueError: ``transform_metadata`` has no ``PARTITION_NAME``.
    """
    name, rest = _partition_and_rest(transform_metadata)
    _edit_axis(tree, index, name, insert=True, extra=rest)
    return tree


def remove_axis(tree: Any, index: int, transform_metadata: Any) -> Any:
    """The inverse of :func:`add_axis`.

    Raises:
      ValueError: no ``PARTITION_NAME``, or a Variable's entry at ``index`` is not that name.
    """
    name, rest = _partition_and_rest(transform_metadata)
    _edit_axis(tree, index, name, insert=False, extra=rest)
    return tree


def _apply_axes(values: Any, axes: Any, name: Any, insert: bool) -> None:
    if isinstance(axes, int):
        _edit_axis(values, axes, name, insert)
    elif isinstance(axes, (tuple, list)) and isinstance(values, (tuple, list)):
        if len(axes) != len(values):
            raise ValueError(f'transform_metadata: axes {axes!r} do not match {len(values)} values')
        for v, a in zip(values, axes):
            _apply_axes(v, a, name, insert)
    elif axes is not None:
        raise TypeError(f'transform_metadata: axes must be int, None or a tuple of them, got {axes!r}')


def transform_metadata(f: Any = None, *, in_axes: Any = 0, out_axes: Any = 0, partition: str | None,
                       graph: Any = None) -> Any:
    """Runs ``f`` with the lifted axis taken out of the sharding metadata of its arguments' Variables.

    For an argument with axis ``i`` (from ``in_axes``), each Variable's
    ``out_sharding`` loses its entry ``i``, which must be ``partition``
    (else ``ValueError``); after ``f`` returns, ``partition`` is put back at
    ``i`` on the arguments and inserted at ``out_axes`` on the output's
    Variables.  This is how a lifted transform (vmap/scan over stacked layers)
    keeps sharding names in step with array ranks.  Usable as a decorator.
    """
    if f is None:
        return functools.partial(transform_metadata, in_axes=in_axes, out_axes=out_axes, partition=partition,
                                 graph=graph)

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        _apply_axes(args, tuple(axes), partition, insert=False)
        try:
            out = f(*args)
        finally:
            _apply_axes(args, tuple(axes), partition, insert=True)
        _apply_axes(out, out_axes, partition, insert=True)
        return out

    return wrapper
