"""`checkify`: user assertions on traced values, returned as a functional error value (mirrors the user-check
part of `jax.experimental.checkify`).

`check(pred, msg, *fmt_args, **fmt_kwargs)` inside a function wrapped by `checkify(f)` records the failure
flag `~pred` and the format arguments as arrays; `checkify(f)(*args)` returns `(err, out)` where `err` is an
:class:`Error` pytree holding them.  Because the error is an ordinary value, `jit(checkify(f))` and
`vmap(checkify(f))` work: under `vmap` the flags are batched and `err.get()` names the failing mapped indices,
as JAX does.  Outside `checkify` a `check` on concrete values raises at once; a `check` being traced without
`checkify` is an error (JAX's message).

Difference from JAX: only user checks (`user_checks`); the automatic categories (NaN, division, index checks)
are not offered. A `check` must run at the level of the `checkify`-wrapped function: a `check` inside a nested
`jit`/`vmap`/`scan` body within `checkify` raises `NotImplementedError` (JAX threads the error through those).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import numpy as np

from . import core
from . import tree_util


class JaxRuntimeError(ValueError):
    """Raised by :meth:`Error.throw` (and by a failing `check` outside `checkify`)."""


class FailedCheckError:
    """The error category of user `check`s (the only member of :data:`user_checks`)."""


user_checks = frozenset({FailedCheckError})

_SUFFIX = ' (`check` failed)'


class Error:
    """The result of checks made under `checkify`: per check (in program order) a failure flag and the
    format arguments.  A pytree (its leaves are the flags and arguments), so it can leave `jit`/`vmap`.

    Methods: `get()` (the message of the first failed check, or None), `get_exception()`, `throw()`.
    """

    def __init__(self, failed: tuple, payloads: tuple, messages: tuple):
        self._failed = tuple(failed)
        self._payloads = tuple(payloads)
        self._messages = tuple(messages)

    def _message_at(self, index: tuple) -> str | None:
        for failed, (args, kwargs), msg in zip(self._failed, self._payloads, self._messages):
            if bool(np.asarray(failed)[index]):
                pick = functools.partial(_pick, index=index)
                return msg.format(*tree_util.tree_map(pick, args), **tree_util.tree_map(pick, kwargs)) + _SUFFIX
        return None

    def get(self) -> str | None:
        """The message of the first failed check (for batched errors, one line per failing mapped index), or None."""
        if not self._failed:
            return None
        shape = np.shape(np.asarray(self._failed[0]))
        if not shape:
            return self._message_at(())
        lines = []
        for index in np.ndindex(*shape):
            msg = self._message_at(index)
            if msg is not None:
                where = index[0] if len(index) == 1 else index
                lines.append(f'at mapped index {where}: {msg}')
        return '\n'.join(lines) or None

    def get_exception(self) -> JaxRuntimeError | None:
        """A :class:`JaxRuntimeError` carrying :meth:`get`'s message, or None if no check failed."""
        msg = self.get()
        return None if msg is None else JaxRuntimeError(msg)

    def throw(self) -> None:
        """Raises :class:`JaxRuntimeError` if a check failed; returns None otherwise."""
        exc = self.get_exception()
        if exc is not None:
            raise exc

    def __repr__(self) -> str:
        msg = self.get() if all(not isinstance(f, core.Tracer) for f in self._failed) else '<traced>'
        return f'Error({msg!r})' if msg is not None else 'Error(No errors)'


def _pick(x: Any, index: tuple) -> Any:
    value = np.asarray(x)
    return value[index] if index else value


tree_util.register_pytree_node(
    Error, lambda e: ((e._failed, e._payloads), e._messages),
    lambda messages, children: Error(children[0], children[1], messages))


class _Collector(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[int, list]] = []


_COLLECTOR = _Collector()


def _check_fmt_args(args: Any) -> None:
    for leaf in tree_util.tree_leaves(args):
        if not (isinstance(leaf, (core.Array, core.Tracer)) or isinstance(leaf, (np.ndarray, np.generic))):
            raise TypeError('Formatting arguments to checkify.check need to be PyTrees of arrays, but got '
                            f'{leaf!r} of type {type(leaf)}.')


def check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """Asserts `pred` (a boolean scalar, possibly traced); `msg.format(*fmt_args, **fmt_kwargs)` describes a failure.

    Under `checkify` the failure is recorded in the returned :class:`Error`; outside it a concrete false `pred`
    raises :class:`JaxRuntimeError` at once.

    Raises:
      TypeError: `pred` is not a boolean scalar, or a format argument is not an array pytree.
      ValueError: called while tracing (jit/vmap/...) without `checkify`.
      NotImplementedError: called inside a transform nested within `checkify` (see the module docstring).
    """
    _check_fmt_args((fmt_args, fmt_kwargs))
    from .numpy.creation import asarray
    from .numpy.ufuncs import logical_not
    pred = asarray(pred)
    if pred.shape != () or pred.dtype != np.bool_:
        raise TypeError(f'check takes a scalar pred as argument, got {pred.dtype}{list(pred.shape)}')
    if not _COLLECTOR.stack:
        if isinstance(pred, core.Tracer) or not core.is_eager():
            raise ValueError('Cannot abstractly evaluate a checkify.check which was not functionalized. This '
                             'probably means you tried to stage (jit/scan/pmap/...) a `check` without '
                             'functionalizing it through `checkify.checkify`.')
        if not bool(pred):
            raise JaxRuntimeError(msg.format(*fmt_args, **fmt_kwargs) + _SUFFIX)
        return
    level, records = _COLLECTOR.stack[-1]
    if core.cur_level() != level:
        raise NotImplementedError('fluxion checkify: a check inside a jit/vmap/scan/cond nested within checkify '
                                  'is not supported; call checkify inside that transform instead')
    records.append((logical_not(pred), (fmt_args, fmt_kwargs), msg))


def checkify(f: Callable, errors: Any = user_checks) -> Callable:
    """`f` made functional in its checks: the new function returns `(err, out)` (see :class:`Error`).

    Raises:
      NotImplementedError: `errors` asks for a category other than :data:`user_checks`.
    """
    unsupported = set(errors) - set(user_checks)
    if unsupported:
        raise NotImplementedError(f'fluxion checkify supports only user_checks, got {sorted(map(str, unsupported))}')

    @functools.wraps(f)
    def checked(*args: Any, **kwargs: Any) -> tuple:
        records: list = []
        _COLLECTOR.stack.append((core.cur_level(), records))
        try:
            out = f(*args, **kwargs)
        finally:
            _COLLECTOR.stack.pop()
        err = Error(tuple(r[0] for r in records), tuple(r[1] for r in records), tuple(r[2] for r in records))
        return err, out

    return checked
