"""Helpers for Haiku parameter/state trees `{module_name: {name: array}}` (`hk.data_structures`)."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, NamedTuple

import numpy as np

from fluxion import tree_util

__all__ = ["to_mutable_dict", "to_haiku_dict", "to_immutable_dict", "traverse", "filter", "map", "partition",
           "partition_n", "merge", "is_subset", "tree_size", "tree_bytes"]


def to_mutable_dict(mapping: Mapping) -> dict:
    """A copy as nested plain dicts."""
    return {k: to_mutable_dict(v) if isinstance(v, Mapping) else v for k, v in mapping.items()}


to_haiku_dict = to_mutable_dict
to_immutable_dict = to_mutable_dict


class DataStructureEntry(NamedTuple):
    module_name: str
    name: str
    value: Any


def traverse(structure: Mapping) -> Iterator[DataStructureEntry]:
    """Yields `(module_name, name, value)` for every leaf, sorted by module then name."""
    for module_name in sorted(structure):
        bundle = structure[module_name]
        for name in sorted(bundle):
            yield DataStructureEntry(module_name, name, bundle[name])


def _build(entries) -> dict:
    out: dict = {}
    for module_name, name, value in entries:
        out.setdefault(module_name, {})[name] = value
    return out


def filter(predicate: Callable[[str, str, Any], bool], structure: Mapping) -> dict:  # noqa: A001 (Haiku's name)
    """Only the leaves for which `predicate(module_name, name, value)` is true."""
    return _build(e for e in traverse(structure) if predicate(*e))


def map(fn: Callable[[str, str, Any], Any], structure: Mapping) -> dict:  # noqa: A001 (Haiku's name)
    """`{module: {name: fn(module, name, value)}}` over every leaf."""
    return _build((m, n, fn(m, n, v)) for m, n, v in traverse(structure))


def partition(predicate: Callable[[str, str, Any], bool], structure: Mapping) -> tuple[dict, dict]:
    """`(leaves where predicate is true, the others)`."""
    entries = list(traverse(structure))
    return (_build(e for e in entries if predicate(*e)), _build(e for e in entries if not predicate(*e)))


def partition_n(fn: Callable[[str, str, Any], int], structure: Mapping, n: int) -> tuple[dict, ...]:
    """Splits the leaves into `n` structures by the index `fn(module_name, name, value)` in [0, n).

    Raises:
        ValueError: `fn` returns an index outside [0, n).
    """
    groups: list[list] = [[] for _ in range(n)]
    for e in traverse(structure):
        i = fn(*e)
        if not 0 <= i < n:
            raise ValueError(f"partition_n: fn returned {i} for {e.module_name}/{e.name}, expected 0 <= i < {n}")
        groups[i].append(e)
    return tuple(_build(g) for g in groups)


def merge(*structures: Mapping, check_duplicates: bool = False) -> dict:
    """Merges structures, later ones winning.

    Raises:
        ValueError: with `check_duplicates`, a leaf present twice with different shape or dtype.
    """
    out: dict = {}
    for s in structures:
        for module_name, name, value in traverse(s):
            bundle = out.setdefault(module_name, {})
            if check_duplicates and name in bundle:
                old = bundle[name]
                if np.shape(old) != np.shape(value) or getattr(old, "dtype", None) != getattr(value, "dtype", None):
                    raise ValueError(f"Duplicate array found for {module_name}/{name} with different shape or "
                                     f"dtype: {np.shape(old)} vs {np.shape(value)}")
            bundle[name] = value
    return out


def is_subset(*, subset: Mapping, superset: Mapping) -> bool:
    """True if every (module, name) of `subset` is in `superset`."""
    return all(m in superset and n in superset[m] for m, n, _ in traverse(subset))


def tree_size(tree: Any) -> int:
    """Total number of elements of all array leaves."""
    return int(sum(np.size(x) for x in tree_util.tree_leaves(tree)))


def tree_bytes(tree: Any) -> int:
    """Total bytes of all array leaves."""
    return int(sum(np.size(x) * np.dtype(x.dtype).itemsize for x in tree_util.tree_leaves(tree)))
