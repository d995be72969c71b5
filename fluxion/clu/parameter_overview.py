"""Tables of parameter names, shapes and statistics, mirroring ``clu.parameter_overview``.

The output format is that of clu 0.0.12 (the current release)::

    +----------------------+------------+---------+---------+-----------+--------+
    | Name                 | Shape      | Dtype   | Size    | Mean      | Std    |
    +----------------------+------------+---------+---------+-----------+--------+
    | params/Dense1/bias   | (128,)     | float32 | 128     | 0.0       | 0.0    |
    | params/Dense1/kernel | (784, 128) | float32 | 100,352 | -4.84e-05 | 0.0358 |
    +----------------------+------------+---------+---------+-----------+--------+
    Total: 100,480 -- 401,920 bytes

Rows are sorted by their ``/``-joined key path; every cell is left-aligned;
ints get thousands separators and floats ``'{:.3}'`` (3 significant digits,
always with a decimal point, e.g. ``0.0``). ``include_dtype=False`` (a fluxion
argument) leaves out the Dtype column and the byte count: the format older clu
releases printed and the reference tutorials show.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

import numpy as np

import fluxion

_log = logging.getLogger(__name__)

_IncludeStats = Union[bool, str]


@dataclasses.dataclass
class _ParamRow:
    name: str
    shape: tuple
    dtype: str
    size: int


@dataclasses.dataclass
class _ParamRowWithSharding(_ParamRow):
    sharding: Any


@dataclasses.dataclass
class _ParamRowWithStats(_ParamRow):
    mean: float
    std: float


@dataclasses.dataclass
class _ParamRowWithStatsAndSharding(_ParamRowWithStats):
    sharding: Any


_ROW_TYPES = {
    False: _ParamRow,
    True: _ParamRowWithStats,
    'sharding': _ParamRowWithSharding,
    'global': _ParamRowWithStatsAndSharding,
}


def flatten_dict(input_dict: Mapping[str, Any], *, prefix: str = '',
                 delimiter: str = '/') -> dict[str, Any]:
    """Flattens nested mappings into ``{'a/b/c': leaf}``.

    Args:
        input_dict: a (nested) mapping, e.g. a Flax variables dict.
        prefix: prepended (with the delimiter) to every key.
        delimiter: separator of the key path.

    Returns:
        A flat dict; values that are not mappings (arrays, None...) are leaves.
    """
    out = {}
    for key, value in input_dict.items():
        path = f'{prefix}{delimiter}{key}' if prefix else key
        if isinstance(value, Mapping):
            out.update(flatten_dict(value, prefix=path, delimiter=delimiter))
        else:
            out[path] = value
    return out


def _check_mapping(params: Any) -> None:
    if not isinstance(params, Mapping):
        raise ValueError(f'Expected `params` to be a dictionary but got {type(params)}.')


def count_parameters(params: Mapping[str, Any]) -> Any:
    """Total number of scalars in a (nested) parameter dict; None leaves count 0.

    Like clu, this sums ``np.prod(shape)`` per leaf, so the result is a NumPy
    float (and prints as ``10.0``) when some leaf is a 0-d scalar, whose
    ``np.prod(())`` is ``1.0``.

    Raises:
        ValueError: if ``params`` is not a mapping.
    """
    _check_mapping(params)
    return sum(np.prod(np.shape(v)) for v in flatten_dict(params).values() if v is not None)


def _parameters_bytes(params: Mapping[str, Any]) -> Any:
    return sum(np.prod(np.shape(v)) * np.asarray(v).dtype.itemsize
               for v in flatten_dict(params).values() if v is not None)


def _sharding_of(value: Any) -> Any:
    sharding = getattr(value, 'sharding', None)
    if sharding is None:
        return ()
    spec = getattr(sharding, 'spec', None)
    return tuple(spec) if spec is not None else str(sharding)


def _make_row(name: str, value: Any, include_stats: _IncludeStats) -> _ParamRow:
    if value is None:
        fields = dict(name=name, shape=(), dtype='', size=0)
        array = None
    else:
        array = np.asarray(value)
        fields = dict(name=name, shape=tuple(array.shape), dtype=str(array.dtype),
                      size=int(np.prod(array.shape)))
    if include_stats in (True, 'global'):
        # Statistics are computed by NumPy on host copies, as clu does after
        # jax.device_get, so the printed digits agree with clu's.
        if array is None:
            fields['mean'] = fields['std'] = 0.0
        elif array.size == 0:
            # NumPy's mean of an empty array is NaN (with a warning); clu prints nan.
            fields['mean'] = fields['std'] = float('nan')
        else:
            fields['mean'], fields['std'] = float(array.mean()), float(array.std())
    if include_stats in ('sharding', 'global'):
        fields['sharding'] = _sharding_of(value)
    return _ROW_TYPES[include_stats](**fields)


def _get_parameter_rows(params: Mapping[str, Any], *,
                        include_stats: _IncludeStats = False) -> list[_ParamRow]:
    _check_mapping(params)
    if include_stats not in _ROW_TYPES or isinstance(include_stats, int) and not isinstance(
            include_stats, bool):
        raise ValueError(f'Unknown `include_stats`: {include_stats!r}; expected True, False, '
                         "'sharding' or 'global'.")
    flat = flatten_dict(params)
    return [_make_row(name, value, include_stats)
            for name, value in sorted(flat.items(), key=lambda kv: kv[0])]


def _default_table_value_formatter(value: Any) -> str:
    """Ints with thousands separators, floats with 3 significant digits."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f'{value:,}'
    if isinstance(value, float):
        return f'{value:.3}'
    return str(value)


