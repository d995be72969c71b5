"""``tabulate``: a table of a model's module calls (mirrors ``flax.linen.summary``).

The model is initialized under ``fluxion.eval_shape`` (no numbers are
computed) while an observer records every method call of every module: its
path, class, input and output shapes. The table has one row per call, in call
order, with the columns ``path | module | inputs | outputs | <one column per
variable collection>``; a collection cell lists the module's own variables
(``kernel: float32[784,128]``) and their total count and size. A final row
sums each collection, and a footer gives the grand total.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Callable, Optional

import numpy as np

import fluxion
from fluxion import tree_util

from ..core.scope import DenyList
from . import module as module_lib

Array = Any


@dataclasses.dataclass
class _Row:
    path: tuple
    module_type: str
    method: str
    inputs: Any
    outputs: Any = None


def _shape_repr(x: Any) -> str:
    if hasattr(x, 'shape') and hasattr(x, 'dtype'):
        return f"{np.dtype(x.dtype).name if _is_numpy_dtype(x.dtype) else x.dtype}" \
               f"[{','.join(str(d) for d in x.shape)}]"
    return repr(x)


def _is_numpy_dtype(dtype: Any) -> bool:
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def _value_lines(value: Any) -> list:
    """Renders a (nested) input/output value as lines of ``dtype[shape]`` entries."""
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return _value_lines(value[0])
        lines = []
        for item in value:
            sub = _value_lines(item)
            lines.append('- ' + sub[0])
            lines.extend('  ' + s for s in sub[1:])
        return lines
    if isinstance(value, Mapping):
        lines = []
        for k, v in value.items():
            sub = _value_lines(v)
            lines.append(f'{k}: {sub[0]}')
            lines.extend('  ' + s for s in sub[1:])
        return lines
    return [_shape_repr(value)]


def _inputs_lines(args: tuple, kwargs: dict) -> list:
    if not kwargs:
        return _value_lines(args) if args else ['']
    items = list(args) + [{k: v} for k, v in kwargs.items()]
    return _value_lines(items)


def _bytes_repr(num_bytes: int) -> str:
    for limit, unit in ((1e9, 'GB'), (1e6, 'MB'), (1e3, 'KB')):
        if num_bytes > limit:
            return f'{num_bytes / limit:,.1f} {unit}'
    return f'{num_bytes:,} B'


def _size_and_bytes(tree: Any) -> tuple[int, int]:
    leaves = tree_util.tree_leaves(tree)
    count = sum(int(np.prod(x.shape)) for x in leaves)
    nbytes = sum(int(np.prod(x.shape)) * _itemsize(x.dtype) for x in leaves)
    return count, nbytes


def _itemsize(dtype: Any) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 0


def _summary_line(tree: Any) -> str:
    count, nbytes = _size_and_bytes(tree)
    return f'{count:,} ({_bytes_repr(nbytes)})'


def _subtree(variables: Mapping, path: tuple) -> Optional[Mapping]:
    tree = variables
    for name in path:
        if not isinstance(tree, Mapping) or name not in tree:
            return None
        tree = tree[name]
    return tree if isinstance(tree, Mapping) else None


def _own_variables(col_tree: Mapping, path: tuple, module_paths: set) -> dict:
    """The entries of ``col_tree`` at ``path`` that are not submodules."""
    sub = _subtree(col_tree, path)
    if not sub:
        return {}
    return {k: v for k, v in sub.items() if path + (k,) not in module_paths}


def _collection_cell(col_tree: Mapping, row: _Row, module_paths: set, truncated: bool) -> list:
    if truncated:
        sub = _subtree(col_tree, row.path)
        return [_summary_line(sub)] if sub else ['']
    own = _own_variables(col_tree, row.path, module_paths)
    if not own:
        return ['']
    lines = []
    for name in sorted(own):
        value_lines = _value_lines(own[name])
        lines.append(f'{name}: {value_lines[0]}')
        lines.extend('  ' + s for s in value_lines[1:])
    return lines + ['', _summary_line(own)]


def _render_table(title: str, header: list, rows: list, footer: str) -> str:
    """Draws a box table; every cell is a list of lines."""
    widths = [max(len(line) for cells in [header] + rows for line in cells[i]) + 2
              for i in range(len(header))]

    def border(left, mid, right, fill):
        return left + mid.join(fill * w for w in widths) + right

    def body(cells, sep):
        height = max(len(c) for c in cells)
        lines = []
        for k in range(height):
            parts = []
            for i, cell in enumerate(cells):
                text = cell[k] if k < len(cell) else ''
                parts.append(' ' + text.ljust(widths[i] - 1))
            lines.append(sep + sep.join(parts) + sep)
        return lines

    total_width = sum(widths) + len(widths) + 1
    out = [title.center(total_width).rstrip(), border('┏', '┳', '┓', '━')]
    out += body(header, '┃')
    out.append(border('┡', '╇', '┩', '━'))
    for i, cells in enumerate(rows):
        out += body(cells, '│')
        last = i == len(rows) - 1
        out.append(border('└', '┴', '┘', '─') if last else border('├', '┼', '┤', '─'))
    out.append('')
    out.append(footer.center(total_width).rstrip())
    return '\n'.join(out) + '\n'


def tabulate(module: 'module_lib.Module', rngs: Any, depth: Optional[int] = None,
             show_repeated: bool = False, mutable: Any = DenyList('intermediates'),
             console_kwargs: Optional[Mapping[str, Any]] = None,
             compute_flops: bool = False, compute_vjp_flops: bool = False,
             **kwargs: Any) -> Callable[..., str]:
    """Returns ``fn(*args, **kwargs) -> str`` tabulating ``module.init(rngs, *args)``.

    Args:
        module: the model (unbound).
        rngs: a key or dict of keys, as for ``init``.
        depth: show submodules at most this deep (the root is depth 0); rows
            at the limit show their whole subtree's variable counts.
        show_repeated: list every call of a module, not only the first.
        mutable: collections created by ``init`` to show.
        console_kwargs: accepted for Flax compatibility (the table is plain text).
        compute_flops, compute_vjp_flops: not supported (must be False).

    Raises:
        NotImplementedError: if FLOP counts are requested.
    """
    if compute_flops or compute_vjp_flops:
        raise NotImplementedError('tabulate(compute_flops=True) is not supported by fluxion.')

    def table_fn(*args: Any, **call_kwargs: Any) -> str:
        rows: list[_Row] = []

        def observer(mod, method_name, m_args, m_kwargs):
            row = _Row(tuple(mod.scope.path), type(mod).__name__, method_name,
                       _inputs_lines(m_args, m_kwargs))
            rows.append(row)

            def done(out):
                row.outputs = _value_lines(out)
            return done

        def init():
            return module.init(rngs, *args, mutable=mutable, **call_kwargs)

        with module_lib.observe_calls(observer):
            variables = fluxion.eval_shape(init)

        module_paths = {row.path for row in rows}
        shown, seen = [], set()
        for row in rows:
            if depth is not None and len(row.path) > depth:
                continue
            key = (row.path, row.method)
            if key in seen and not show_repeated:
                continue
            seen.add(key)
            shown.append(row)

        collections = sorted(variables)
        header = [['path'], ['module'], ['inputs'], ['outputs']] + [[c] for c in collections]
        body = []
        for row in shown:
            truncated = depth is not None and len(row.path) == depth and any(
                len(p) > depth and p[:depth] == row.path for p in module_paths)
            name = row.module_type if row.method == '__call__' else \
                f'{row.module_type}.{row.method}'
            cells = [['/'.join(row.path)], [name], row.inputs, row.outputs or ['']]
            cells += [_collection_cell(variables[c], row, module_paths, truncated)
                      for c in collections]
            body.append(cells)
        totals = [[''], [''], [''], ['Total']] + [[_summary_line(variables[c])]
                                                   for c in collections]
        body.append(totals)
        footer = f'Total Parameters: {_summary_line(variables)}'
        title = f'{type(module).__name__} Summary'
        return _render_table(title, header, body, footer)

    return table_fn
