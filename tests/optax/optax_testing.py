"""Shared helpers for the fluxion.optax tests (library-agnostic pytree tools)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

# Shapes of the random parameter pytree: a matrix, a vector, a 4-d kernel with
# tied dimensions (exercises Adafactor's axis choice) and a scalar.
PARAM_SHAPES = {
    'params': {
        'dense': {'kernel': (4, 3), 'bias': (3,)},
        'conv': {'kernel': (3, 3, 2, 4)},
    },
    'temperature': (),
}


def _map_nested(fn: Callable[[Any], Any], tree: Any) -> Any:
    if isinstance(tree, Mapping):
        return {k: _map_nested(fn, v) for k, v in tree.items()}
    return fn(tree)


def random_tree(seed: int, scale: float = 1.0, offset: float = 0.0) -> dict:
    """NumPy float32 pytree with the shapes of PARAM_SHAPES."""
    rng = np.random.default_rng(seed)
    return _map_nested(
        lambda shape: (offset + scale * rng.standard_normal(shape)).astype(np.float32),
        PARAM_SHAPES)


def convert(tree: Any, asarray: Callable[[Any], Any]) -> Any:
    """Converts every leaf of a nested dict with ``asarray``."""
    return _map_nested(asarray, tree)


def describe(x: Any) -> Any:
    """Library-independent description of a pytree's structure and leaf types.

    NamedTuples are described by class name and field names, so a fluxion
    state and an optax state describe equally iff they have the same layout.
    """
    if x is None:
        return None
    if isinstance(x, tuple) and hasattr(x, '_fields'):
        return (type(x).__name__, tuple(x._fields), tuple(describe(c) for c in x))
    if isinstance(x, Mapping):
        return ('dict', tuple((k, describe(v)) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(describe(c) for c in x))
    arr = np.asarray(x)
    return ('array', arr.shape, str(arr.dtype))


def leaves(x: Any) -> list:
    """Array leaves of a pytree in the order used by ``describe``."""
    if x is None:
        return []
    if isinstance(x, tuple) and hasattr(x, '_fields'):
        return [leaf for c in x for leaf in leaves(c)]
    if isinstance(x, Mapping):
        return [leaf for _, v in sorted(x.items(), key=lambda kv: str(kv[0])) for leaf in leaves(v)]
    if isinstance(x, (list, tuple)):
        return [leaf for c in x for leaf in leaves(c)]
    return [np.asarray(x)]


def assert_trees_close(actual: Any, expected: Any, rtol: float = 1e-6,
                       atol: float = 1e-8, check_dtypes: bool = True) -> None:
    """Asserts same layout (and dtypes) and elementwise-close leaves."""
    if check_dtypes:
        assert describe(actual) == describe(expected)
    a_leaves, e_leaves = leaves(actual), leaves(expected)
    assert len(a_leaves) == len(e_leaves)
    for a, e in zip(a_leaves, e_leaves):
        assert a.shape == e.shape
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64),
                                   rtol=rtol, atol=atol)


def run_optimizer(tx: Any, params: Any, grads_seq: list, jit: Callable | None = None,
                  apply_updates: Callable | None = None) -> tuple[list, Any, Any]:
    """Runs ``len(grads_seq)`` update steps; returns (updates per step, state, params)."""
    update = jit(tx.update) if jit is not None else tx.update
    state = tx.init(params)
    all_updates = []
    for grads in grads_seq:
        updates, state = update(grads, state, params)
        all_updates.append(updates)
        params = apply_updates(params, updates)
    return all_updates, state, params
