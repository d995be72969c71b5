"""Dataclasses whose keyword-only fields go last (mirrors ``flax.linen.kw_only_dataclasses``).

A field marked keyword-only (``field(default=..., kw_only=True)``, or any
field annotated after a ``_: KW_ONLY`` marker) may have a default even when
fields declared after it, or in subclasses, have none::

    @dataclass
    class Parent:
        name: str = field(default='', kw_only=True)

    @dataclass
    class Child(Parent):
        size: float          # required, yet declared after a defaulted field

    Child(2.0, name='c')     # Child(size=2.0, name='c')

Built on the standard library's ``kw_only`` support (Python >= 3.10).
As in Flax, keyword-only fields come last in ``dataclasses.fields`` and
must have a default. Unlike Flax's emulation (which only moves them to the
end of the parameter list and then rejects extra positional arguments),
``__init__``'s signature marks them keyword-only with ``*``; the calls that
are accepted are the same.
"""

from __future__ import annotations

import dataclasses
import reprlib
import typing
from types import MappingProxyType
from typing import Any, Optional, Sequence

__all__ = ['KW_ONLY', 'dataclass', 'field']


class _KwOnlyType:
    """The type of :data:`KW_ONLY`; also the metadata key marking keyword-only fields."""

    def __repr__(self) -> str:
        return 'KW_ONLY'


KW_ONLY = _KwOnlyType()
"""Annotate a pseudo-field with it (``_: KW_ONLY``) to make every later field keyword-only."""

_NO_DEFAULT = 'Keyword-only fields with no default are not supported.'


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def field(*, metadata: Optional[dict] = None, kw_only: Any = dataclasses.MISSING,
          **kwargs: Any) -> dataclasses.Field:
    """``dataclasses.field`` whose ``kw_only=True`` fields are moved last by :func:`dataclass`.

    The field's metadata gains ``{KW_ONLY: True}`` (as in Flax).

    Raises:
        ValueError: ``kw_only=True`` without ``default`` or ``default_factory``.
    """
    if kw_only is dataclasses.MISSING or not kw_only:
        return dataclasses.field(metadata=metadata, **kwargs)
    f = dataclasses.field(metadata={**(metadata or {}), KW_ONLY: True}, kw_only=True, **kwargs)
    if not _has_default(f):
        raise ValueError(_NO_DEFAULT)
    return f


def _mark_after_marker(cls: type) -> None:
    """Turns the fields annotated after a ``KW_ONLY`` marker into keyword-only fields; drops the marker."""
    annotations = cls.__dict__['__annotations__']
    markers = [name for name, ann in annotations.items() if ann is KW_ONLY]
    if len(markers) > 1:
        raise TypeError('Multiple KW_ONLY markers')
    if not markers:
        return
    names = list(annotations)
    for name in names[names.index(markers[0]) + 1:]:
        if name not in cls.__dict__:
            raise ValueError(_NO_DEFAULT)
        value = cls.__dict__[name]
        if isinstance(value, dataclasses.Field):
            if not _has_default(value):
                raise ValueError(_NO_DEFAULT)
            value.kw_only = True
            value.metadata = MappingProxyType({**value.metadata, KW_ONLY: True})
        else:
            setattr(cls, name, field(default=value, kw_only=True))
    del annotations[markers[0]]


@reprlib.recursive_repr()
def _fields_repr(self: Any) -> str:
    items = ', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in dataclasses.fields(self) if f.repr)
    return f'{type(self).__qualname__}({items})'


@typing.dataclass_transform(field_specifiers=(field,))
def dataclass(cls: Optional[type] = None, extra_fields: Optional[Sequence[tuple]] = None,
              **kwargs: Any) -> Any:
    """``dataclasses.dataclass`` that puts keyword-only fields (inherited ones too) last.

    Args:
        cls: the class; omit it to get a decorator.
        extra_fields: ``(name, annotation, dataclasses.Field)`` triples added
            to the class before it is processed.
        **kwargs: passed to ``dataclasses.dataclass`` (``frozen``, ``eq``, ...).

    Returns:
        The dataclass (or a decorator making one).

    Raises:
        ValueError: an extra field is not a ``(str, annotation, Field)``
            triple, or a field after a ``KW_ONLY`` marker has no default.
        TypeError: the class has more than one ``KW_ONLY`` marker.
    """
    def wrap(cls: type) -> type:
        if '__annotations__' not in cls.__dict__:
            cls.__annotations__ = {}
        _mark_after_marker(cls)
        for name, annotation, default in extra_fields or ():
            if not (isinstance(name, str) and isinstance(default, dataclasses.Field)):
                raise ValueError('extra_fields must be a list of (name, type, dataclasses.Field) '
                                 f'tuples, got {(name, annotation, default)!r}.')
            setattr(cls, name, default)
            cls.__annotations__[name] = annotation
        own_repr = '__repr__' in cls.__dict__
        out = dataclasses.dataclass(cls, **kwargs)
        fields = out.__dataclass_fields__
        # Flax lists keyword-only fields last; the generated __init__ already orders them so,
        # and the repr is regenerated to follow the same order.
        for name in [f.name for f in dataclasses.fields(out) if f.kw_only]:
            fields[name] = fields.pop(name)
        if kwargs.get('repr', True) and not own_repr:
            out.__repr__ = _fields_repr
        return out

    return wrap if cls is None else wrap(cls)