def make_table(rows: list[Any], *, column_names: Optional[Sequence[str]] = None,
               value_formatter: Callable[[Any], str] = _default_table_value_formatter,
               max_lines: Optional[int] = None) -> str:
    """Renders dataclass rows as an ASCII table with left-aligned cells.

    Args:
        rows: dataclass instances, all of the same type.
        column_names: field names to show (default: all fields of the rows).
        value_formatter: converts a cell value to text.
        max_lines: if set, stop (with a ``[...]`` line) once the table would
            exceed this many lines.

    Returns:
        The table, or ``'(empty table)'`` for no rows and no column names.

    Raises:
        ValueError: if rows are not dataclasses of a single type.
    """
    if any(not dataclasses.is_dataclass(row) for row in rows):
        raise ValueError('Expected `rows` to be a list of dataclasses.')
    if len(set(map(type, rows))) > 1:
        raise ValueError('Expected all elements of `rows` to be of the same type.')
    if column_names is None:
        if not rows:
            return '(empty table)'
        column_names = [f.name for f in dataclasses.fields(rows[0])]

    columns = []
    for name in column_names:
        cells = [value_formatter(getattr(row, name)) for row in rows]
        width = max(len(text) for text in cells + [name])
        columns.append((name.capitalize(), cells, width))

    def line(texts: Sequence[str]) -> str:
        return '|' + ''.join(f' {t:<{w}} |' for t, (_, _, w) in zip(texts, columns))

    separator = '+' + ''.join('-' * (w + 2) + '+' for _, _, w in columns)
    lines = [separator, line([c[0] for c in columns]), separator]
    for i in range(len(rows)):
        if max_lines and len(lines) >= max_lines - 3:
            lines.append('[...]')
            break
        lines.append(line([cells[i] for _, cells, _ in columns]))
    lines.append(separator)
    return '\n'.join(lines)


def get_parameter_overview(params: Mapping[str, Any], *,
                           include_stats: _IncludeStats = True,
                           max_lines: Optional[int] = None,
                           include_dtype: bool = True) -> str:
    """Returns a table of parameter names, shapes, dtypes, sizes (and mean/std).

    By default the table is clu 0.0.12's: columns ``Name | Shape | Dtype | Size | Mean | Std``, then
    ``Total: N -- B bytes``. ``include_dtype=False`` gives the older clu format that the reference
    tutorials print: no Dtype column, and ``Total: N``.

    Args:
        params: nested dict of arrays (e.g. ``variables`` or
            ``variables['params']`` of a Flax model).
        include_stats: True adds Mean and Std columns; ``'sharding'`` adds a
            Sharding column; ``'global'`` adds both; False adds neither.
        max_lines: optional maximum number of table lines.
        include_dtype: True (clu 0.0.12) for the Dtype column and the byte
            count; False for the older format without them (not a clu argument).

    Returns:
        The table followed by ``Total: <count> -- <bytes> bytes`` (``Total: <count>``
        without include_dtype).

    Raises:
        ValueError: if ``params`` is not a mapping or ``include_stats`` is unknown.
    """
    rows = _get_parameter_rows(params, include_stats=include_stats)
    column_names = [f.name for f in dataclasses.fields(_ROW_TYPES[include_stats])
                    if include_dtype or f.name != 'dtype']
    table = make_table(rows, column_names=column_names, max_lines=max_lines)
    if not include_dtype:
        return table + f'\nTotal: {count_parameters(params):,}'
    return (table + f'\nTotal: {count_parameters(params):,} -- '
            f'{_parameters_bytes(params):,} bytes')


def log_parameter_overview(params: Mapping[str, Any], *,
                           include_stats: _IncludeStats = True,
                           max_lines: Optional[int] = None, msg: Optional[str] = None,
                           jax_logging_process: Optional[int] = None, include_dtype: bool = True) -> None:
    """Logs :func:`get_parameter_overview` at INFO level (``logging`` module).

    Long tables are split into log records of at most 80 lines.

    Args:
        params, include_stats, max_lines, include_dtype: as in :func:`get_parameter_overview`.
        msg: optional line logged before the table.
        jax_logging_process: only this process index logs (None: every process).
    """
    table = get_parameter_overview(params, include_stats=include_stats, max_lines=max_lines,
                                   include_dtype=include_dtype)
    if jax_logging_process is not None and jax_logging_process != fluxion.process_index():
        return
    lines = ([msg] if msg else []) + table.split('\n')
    for i in range(0, len(lines), 80):
        _log.info('\n%s', '\n'.join(lines[i:i + 80]))
