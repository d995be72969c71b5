"""``nnx.jit_partial`` and ``nnx.cached_partial``: functions with some leading arguments (models, optimizers)
bound once (mirror ``flax.nnx.jit_partial`` and ``flax.nnx.cached_partial``).

The bound arguments are taken apart once, at construction, into their
Variables (graph mode: ``nnx.split``; tree mode: as a pytree).  Each call
passes the Variables' current values into one ``fluxion.jit``-compiled
function, which rebuilds the bound arguments from them, calls the function,
and returns the new values, written back into the original Variables.  So
values may change between calls without recompiling, while the structure of
the bound arguments is fixed.

Differences from Flax 0.12: shardings are accepted and passed to
``fluxion.jit`` (single device); Variable metadata changed inside the call is
not written back.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion
from fluxion import tree_util

from .graph import graphdef, merge, split
from .modes import resolve_graph, resolve_graph_updates
from .pytreelib import Pytree
from .state import from_flat_state, to_flat_state
from .variables import Variable


def _is_variable(x: Any) -> bool:
    return isinstance(x, Variable)


class JitPartialWrapped:
    """What :func:`jit_partial` returns: call it with the remaining arguments."""

    def __init__(self, fun: Callable, partial_args: tuple, graph: bool, jit_kwargs: dict):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.partial_args = partial_args
        graphdef, state = split(partial_args, graph=graph)
        flat = to_flat_state(state)
        self._graphdef = graphdef
        self._paths = tuple(flat.paths)
        # The live leaves (Variables, or arrays held directly): their values are what each call passes in.
        self._leaves = list(flat.leaves)
        self._jitted = fluxion.jit(self._call_inside, **jit_kwargs)

    def _call_inside(self, leaves: list, *args: Any, **kwargs: Any) -> tuple:
        if any(_is_variable(x) for x in tree_util.tree_leaves((args, kwargs), is_leaf=_is_variable)):
            raise ValueError('Found Variable in non-partial arguments. jit_partial only supports Variables in '
                             'partial arguments.')
        bound = merge(self._graphdef, from_flat_state(list(zip(self._paths, leaves))))
        out = self.fun(*bound, *args, **kwargs)
        return out, [x.get_value() if _is_variable(x) else x for x in leaves]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out, values = self._jitted(self._leaves, *args, **kwargs)
        for leaf, value in zip(self._leaves, values):
            if _is_variable(leaf):
                leaf.set_value(value)
        return out

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """The output's shapes and dtypes, without running (the bound Variables are left unchanged)."""
        return fluxion.eval_shape(lambda *a, **k: self._call_inside(*a, **k)[0], self._leaves, *args, **kwargs)


def jit_partial(fun: Callable, *partial_args: Any, in_shardings: Any = None, out_shardings: Any = None,
                static_argnums: int | tuple | None = None, static_argnames: str | tuple | None = None,
                donate_argnums: int | tuple | None = None, donate_argnames: str | tuple | None = None,
                keep_unused: bool = False, device: Any = None, backend: Any = None, inline: bool = False,
                graph: bool | None = None, graph_updates: bool | None = None) -> JitPartialWrapped:
    """``fun`` compiled with ``partial_args`` bound as its first positional arguments.

    ``static_argnums``/``donate_argnums`` count the bound arguments as one
    argument at position 0 (as in Flax), so the first runtime argument is 1.
    Mutations of the bound Variables inside ``fun`` reach the originals.
    ``graph`` (default ``set_graph_mode``'s value) chooses graph or tree mode
    for taking the bound arguments apart; graph mode needs
    ``graph_updates=False`` (or ``set_graph_updates(False)``).

    Raises:
      ValueError: graph mode with graph updates on; in tree mode, a Variable shared by the bound arguments;
        (on call) a Variable among the runtime arguments.
    """
    graph = resolve_graph(graph)
    if graph and resolve_graph_updates(graph_updates):
        raise ValueError('`graph_updates` not supported by `jit_partial`')
    from .spmd import StateSharding
    for name, shardings in (('in_shardings', in_shardings), ('out_shardings', out_shardings)):
        if any(isinstance(x, StateSharding) for x in tree_util.tree_leaves(
                shardings, is_leaf=lambda x: isinstance(x, StateSharding))):
            raise ValueError(f'`{name}` cannot contain `StateSharding` objects when `graph=False` or '
                             '`graph_updates=False`. Consider the following options:\n\n'
                             f'1. Drop the StateSharding from `{name}`.\n'
                             '2. Use nnx.jit with its default graph mode (it accepts StateSharding).')
    jit_kwargs = dict(in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
                      static_argnames=static_argnames, donate_argnums=donate_argnums,
                      donate_argnames=donate_argnames, keep_unused=keep_unused, device=device, backend=backend,
                      inline=inline)
    return JitPartialWrapped(fun, partial_args, graph, jit_kwargs)


def cached_partial(f: Callable, *cached_args: Any, graph: bool | None = None,
                   graph_updates: bool | None = None) -> Callable:
    """``functools.partial(f, *cached_args)`` for an ``nnx``-transformed ``f`` (e.g. an ``nnx.jit`` train step)
    whose bound graph nodes must keep their structure.

    As in Flax, the bound nodes are replaced by copies that share their
    Variables (so state updates made by ``f`` reach the originals' Variables,
    while the originals' Python objects are not touched); after each call the
    copies' GraphDefs must equal the ones at construction.

    Raises:
      ValueError: tree mode or ``graph_updates=False`` (graph mode with updates only, as in Flax); (on call)
        ``f`` changed the graph structure or a static attribute of a bound node.

    Difference from Flax 0.12: fluxion's ``nnx.jit`` keys its cache on the
    GraphDef, so no traversal cache is threaded into ``f``; the structure check
    runs after the call (the copies are already changed when it raises).
    """
    if not resolve_graph(graph) or not resolve_graph_updates(graph_updates):
        raise ValueError('cached_partial is a graph-mode-only API and requires graph_updates=True.')
    # One split/merge of all bound arguments together: sharing between them survives, and merge reuses the
    # state's Variable objects, so the copies share the originals' Variables.
    bound = merge(*split(tuple(cached_args)))
    recorded = [(i, graphdef(x)) for i, x in enumerate(bound) if isinstance(x, (Pytree, Variable))]

    def check() -> None:
        for i, gdef in recorded:
            if graphdef(bound[i]) != gdef:
                raise ValueError('The graph structure of a node added to cached_partial was mutated inside the '
                                 f'transformation, this is not allowed.\nNode: {bound[i]!r}')

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = f(*bound, *args, **kwargs)
        check()
        return out

    return wrapper
