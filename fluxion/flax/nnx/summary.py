"""``nnx.tabulate``: a table of a graph object's calls and state (mirrors ``flax.nnx.summary``).

One row per (object, distinct inputs) call made while running ``obj.method(*args)``,
in call (pre-)order, with the columns ``path | type | inputs | outputs |
<one column per Variable type>``.  A Variable-type cell lists the object's own
Variables of that type (``name: dtype[shape]``, plus their metadata) and the
count and bytes of that type in the object's whole subtree; the last row holds
the totals of the root, and the caption the grand total.  Shared objects and
Variables are counted once (at their first path), and every ``RngState``
subclass is counted in one ``RngState`` column, as in Flax.

Differences from Flax: the table is plain text (Flax renders it with ``rich``:
markup, colours and cell wrapping at the console width); cells are never
wrapped, so the text is the same whatever the terminal.  ``table_kwargs``,
``column_kwargs`` and ``console_kwargs`` (rich options) are accepted and
ignored; ``compute_flops``/``compute_vjp_flops`` raise ``NotImplementedError``.
The calls run eagerly on a clone of ``obj`` (Flax jit-compiles each), so the
caller's object is not changed.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from typing import Any, Callable

import numpy as np

from fluxion import tree_util

from .graph import _children, clone, is_graph_node
from .pytreelib import Pytree
from .rngs import RngState, RngStream
from .state import to_flat_state
from .variables import Variable


@dataclasses.dataclass(frozen=True)
class SizeBytes:
    """A number of array elements and of bytes; ``repr`` is Flax's ``'1,234 (4.9 KB)'``."""
    size: int
    bytes: int

    def __add__(self, other: SizeBytes) -> SizeBytes:
        return SizeBytes(self.size + other.size, self.bytes + other.bytes)

    @classmethod
    def from_any(cls, value: Any) -> SizeBytes:
        size = nbytes = 0
        # Typed PRNG key arrays count as one element each (of the key dtype's size), as JAX's do.
        for leaf in tree_util.tree_leaves(value, is_leaf=lambda x: hasattr(x, 'shape') and hasattr(x, 'dtype')):
            if hasattr(leaf, 'size') and hasattr(leaf, 'dtype'):
                size += int(leaf.size)
                nbytes += int(leaf.size) * int(leaf.dtype.itemsize)
        return cls(size, nbytes)

    def __repr__(self) -> str:
        return f'{self.size:,} ({bytes_repr(self.bytes)})'


def bytes_repr(num_bytes: int) -> str:
    """``num_bytes`` in B/KB/MB/GB with one decimal (decimal units, as Flax)."""
    for scale, unit in ((1e9, 'GB'), (1e6, 'MB'), (1e3, 'KB')):
        if num_bytes > scale:
            return f'{num_bytes / scale:,.1f} {unit}'
    return f'{num_bytes:,} B'


@dataclasses.dataclass
class ObjectInfo:
    """Per graph object: its path, the sizes per Variable type of its subtree, its own Variables per type."""
    path: tuple
    stats: dict
    variable_groups: dict


@dataclasses.dataclass
class CallInfo:
    """One recorded call (one table row)."""
    call_order: int
    object_id: int
    type: type
    path: tuple
    inputs_repr: str
    outputs: Any
    flops: int | None = None
    vjp_flops: int | None = None


def _column_type(v: Variable) -> type:
    return RngState if isinstance(v, RngState) else type(v)


def _collect_stats(path: tuple, node: Any, infos: dict, object_types: set) -> None:
    if id(node) in infos:
        return
    info = ObjectInfo(path, {}, {})
    infos[id(node)] = info
    if isinstance(node, Pytree):
        object_types.add(type(node))
    for key, value in _children(node):
        if id(value) in infos:
            continue
        if isinstance(value, Variable):
            col = _column_type(value)
            info.stats[col] = info.stats.get(col, SizeBytes(0, 0)) + SizeBytes.from_any(value.get_value())
            info.variable_groups.setdefault(col, {})[key] = value
            infos[id(value)] = None
        elif is_graph_node(value):
            _collect_stats((*path, key), value, infos, object_types)
            for col, sb in infos[id(value)].stats.items():
                info.stats[col] = info.stats.get(col, SizeBytes(0, 0)) + sb


# -- a small YAML-like rendering of cell values (Flax dumps them with PyYAML) ----------------------------------

def _leaf_repr(x: Any) -> str:
    if isinstance(x, type):
        return f'type[{x.__name__}]'
    if isinstance(x, Pytree):
        return f'{type(x).__name__}(...)'
    if hasattr(x, 'shape') and hasattr(x, 'dtype'):
        return f'{np.dtype(x.dtype) if _is_numpy_dtype(x.dtype) else x.dtype}[{",".join(map(str, x.shape))}]'
    return repr(x).replace("'", '')


