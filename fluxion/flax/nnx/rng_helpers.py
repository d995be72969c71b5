"""``nnx.with_rngs``: a copy of a tree with its RNG streams split, broadcast or forked (mirrors
``flax.nnx.rnglib.with_rngs``)."""

from __future__ import annotations

import functools
from typing import Any

from . import filters as filterlib
from . import graph as graphlib
from .graph import _get_child, _set_child, iter_graph, merge
from .rngs import RngStream
from .transforms._extract import flatten_tree, unflatten_tree

_MISSING: Any = object()


def _rules(spec: Any) -> list:
    if spec is None:
        return []
    if isinstance(spec, (int, tuple)):
        spec = {...: spec}
    return [(f, filterlib.to_predicate(f), v) for f, v in spec.items()]


def with_rngs(node: Any = _MISSING, /, *, split: Any = None, fork: Any = None, broadcast: Any = None,
              only: Any = True, graph: Any = None, graph_updates: Any = None) -> Any:
    """A copy of ``node`` (any pytree holding graph objects) whose ``RngStream`` objects are replaced:
    ``stream.split(shape)`` for those matching ``split`` (an int/tuple for all streams, or
    ``{filter: shape}``), ``stream.broadcast(shape)`` for ``broadcast``, ``stream.fork()`` for ``fork``
    (a filter or a list of filters); streams matching no rule, or not ``only``, stay.  The copy has new
    graph objects but shares the other Variables; drawing the new keys advances the original streams'
    counters.  Without ``node`` it is a decorator applying this to the function's arguments.

    Raises:
      NotImplementedError: graph mode with graph updates (the default), as in Flax.
      ValueError: a stream matches two rules whose filters are both specific (not ``...``/``True``).
    """
    graph = True if graph is None else graph
    graph_updates = True if graph_updates is None else graph_updates
    if graph and graph_updates:
        raise NotImplementedError('graph=True and graph_updates=True is not supported for `with_rngs`')
    if node is _MISSING:
        def decorator(f: Any) -> Any:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = with_rngs((args, kwargs), split=split, fork=fork, broadcast=broadcast, only=only,
                                         graph=graph, graph_updates=False)
                return f(*args, **kwargs)
            return wrapper
        return decorator
    forks = [] if fork is None else [fork] if isinstance(fork, str) or not isinstance(fork, (list, tuple)) \
        else list(fork)
    split_rules, broadcast_rules = _rules(split), _rules(broadcast)
    fork_rules = [(f, filterlib.to_predicate(f), None) for f in forks]
    only_pred = filterlib.to_predicate(only)

    def replacement(path: tuple, stream: RngStream) -> Any:
        matched = {}
        for kind, rules in (('split', split_rules), ('broadcast', broadcast_rules), ('fork', fork_rules)):
            for f, pred, value in rules:
                if pred(path, stream):
                    matched[kind] = (f, value)
                    break
        if len([k for k, (f, _) in matched.items() if f is not ... and f is not True]) > 1:
            lines = '\n'.join(f'  - {k} matches filter {f!r}' for k, (f, _) in matched.items())
            raise ValueError(f'RngStream at path {path} matches multiple rules:\n{lines}')
        if 'split' in matched:
            return stream.split(matched['split'][1])
        if 'broadcast' in matched:
            return stream.broadcast(matched['broadcast'][1])
        if 'fork' in matched:
            return stream.fork()
        return None

    spec, nodes, dyn = flatten_tree(node)
    graphdef, state = graphlib.split(tuple(nodes))
    fresh = merge(graphdef, state)  # new graph objects around the same Variables
    for k, original in enumerate(nodes):
        for path, sub in iter_graph(original):
            if isinstance(sub, RngStream) and path and only_pred(path, sub):
                new = replacement(path, sub)
                if new is not None:
                    parent = fresh[k]
                    for key in path[:-1]:
                        parent = _get_child(parent, key)
                    _set_child(parent, path[-1], new)
    return unflatten_tree(spec, list(fresh), dyn)
