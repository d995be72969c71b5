"""Container modules: Sequential, List, Dict (mirrors ``flax.nnx.helpers``)."""

from __future__ import annotations

from typing import Any

from .module import Module


class Sequential(Module):
    """Calls its layers in order; the first gets all arguments, each later one the previous output.

    ``Sequential()`` with no layers returns its input unchanged (a single
    positional argument) or the arguments as a tuple.
    """

    def __init__(self, *fns: Any):
        self.layers = list(fns)

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
        vars(self)[len(self)] = v

    def extend(self, values: Any) -> None:
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
        return vars(self).items()
