"""``tabulate``: a table of a model's module calls (mirrors ``flax.linen.summary``).

The model is initialized under ``fluxion.eval_shape`` (no numbers are
computed) while an observer records every method call of every module: its
path, class, input and output shapes. The table has one row per call, in call
order, with the columns ``path | module | inputs | outputs | [flops] |
[vjp_flops] | <one column per variable collection>``; a collection cell lists
the module's own variables (``kernel: float32[784,128]``) and their total count
and size. A final row sums each collection, and a footer gives the grand total.
The text is the one Flax prints with ``console_kwargs={'force_terminal':
False}`` and a console wide enough for the table (fluxion never wraps cells).

FLOP columns count each call on its own, as Flax does: the module is
re-initialized and applied alone on the call's input shapes, and the jaxpr of
that ``apply`` (or of its VJP) is counted by :mod:`._flops` with the rules of
XLA's cost analysis (which is what Flax reports).
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
from ._flops import count_flops

Array = Any


@dataclasses.dataclass
class _Row:
    path: tuple
    module_type: str
    method: str
    inputs: Any
    outputs: Any = None
    # For FLOP counts: a detached copy of the module and the call's (args, kwargs)
    # with arrays replaced by ShapeDtypeStructs (other values are static).
    module: Any = None
    call_args: Any = None


def _abstract(x: Any) -> Any:
    """An argument as Flax's table keeps it: arrays as shape/dtype, Python scalars and others as they are."""
    if isinstance(x, (bool, int, float, type(None))) or not (hasattr(x, 'shape') and hasattr(x, 'dtype')):
        return x
    return fluxion.ShapeDtypeStruct(tuple(x.shape), x.dtype)


def _call_flops(row: _Row, rngs: Mapping, mutable: Any, vjp: bool) -> int:
    """FLOPs of running ``row``'s call alone (its forward pass, or its VJP including the forward pass)."""
    leaves, treedef = tree_util.tree_flatten(row.call_args)
    dynamic = [i for i, leaf in enumerate(leaves) if isinstance(leaf, fluxion.ShapeDtypeStruct)]

    def call_inputs(dynamic_leaves):
        full = list(leaves)
        for i, leaf in zip(dynamic, dynamic_leaves):
            full[i] = leaf
        return tree_util.tree_unflatten(treedef, full)

    def init(rngs, dynamic_leaves):
        args, kwargs = call_inputs(dynamic_leaves)
        return row.module.init(rngs, *args, method=row.method, mutable=mutable, **kwargs)

    def apply(variables, rngs, dynamic_leaves):
        args, kwargs = call_inputs(dynamic_leaves)
        return row.module.apply(variables, *args, rngs=rngs, method=row.method, mutable=mutable,
                                **kwargs)

    def apply_vjp(variables, rngs, dynamic_leaves):
        out, pullback = fluxion.vjp(lambda v, d: apply(v, rngs, d), variables, dynamic_leaves)
        return pullback(out)

    dynamic_leaves = [leaves[i] for i in dynamic]
    variables = fluxion.eval_shape(init, rngs, dynamic_leaves)
    return count_flops(apply_vjp if vjp else apply, variables, rngs, dynamic_leaves)


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


def _center(text: str, width: int) -> str:
    # Rich's centering: the odd space goes to the right.
    left = max(width - len(text), 0) // 2
    return (' ' * left + text).ljust(width)


def _render_table(title: str, header: list, rows: list, footer: str,
                  right_aligned: frozenset = frozenset()) -> str:
    """Draws a box table as Flax's rich console does; every cell is a list of lines.

    ``right_aligned`` holds ``(row index, column index)`` of cells justified
    to the right (Flax's ``Total`` label).
    """
    widths = [max(len(line) for cells in [header] + rows for line in cells[i]) + 2
              for i in range(len(header))]

    def border(left, mid, right, fill):
        return left + mid.join(fill * w for w in widths) + right

    def body(cells, sep, row_index=None):
        height = max(len(c) for c in cells)
        lines = []
        for k in range(height):
            parts = []
            for i, cell in enumerate(cells):
                text = cell[k] if k < len(cell) else ''
                if (row_index, i) in right_aligned:
                    parts.append(text.rjust(widths[i] - 1) + ' ')
                else:
                    parts.append(' ' + text.ljust(widths[i] - 1))
            lines.append(sep + sep.join(parts) + sep)
        return lines

    total_width = sum(widths) + len(widths) + 1
    out = ['', _center(title, total_width), border('┏', '┳', '┓', '━')]
    out += body(header, '┃')
    out.append(border('┡', '╇', '┩', '━'))
    for i, cells in enumerate(rows):
        out += body(cells, '│', i)
        last = i == len(rows) - 1
        out.append(border('└', '┴', '┘', '─') if last else border('├', '┼', '┤', '─'))
    out.append(' ' * total_width)
    out.append(_center(footer, total_width))
    return '\n'.join(out) + '\n\n'


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
        compute_flops: add a ``flops`` column: the FLOPs of each call's
            forward pass, run on its own (see :mod:`._flops` for how they are
            counted and where they differ from XLA's numbers).
        compute_vjp_flops: add a ``vjp_flops`` column: the FLOPs of the VJP of
            each call (forward pass included), as Flax defines it.

    Raises:
        NotImplementedError: a FLOP count meets a primitive without a counting rule.
    """
    flop_columns = [name for name, wanted in (('flops', compute_flops),
                                              ('vjp_flops', compute_vjp_flops)) if wanted]

    def table_fn(*args: Any, **call_kwargs: Any) -> str:
        rows: list[_Row] = []

        def observer(mod, method_name, m_args, m_kwargs):
            row = _Row(tuple(mod.scope.path), type(mod).__name__, method_name,
                       _inputs_lines(m_args, m_kwargs))
            if flop_columns:
                row.module = mod._detached()
                row.call_args = tree_util.tree_map(_abstract, (tuple(m_args), dict(m_kwargs)))
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

        rng_streams = dict(rngs) if isinstance(rngs, Mapping) else {'params': rngs}
        collections = sorted(variables)
        header = ([['path'], ['module'], ['inputs'], ['outputs']] + [[c] for c in flop_columns]
                  + [[c] for c in collections])
        body = []
        for row in shown:
            truncated = depth is not None and len(row.path) == depth and any(
                len(p) > depth and p[:depth] == row.path for p in module_paths)
            name = row.module_type if row.method == '__call__' else \
                f'{row.module_type}.{row.method}'
            cells = [['/'.join(row.path)], [name], row.inputs, row.outputs or ['']]
            cells += [[str(_call_flops(row, rng_streams, mutable, vjp=c == 'vjp_flops'))]
                      for c in flop_columns]
            cells += [_collection_cell(variables[c], row, module_paths, truncated)
                      for c in collections]
            body.append(cells)
        label_column = 3 + len(flop_columns)
        totals = ([['']] * label_column + [['Total']]
                  + [[_summary_line(variables[c])] for c in collections])
        body.append(totals)
        footer = f'Total Parameters: {_summary_line(variables)}'
        title = f'{type(module).__name__} Summary'
        return _render_table(title, header, body, footer,
                             right_aligned=frozenset({(len(body) - 1, label_column)}))

    return table_fn
