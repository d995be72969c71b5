"""Container modules Sequential, List, Dict and the functional TrainState (mirrors ``flax.nnx.helpers``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion.flax import struct
from fluxion.optax import apply_updates

from .graph import GraphDef
from .module import Module
from .pytreelib import data


class Sequential(Module):
    """Calls its layers in order; the first gets all arguments, each later one the previous output.

    ``Sequential()`` with no layers returns its input unchanged (a single
    positional argument) or the arguments as a tuple.
    """

    def __init__(self, *fns: Any):
        self.layers = data(list(fns))

    def __call__(self, *args: Any, rngs: Any = None, **kwargs: Any) -> Any:
        output: Any = args
        if not self.layers:
            return args[0] if len(args) == 1 else args
        for i, f in enumerate(self.layers):
            if not callable(f):
                raise TypeError(f'Sequential layer {i} is not callable: {type(f).__name__}')
            if rngs is not None:
                kwargs['rngs'] = rngs
            output = f(*args, **kwargs) if i == 0 else f(output)
            if i == 0:
                kwargs = {}
        return output


class List(Module):
    """A list of submodules/values stored as a module; element ``i`` has state path ``(i, ...)`` as in Flax.

    Elements live in the instance ``__dict__`` under int keys, which is what
    gives them int paths in the graph.
    """

    def __init__(self, it: Any = ()):
        for i, v in enumerate(it):
            vars(self)[i] = v

    def _indices(self) -> list[int]:
        return sorted(k for k in vars(self) if isinstance(k, int))

    def __len__(self) -> int:
        return len(self._indices())

    def _norm(self, i: int) -> int:
        n = len(self)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f'List index {i} out of range for length {n}')
        return j

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [vars(self)[j] for j in range(len(self))[i]]
        return vars(self)[self._norm(i)]

    def __setitem__(self, i: int, v: Any) -> None:
        vars(self)[self._norm(i)] = v

    def __iter__(self):
        return (vars(self)[j] for j in range(len(self)))

    def append(self, v: Any) -> None:
        """Adds ``v`` at index ``len(self)``."""
        vars(self)[len(self)] = v

    def extend(self, values: Any) -> None:
        """Appends each of ``values``."""
        for v in values:
            self.append(v)


class Dict(Module):
    """A module whose attributes are set from a mapping; supports ``d[key]`` and iteration over keys."""

    def __init__(self, *args: Any, **kwargs: Any):
        for k, v in dict(*args, **kwargs).items():
            setattr(self, k, v)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __iter__(self):
        return iter(vars(self))

    def __len__(self) -> int:
        return len(vars(self))

    def items(self):
        """The ``(key, value)`` pairs of the entries."""
        return vars(self).items()


class TrainState(struct.PyTreeNode):
    """A functional train state for a split module: ``graphdef``, ``params`` (a State), ``opt_state``, ``step``.

    ``TrainState.create(graphdef, params=params, tx=tx)`` initialises the
    optimizer; ``state.apply('params', 'batch_stats')(x)`` merges the named
    States with the GraphDef and calls the module (``(out, (graphdef, new_state))``);
    ``apply_gradients(grads)`` returns the updated state.  It is a pytree, so it
    passes through ``fluxion.jit`` (``tx`` is static).
    """
    graphdef: GraphDef
    params: Any
    opt_state: Any
    step: Any
    tx: Any = struct.field(pytree_node=False)

    @classmethod
    def create(cls, graphdef: GraphDef, *, params: Any, tx: Any, step: int = 0, **kwargs: Any) -> TrainState:
        return cls(graphdef=graphdef, params=params, opt_state=tx.init(params), step=jnp.asarray(step), tx=tx,
                   **kwargs)

    def apply(self, state: Any, *states: Any) -> Any:
        """Calls the module built from ``graphdef`` and the given States (or names of State fields).

        Raises:
          TypeError: a named field is not a State.
        """
        from .state import State
        resolved = []
        for s in (state, *states):
            if isinstance(s, str):
                value = getattr(self, s)
                if not isinstance(value, State):
                    raise TypeError(f'Expected {type(self).__name__}.{s} to be a State, got {type(value)}')
                s = value
            resolved.append(s)
        return self.graphdef.apply(*resolved)

    def apply_gradients(self, grads: Any, **kwargs: Any) -> TrainState:
        """One optimizer step: new params and opt_state, ``step + 1`` (other fields from ``kwargs``)."""
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        return self.replace(params=apply_updates(self.params, updates), opt_state=opt_state, step=self.step + 1,
                            **kwargs)