def _is_numpy_dtype(dtype: Any) -> bool:
    try:
        np.dtype(dtype)
        return True
    except TypeError:
        return False


def _yaml_lines(value: Any) -> list[str]:
    if isinstance(value, dict):
        lines = []
        for k, v in value.items():
            k = str(k).replace("'", '')
            if isinstance(v, dict) and v:
                lines.append(f'{k}:')
                lines += ['  ' + line for line in _yaml_lines(v)]
            elif isinstance(v, (list, tuple)) and v:
                lines.append(f'{k}:')
                lines += _yaml_lines(v)  # PyYAML does not indent a sequence under a mapping key
            else:
                lines.append(f'{k}: {_scalar(v)}')
        return lines
    if isinstance(value, (list, tuple)):
        lines = []
        for v in value:
            sub = _yaml_lines(v) if isinstance(v, (dict, list, tuple)) and v else [_scalar(v)]
            lines.append('- ' + sub[0])
            lines += ['  ' + line for line in sub[1:]]
        return lines
    return [_scalar(value)]


def _scalar(v: Any) -> str:
    if isinstance(v, dict):
        return '{}'
    if isinstance(v, (list, tuple)):
        return '[]'
    if v is None:
        return 'None'
    return v if isinstance(v, str) else _leaf_repr(v)


def _as_cell(value: Any) -> str:
    if value is None or (hasattr(value, '__len__') and not hasattr(value, 'shape') and len(value) == 0):
        return ''

    def normalize(x: Any) -> Any:
        if isinstance(x, (dict, list, tuple)) and not _is_namedtuple(x):
            # Dict keys in sorted order, as Flax's pytree flattening puts them.
            items = sorted(x.items(), key=lambda kv: str(kv[0])) if isinstance(x, dict) else enumerate(x)
            out = {k: normalize(v) for k, v in items}
            return out if isinstance(x, dict) else [out[i] for i in range(len(x))]
        return _leaf_repr(x)
    return '\n'.join(_yaml_lines(normalize(value)))


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), '_fields')


def _inputs_repr(args: tuple, kwargs: dict) -> str:
    parts = []
    if args:
        parts.append(_as_cell(args[0] if len(args) == 1 and not kwargs else list(args)))
    if kwargs:
        parts.append(_as_cell(dict(kwargs)))
    return '\n'.join(parts)


# -- recording calls -------------------------------------------------------------------------------------------

def filter_rng_streams(row: CallInfo) -> bool:
    """The default ``row_filter``: drop the rows of ``RngStream`` calls."""
    return not issubclass(row.type, RngStream)


def _methods(object_types: set) -> dict:
    env = {}
    for cls in object_types:
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith('_') or name == '__call__':
                env[(cls, name)] = fn
    return env


def _recording(fn: Callable, name: str, counter: Any, rows: list, infos: dict, seen: set) -> Callable:
    def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        info = infos.get(id(obj))
        if info is None:  # an object created during the call: not part of the table
            return fn(obj, *args, **kwargs)
        inputs = _inputs_repr(args, kwargs)
        order = next(counter)
        out = fn(obj, *args, **kwargs)
        key = (inputs, id(obj))
        if key not in seen:
            seen.add(key)
            path = info.path if name == '__call__' else (*info.path, name)
            rows.append(CallInfo(order, id(obj), type(obj), path, inputs, out))
        return out
    return wrapper


def _patch(env: dict, counter: Any, rows: list, infos: dict, seen: set) -> list:
    undo = []
    for (cls, name), fn in env.items():
        undo.append((cls, name, cls.__dict__.get(name, _ABSENT)))
        setattr(cls, name, _recording(fn, name, counter, rows, infos, seen))
    return undo


_ABSENT = object()


def _unpatch(undo: list) -> None:
    for cls, name, original in reversed(undo):
        if original is _ABSENT:
            delattr(cls, name)
        else:
            setattr(cls, name, original)


# -- the table -------------------------------------------------------------------------------------------------

def _variable_cell(info: ObjectInfo, col: type) -> str:
    attributes = {}
    for name, variable in info.variable_groups.get(col, {}).items():
        value = variable.get_value()
        shown = _leaf_repr(value) if hasattr(value, 'shape') and hasattr(value, 'dtype') else ''
        metadata = variable.get_metadata()
        if metadata:
            attributes[name] = {'value': shown, **metadata}
        elif shown:
            attributes[name] = shown
    text = _as_cell(attributes) + '\n\n' if attributes else ''
    size = info.stats.get(col)
    if size:
        text += repr(size)
    return text


