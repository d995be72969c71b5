"""The ``__nnx_repr__`` protocol: objects describe themselves as a header (:class:`Object`) followed by
attributes (:class:`Attr`), and :func:`get_repr` lays them out, one attribute per indented line or all on one
line, optionally with ANSI colors (mirrors ``flax.nnx.reprlib``).

A :class:`Representable` subclass implements ``__nnx_repr__`` as a generator::

    class Point(reprlib.Representable):
        def __nnx_repr__(self):
            yield reprlib.Object(type(self))
            yield reprlib.Attr('x', self.x)

    repr(Point())   # 'Point(\\n  x=1\\n)'

``repr`` never colors; ``str`` colors when the terminal supports it.

Difference from Flax 0.12: no depth limit (Flax's ``flax_max_repr_depth``
config); color support is detected from the terminal only (not IPython).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import typing as tp


def supports_color() -> bool:
    """True when standard output is a terminal on a platform that shows ANSI colors."""
    platform_ok = sys.platform != 'win32' or 'ANSICON' in os.environ
    return platform_ok and hasattr(sys.stdout, 'isatty') and sys.stdout.isatty()


class Color(tp.NamedTuple):
    """The escape sequence that starts each kind of token (and ``END``, which resets)."""
    TYPE: str
    ATTRIBUTE: str
    SEP: str
    PAREN: str
    COMMENT: str
    INT: str
    STRING: str
    FLOAT: str
    BOOL: str
    NONE: str
    END: str


NO_COLOR = Color(*([''] * len(Color._fields)))

# 24-bit ANSI colors (a dark editor theme): Flax's palette, so output looks alike.
_THEME = Color(TYPE='\x1b[38;2;79;201;177m', ATTRIBUTE='\x1b[38;2;156;220;254m', SEP='\x1b[38;2;212;212;212m',
               PAREN='\x1b[38;2;255;213;3m', COMMENT='\x1b[38;2;105;105;105m', INT='\x1b[38;2;182;207;169m',
               STRING='\x1b[38;2;207;144;120m', FLOAT='\x1b[38;2;182;207;169m', BOOL='\x1b[38;2;86;156;214m',
               NONE='\x1b[38;2;86;156;214m', END='\x1b[0m')
COLOR = _THEME if supports_color() else NO_COLOR


@dataclasses.dataclass
class ReprContext(threading.local):
    """The palette in use (per thread) and the current nesting depth."""
    current_color: Color = COLOR
    depth: int = 0


REPR_CONTEXT = ReprContext()


def _paint(kind: str, text: str) -> str:
    c = REPR_CONTEXT.current_color
    return f'{getattr(c, kind)}{text}{c.END}'


def colorized(x: tp.Any, /) -> str:
    """The repr of ``x`` with its tokens colored by the current palette (containers recursively;
    Representables through :func:`get_repr`)."""
    open_, close = _paint('PAREN', '('), _paint('PAREN', ')')
    if isinstance(x, list):
        return _paint('PAREN', '[') + ', '.join(colorized(i) for i in x) + _paint('PAREN', ']')
    if isinstance(x, tuple):
        inner = colorized(x[0]) + ',' if len(x) == 1 else ', '.join(colorized(i) for i in x)
        return open_ + inner + close
    if isinstance(x, dict):
        items = ', '.join(f"{_paint('STRING', repr(k))}: {colorized(v)}" for k, v in x.items())
        return _paint('PAREN', '{') + items + _paint('PAREN', '}')
    if isinstance(x, set):
        return _paint('PAREN', '{') + ', '.join(colorized(i) for i in x) + _paint('PAREN', '}')
    if isinstance(x, type):
        return _paint('TYPE', x.__name__)
    if isinstance(x, bool):
        return _paint('BOOL', str(x))
    if isinstance(x, int):
        return _paint('INT', str(x))
    if isinstance(x, str):
        return _paint('STRING', repr(x))
    if isinstance(x, float):
        return _paint('FLOAT', str(x))
    if x is None:
        return _paint('NONE', 'None')
    if isinstance(x, Representable):
        return get_repr(x)
    return repr(x)


@dataclasses.dataclass
class Object:
    """The header an ``__nnx_repr__`` yields first: the type (or a name), brackets, the key/value separator,
    the indentation, what to print when there are no attributes, a comment after the opening bracket, and
    whether the attributes go on one line."""
    type: str | type
    start: str = '('
    end: str = ')'
    kv_sep: str = '='
    indent: str = '  '
    empty_repr: str = ''
    comment: str = ''
    same_line: bool = False

    @property
    def elem_sep(self) -> str:
        return ', ' if self.same_line else ',\n'


@dataclasses.dataclass
class Attr:
    """One attribute: key and value (rendered with :func:`colorized` unless ``use_raw_value``), with optional
    text around it."""
    key: str
    value: tp.Any
    start: str = ''
    end: str = ''
    use_raw_value: bool = False
    use_raw_key: bool = False


class Representable:
    """Base class of objects that describe themselves through ``__nnx_repr__``."""

    __slots__ = ()

    def __nnx_repr__(self) -> tp.Iterator[Object | Attr]:
        raise NotImplementedError

    def __repr__(self) -> str:
        saved = REPR_CONTEXT.current_color
        REPR_CONTEXT.current_color = NO_COLOR
        try:
            return get_repr(self)
        finally:
            REPR_CONTEXT.current_color = saved

    def __str__(self) -> str:
        return get_repr(self)


def get_repr(obj: Representable) -> str:
    """Lays out ``obj.__nnx_repr__()`` with the current palette.

    Raises:
      TypeError: ``obj`` is not Representable, its first item is not an :class:`Object`, or a later item is not
        an :class:`Attr`.
    """
    if not isinstance(obj, Representable):
        raise TypeError(f'Object {obj!r} is not representable')
    REPR_CONTEXT.depth += 1
    try:
        items = obj.__nnx_repr__()
        header = next(items)
        if not isinstance(header, Object):
            raise TypeError(f'First item must be Config, got {type(header).__name__}')
        sep = _paint('SEP', header.kv_sep)
        indent = '' if header.same_line else header.indent

        def render(attr: tp.Any) -> str:
            if not isinstance(attr, Attr):
                raise TypeError(f'Item must be Elem, got {type(attr).__name__}')
            value = attr.value if attr.use_raw_value else colorized(attr.value)
            value = value.replace('\n', '\n' + header.indent)
            key = attr.key if attr.use_raw_key else _paint('ATTRIBUTE', attr.key)
            return f'{indent}{attr.start}{key}{sep}{value}{attr.end}'

        body = header.elem_sep.join(render(a) for a in items)
        if not body:
            body, comment = header.empty_repr, ''
        elif header.same_line:
            comment = ''
        else:
            body, comment = f'\n{body}\n', _paint('COMMENT', header.comment)
        name = header.type if isinstance(header.type, str) else header.type.__name__
        name = _paint('TYPE', name) if name else ''
        start = _paint('PAREN', header.start) if header.start else ''
        end = _paint('PAREN', header.end) if header.end else ''
        return f'{name}{start}{comment}{body}{end}'
    finally:
        REPR_CONTEXT.depth -= 1


class MappingReprMixin(Representable):
    """``__nnx_repr__`` for mapping classes: ``Type({key: value, ...})`` one entry per line."""

    def __nnx_repr__(self) -> tp.Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep=': ', start='({', end='})')
        for key, value in self.items():  # type: ignore[attr-defined]
            yield Attr(colorized(key), value, use_raw_key=True)


@dataclasses.dataclass(repr=False)
class PrettyMapping(Representable):
    """Wraps a mapping to print it as :class:`MappingReprMixin` does."""
    mapping: tp.Mapping

    def __nnx_repr__(self) -> tp.Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep=': ', start='({', end='})')
        for key, value in self.mapping.items():
            yield Attr(colorized(key), value, use_raw_key=True)


@dataclasses.dataclass(repr=False)
class SequenceReprMixin(Representable):
    """``__nnx_repr__`` for sequence classes: ``Type([value, ...])`` one element per line."""

    def __nnx_repr__(self) -> tp.Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep='', start='([', end='])')
        for value in self:  # type: ignore[attr-defined]
            yield Attr('', value, use_raw_key=True)


@dataclasses.dataclass(repr=False)
class PrettySequence(Representable):
    """Wraps a sequence to print it as :class:`SequenceReprMixin` does."""
    sequence: tp.Sequence

    def __nnx_repr__(self) -> tp.Iterator[Object | Attr]:
        yield Object(type=type(self), kv_sep='', start='([', end='])')
        for value in self.sequence:
            yield Attr('', value, use_raw_key=True)
