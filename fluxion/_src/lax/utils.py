"""Small helpers shared by the primitive families: defining primitives and checking operands."""

from __future__ import annotations

from typing import Callable

from ..core import Primitive, abstract_eval_rules


def standard_primitive(name: str, abstract_eval: Callable, *, multiple_results: bool = False,
                       weak_type: str | Callable = "all") -> Primitive:
    """Creates a primitive and registers its shape/dtype rule.

    Its implementation is registered by each backend that supports it (the NumPy backend in
    `fluxion._src.backends.numpy`, keyed by the primitive object); lax itself never imports a backend.
    """
    prim = Primitive(name, multiple_results=multiple_results, weak_type=weak_type)
    abstract_eval_rules[prim] = abstract_eval
    return prim


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0
