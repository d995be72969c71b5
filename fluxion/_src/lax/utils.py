"""Small helpers shared by the primitive families: defining primitives and checking operands."""

from __future__ import annotations

from typing import Callable

from ..core import Primitive, abstract_eval_rules


def standard_primitive(name: str, abstract_eval: Callable | None = None, *, multiple_results: bool = False,
                       weak_type: str | Callable = "all") -> Primitive:
    """Creates a primitive, registering its shape/dtype rule if given.

    Without `abstract_eval` the caller registers it (`abstract_eval_rules[foo_p] = _foo_abstract_eval`) below
    the primitive's public wrapper, where the other rules follow. The implementation is registered by each
    backend that supports the primitive (the NumPy backend in `fluxion._src.backends.eager`, keyed by the
    primitive object); lax itself never imports a backend.
    """
    prim = Primitive(name, multiple_results=multiple_results, weak_type=weak_type)
    if abstract_eval is not None:
        abstract_eval_rules[prim] = abstract_eval
    return prim


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0
