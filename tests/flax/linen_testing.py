"""Helpers shared by the fluxion.flax.linen tests: tree conversion and comparison.

Trees are nested dicts of arrays from either library (fluxion or jax/flax);
everything is compared as NumPy arrays so the two libraries never mix.
"""

import numpy as np

import fluxion.numpy as fjnp
from fluxion import random as frandom


def to_numpy(tree):
    """Nested dicts/tuples/lists of arrays -> same structure of np.ndarray."""
    if isinstance(tree, dict) or hasattr(tree, 'items'):
        return {k: to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_numpy(v) for v in tree)
    return np.asarray(tree)


def to_fluxion(tree):
    """Any tree of arrays (e.g. flax variables) -> fluxion arrays, same structure."""
    if isinstance(tree, dict) or hasattr(tree, 'items'):
        return {k: to_fluxion(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_fluxion(v) for v in tree)
    return fjnp.asarray(np.asarray(tree))


def shapes(tree):
    """Nested dict of shapes (tuples), for comparing parameter trees."""
    if isinstance(tree, dict) or hasattr(tree, 'items'):
        return {k: shapes(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(shapes(v) for v in tree)
    return tuple(np.shape(tree))


def assert_trees_close(actual, expected, rtol=1e-6, atol=1e-6, path=''):
    """Same keys everywhere, same shapes and dtypes, values within tolerance."""
    if isinstance(expected, dict) or hasattr(expected, 'items'):
        assert hasattr(actual, 'items'), f'{path}: expected a dict, got {type(actual)}'
        assert sorted(actual.keys()) == sorted(expected.keys()), \
            f'{path}: keys {sorted(actual.keys())} != {sorted(expected.keys())}'
        for k in expected:
            assert_trees_close(actual[k], expected[k], rtol, atol, f'{path}/{k}')
        return
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f'{path}: lengths differ'
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_trees_close(a, e, rtol, atol, f'{path}[{i}]')
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f'{path}: shape {a.shape} != {e.shape}'
    assert a.dtype == e.dtype, f'{path}: dtype {a.dtype} != {e.dtype}'
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=path)


def fkey(seed):
    """A fluxion PRNGKey (uint32[2]) for ``seed``."""
    return frandom.PRNGKey(seed)