def summary_rows(obj: Any, *input_args: Any, depth: int | None = None, method: str = '__call__',
                 row_filter: Callable[[CallInfo], bool] = filter_rng_streams, **input_kwargs: Any) -> tuple:
    """``(header, rows, footer, caption)`` of :func:`tabulate`'s table: cells as strings (lines split by
    ``\\n``)."""
    obj = clone(obj)
    infos: dict = {}
    object_types: set = set()
    _collect_stats((), obj, infos, object_types)
    columns = sorted({_column_type(v) for _, v in to_flat_state(_state_of(obj)) if isinstance(v, Variable)},
                     key=lambda t: t.__name__)
    env = _methods(object_types)
    if (type(obj), method) not in env:
        raise AttributeError(f'{type(obj).__name__} has no public method {method!r} to tabulate')
    rows: list = []
    undo = _patch(env, itertools.count(), rows, infos, set())
    try:
        getattr(obj, method)(*input_args, **input_kwargs)
    finally:
        _unpatch(undo)
    rows.sort(key=lambda r: r.call_order)
    rows = [r for r in rows if (depth is None or len(r.path) <= depth) and row_filter(r)]
    header = ['path', 'type', 'inputs', 'outputs'] + [c.__name__ for c in columns]
    table = []
    for r in rows:
        info = infos[r.object_id]
        table.append(['/'.join(map(str, r.path)), r.type.__name__, r.inputs_repr, _as_cell(r.outputs)]
                     + [_variable_cell(info, c) for c in columns])
    root = infos[id(obj)]
    footer = ['', '', '', 'Total'] + [repr(root.stats[c]) for c in columns]
    total = SizeBytes(0, 0)
    for sb in root.stats.values():
        total = total + sb
    return header, table, footer, f'Total Parameters: {total!r}'


def _state_of(obj: Any) -> Any:
    from .graph import state
    return state(obj)


def _center(text: str, width: int) -> str:
    # Rich's centring: when the padding is odd, the extra space goes to the right.
    return ' ' * (max(width - len(text), 0) // 2) + text


def _render(title: str, header: list, rows: list, footer: list, caption: str) -> str:
    cells = [[c.split('\n') for c in row] for row in [header, *rows, footer]]
    widths = [max(len(line) for row in cells for line in row[i]) + 2 for i in range(len(header))]

    def rule(left: str, mid: str, right: str, fill: str) -> str:
        return left + mid.join(fill * w for w in widths) + right

    def body(row: list, sep: str, right_cols: tuple = ()) -> list:
        out = []
        for k in range(max(len(c) for c in row)):
            parts = []
            for i, c in enumerate(row):
                text = c[k] if k < len(c) else ''
                parts.append(text.rjust(widths[i] - 1) + ' ' if i in right_cols else ' ' + text.ljust(widths[i] - 1))
            out.append(sep + sep.join(parts) + sep)
        return out

    width = sum(widths) + len(widths) + 1
    lines = [_center(title, width), rule('┏', '┳', '┓', '━'), *body(cells[0], '┃'),
             rule('┡', '╇', '┩', '━')]
    for row in cells[1:-1]:
        lines += body(row, '│')
        lines.append(rule('├', '┼', '┤', '─'))
    lines += body(cells[-1], '│', right_cols=(3,))
    lines += [rule('└', '┴', '┘', '─'), '', _center(caption, width)]
    return '\n'.join(lines) + '\n'


def tabulate(obj: Any, *input_args: Any, depth: int | None = None, method: str = '__call__',
             row_filter: Callable[[CallInfo], bool] = filter_rng_streams, table_kwargs: Any = None,
             column_kwargs: Any = None, console_kwargs: Any = None, compute_flops: bool = False,
             compute_vjp_flops: bool = False, **input_kwargs: Any) -> str:
    """The summary table of ``obj`` called as ``obj.method(*input_args, **input_kwargs)`` (see the module
    docstring for the layout), as a string.

    ``depth`` keeps the rows whose path has at most that many parts;
    ``row_filter(CallInfo) -> bool`` selects rows (default: no RngStream rows).

    Raises:
      AttributeError: ``obj`` has no public ``method``.
      NotImplementedError: ``compute_flops``/``compute_vjp_flops``.
    """
    if compute_flops or compute_vjp_flops:
        raise NotImplementedError('nnx.tabulate: FLOP columns are not offered by fluxion (no XLA cost analysis)')
    header, rows, footer, caption = summary_rows(obj, *input_args, depth=depth, method=method,
                                                 row_filter=row_filter, **input_kwargs)
    return _render(f'{type(obj).__name__} Summary', header, rows, footer, caption)
