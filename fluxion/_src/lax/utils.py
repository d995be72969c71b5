"""Small helpers shared by the primitive families: defining primitives and checking operands."""

from __future__ import annotations

from typing import Callable

from .. import core
from ..backends.numpy import register_impl
from ..core import Primitive, ShapedArray, abstract_eval_rules


def standard_primitive(name: str, abstract_eval: Callable, impl: Callable, *, multiple_results: bool = False,
                       weak_type: str | Callable = "all") -> Primitive:
    """Creates a primitive and registers its shape/dtype rule and its NumPy implementation."""
    prim = Primitive(name, multiple_results=multiple_results, weak_type=weak_type)
    abstract_eval_rules[prim] = abstract_eval
    register_impl(prim, impl)
    return prim


def aval(x) -> ShapedArray:
    return core.get_aval(x)


def shape_of(x) -> tuple:
    return core.get_aval(x).shape


def canonicalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise ValueError(f"{name} {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0
