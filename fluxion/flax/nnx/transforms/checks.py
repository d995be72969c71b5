"""``nnx.checkify``: ``fluxion.experimental.checkify`` for functions of Modules."""

from __future__ import annotations

import functools
from typing import Any

from fluxion.experimental import checkify as checkify_lib

from .compilation import JitWrapped


class _CheckifyWrapped(JitWrapped):
    """``nnx.jit``'s graph handling (split, merge, write-back of mutations) around ``checkify`` instead of jit."""

    def __init__(self, fun: Any, errors: Any):
        super().__init__(fun, None, None, None, None, False, False)
        self.errors = errors
        self._last_error: Any = None

    def _make(self, spec: Any, graphdef: Any, static_args: tuple, static_kwargs: tuple) -> tuple:
        pure, cell = self._pure(spec, graphdef, static_args, static_kwargs)
        checked = checkify_lib.checkify(pure, errors=self.errors)

        def run(state: Any, dyn: Any) -> Any:
            err, result = checked(state, dyn)
            self._last_error = err
            return result
        return run, cell

    def __call__(self, *args: Any, **kwargs: Any) -> tuple:
        out = super().__call__(*args, **kwargs)
        err, self._last_error = self._last_error, None
        return err, out


def checkify(f: Any, errors: Any = checkify_lib.user_checks, graph: Any = None, graph_updates: Any = None) -> Any:
    """``f`` returning ``(error, out)``: the ``checkify.check`` failures it made, as a
    :class:`fluxion.experimental.checkify.Error`, next to its output.

    Graph objects among the arguments are handled as by ``nnx.jit`` (their
    mutations reach the caller).  Composes with ``nnx.jit`` outside it.

    Raises:
      NotImplementedError: ``errors`` other than ``user_checks`` (fluxion's checkify offers only those).
    """
    checkify_lib.checkify(lambda: None, errors=errors)  # validate the categories now, as the caller expects
    return functools.wraps(f)(_CheckifyWrapped(f, errors))
