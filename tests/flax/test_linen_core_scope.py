"""The functional core under linen: ``fluxion.flax.core`` scopes, filters and FrozenDict."""

import os
import sys
import pathlib
import re

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion.flax import core, errors
from fluxion.flax.core import DenyList, FrozenDict, freeze, in_filter, unfreeze

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import fkey, shapes  # noqa: E402


def _dense(scope, x, features):
    kernel = scope.param('kernel', lambda key, shape: jnp.ones(shape), (x.shape[-1], features))
    return x @ kernel


def _model(scope, x):
    h = _dense(scope.push('first'), x, 3)
    counter = scope.variable('stats', 'calls', lambda: jnp.zeros((), jnp.int32))
    if scope.is_mutable_collection('stats'):
        counter.value = counter.value + 1
    return _dense(scope.push('second'), h, 2)


def test_functional_init_and_apply():
    out, variables = core.init(_model)(fkey(0), jnp.ones((1, 4)))
    assert shapes(variables) == {'params': {'first': {'kernel': (4, 3)},
                                            'second': {'kernel': (3, 2)}},
                                 'stats': {'calls': ()}}
    np.testing.assert_allclose(np.asarray(out), [[12.0, 12.0]])
    y = core.apply(_model)(variables, jnp.ones((1, 4)))
    np.testing.assert_allclose(np.asarray(y), [[12.0, 12.0]])
    y, updated = core.apply(_model, mutable=['stats'])(variables, jnp.ones((1, 4)))
    assert int(updated['stats']['calls']) == 2 and sorted(updated) == ['stats']


def test_scope_naming_and_reservations():
    scope = core.bind({}, rngs={'params': fkey(0)}, mutable=True)
    child = scope.push('a')
    assert (child.name, child.path, child.path_text, child.parent is scope) == \
        ('a', ('a',), '/a', True)
    assert scope.name_reserved('a') and scope.name_reserved('a', 'params')
    with pytest.raises(ValueError, match='Duplicate use of name "a"'):
        scope.push('a')
    scope.reserve('v', 'params')
    scope.reserve('v', 'batch_stats')  # same name in another collection is fine
    with pytest.raises(ValueError, match='Duplicate'):
        scope.reserve('v', 'params')
    assert scope.default_name('a') == 'a0'
    scope.rewind()
    assert not scope.name_reserved('a')
    with pytest.raises(TypeError, match='strings'):
        scope.reserve(3)


def test_bind_never_mutates_inputs():
    variables = {'params': {'first': {'kernel': jnp.ones((4, 3))},
                            'second': {'kernel': jnp.ones((3, 2))}}}
    scope = core.bind(variables, mutable=True)
    scope.push('first').put_variable('params', 'kernel', jnp.zeros((4, 3)))
    scope.put_variable('extra', 'x', 1.0)
    assert float(variables['params']['first']['kernel'][0, 0]) == 1.0
    assert sorted(variables) == ['params']
    assert sorted(scope.variables()) == ['extra', 'params']


def test_variable_errors():
    scope = core.bind({'stats': {'n': 1}}, mutable=False)
    with pytest.raises(errors.ScopeVariableNotFoundError, match='"m".*"stats".*immutable'):
        scope.variable('stats', 'm', lambda: 0)
    with pytest.raises(errors.ScopeCollectionNotFound, match='"cache".*empty'):
        scope.variable('cache', 'k', lambda: 0)
    with pytest.raises(errors.ModifyScopeVariableError, match='"n".*"stats" is immutable'):
        scope.put_variable('stats', 'n', 2)
    assert scope.variable('stats', 'n').value == 1


@pytest.mark.parametrize('filter_like,col,expected', [
    (True, 'params', True), (False, 'params', False), ('params', 'params', True),
    ('params', 'stats', False), (['a', 'stats'], 'stats', True),
    (DenyList('intermediates'), 'params', True), (DenyList('intermediates'), 'intermediates', False),
    (DenyList(['a', 'b']), 'b', False), ([DenyList('a'), 'a'], 'a', True),
])
def test_collection_filters(filter_like, col, expected):
    assert in_filter(filter_like, col) is expected


def test_bad_filter_raises():
    with pytest.raises(TypeError, match='Invalid collection filter'):
        in_filter(3, 'params')


def test_frozen_dict():
    fd = freeze({'a': {'b': jnp.ones(2)}, 'c': 1})
    assert isinstance(fd['a'], FrozenDict) and len(fd) == 2
    with pytest.raises(ValueError, match='immutable'):
        fd['c'] = 2
    assert unfreeze(fd) == {'a': {'b': fd['a']['b']}, 'c': 1} and type(unfreeze(fd)['a']) is dict
    rest, c = fd.pop('c')
    assert c == 1 and list(rest) == ['a']
    assert fd.copy({'d': 4})['d'] == 4 and 'd' not in fd
    leaves, treedef = tree_util.tree_flatten(fd)
    assert [np.asarray(x).tolist() for x in leaves] == [[1.0, 1.0], 1]
    assert isinstance(tree_util.tree_unflatten(treedef, leaves), FrozenDict)
    assert hash(freeze({'x': 1})) == hash(freeze({'x': 1}))


def test_library_imports_only_public_fluxion():
    """fluxion.flax (linen, core, train_state) must not import jax/flax/optax or fluxion._src."""
    root = pathlib.Path(__file__).resolve().parents[2] / 'fluxion' / 'flax'
    files = list((root / 'linen').glob('*.py')) + list((root / 'core').glob('*.py')) + [
        root / 'training' / 'train_state.py', root / 'errors.py', root / '__init__.py']
    forbidden = re.compile(r'^\s*(import|from)\s+(jax|jaxlib|flax|optax|haiku|torch|'
                           r'fluxion\._src)\b', re.M)
    offenders = [str(f) for f in files if forbidden.search(f.read_text())]
    assert offenders == []
