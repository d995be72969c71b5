"""PRNG derivation of fluxion.flax.linen: same module + same seed => same numbers as Flax.

Two oracles: a hand computation of Flax 0.12's documented recipe (SHA-1 of the
scope path and call counter, folded into the root key) using hashlib and
fluxion.random, and real Flax run on the same models (importorskip).
"""

import os
import sys
import hashlib

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion import random
from fluxion.flax import linen as fnn
from fluxion.flax.core.scope import fold_in_static

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import assert_trees_close, fkey, to_fluxion, to_numpy  # noqa: E402


def _expected_key(root, *data):
    digest = hashlib.sha1()
    for x in data:
        digest.update(x.encode() if isinstance(x, str) else bytes([x]))
    return random.fold_in(root, jnp.uint32(int.from_bytes(digest.digest()[:4], 'big')))


def test_fold_in_static_matches_hand_computed_recipe():
    root = fkey(42)
    np.testing.assert_array_equal(np.asarray(fold_in_static(root, ('Dense1', 1))),
                                  np.asarray(_expected_key(root, 'Dense1', 1)))
    np.testing.assert_array_equal(np.asarray(fold_in_static(root, ())), np.asarray(root))
    # Different paths or counters give different keys.
    assert not np.array_equal(np.asarray(fold_in_static(root, ('a', 1))),
                              np.asarray(fold_in_static(root, ('a', 2))))


def test_param_keys_follow_scope_path_and_counter():
    class Model(fnn.Module):
        @fnn.compact
        def __call__(self, x):
            x = fnn.Dense(4, name='Dense1')(x)
            return fnn.Dense(2)(x)

    root = fkey(42)
    params = Model().init(root, jnp.ones((1, 3)))['params']
    lecun = fnn.initializers.lecun_normal()
    # kernel is the 1st key drawn in its scope; bias (zeros) draws the 2nd.
    np.testing.assert_array_equal(np.asarray(params['Dense1']['kernel']),
                                  np.asarray(lecun(_expected_key(root, 'Dense1', 1), (3, 4))))
    np.testing.assert_array_equal(np.asarray(params['Dense_0']['kernel']),
                                  np.asarray(lecun(_expected_key(root, 'Dense_0', 1), (4, 2))))


def test_make_rng_counter_and_nested_path():
    class Inner(fnn.Module):
        @fnn.compact
        def __call__(self):
            return self.make_rng('noise'), self.make_rng('noise')

    class Outer(fnn.Module):
        @fnn.compact
        def __call__(self):
            return Inner(name='inner')()

    root = fkey(7)
    k1, k2 = Outer().apply({}, rngs={'noise': root})
    np.testing.assert_array_equal(np.asarray(k1), np.asarray(_expected_key(root, 'inner', 1)))
    np.testing.assert_array_equal(np.asarray(k2), np.asarray(_expected_key(root, 'inner', 2)))


def test_make_rng_falls_back_to_params_stream():
    class Probe(fnn.Module):
        @fnn.compact
        def __call__(self):
            return self.make_rng('dropout')

    root = fkey(3)
    np.testing.assert_array_equal(np.asarray(Probe().apply({}, rngs={'params': root})),
                                  np.asarray(_expected_key(root, 1)))


def test_recreated_child_continues_its_counter():
    # A compact child re-created on a second call draws new keys, not the same ones.
    class Parent(fnn.Module):
        def setup(self):
            self.drop = fnn.Dropout(0.5, deterministic=False)

        def __call__(self, x):
            return self.drop(x), self.drop(x)

    a, b = Parent().apply({}, jnp.ones((64,)), rngs={'dropout': fkey(0)})
    assert not np.array_equal(np.asarray(a), np.asarray(b))


# ----------------------------------------------------------------------------
# Against real Flax.
# ----------------------------------------------------------------------------

flax_linen = pytest.importorskip('flax.linen')
jax = pytest.importorskip('jax')


def _models(nn, rand):
    """The same model definitions written against either library's ``nn`` and ``random``."""

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, inputs):
            inputs = inputs.reshape(inputs.shape[0], -1) / 255.
            x = nn.relu(nn.Dense(128, name='Dense1')(inputs))
            x = nn.relu(nn.Dense(128, name='Dense2')(x))
            return nn.Dense(10, name='Output')(x)

    class Block(nn.Module):
        features: int

        def setup(self):
            self.layers = [nn.Dense(self.features), nn.Dense(self.features)]
            self.scale = self.param('scale', nn.initializers.normal(0.5), (self.features,))

        def __call__(self, x):
            for layer in self.layers:
                x = nn.gelu(layer(x))
            return x * self.scale

    class Nested(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = Block(8)(x)
            x = nn.Dropout(0.3, deterministic=not train)(x)
            x = Block(8, name='named')(x)
            x = nn.Dropout(0.3, deterministic=not train)(x)
            noise = rand.normal(self.make_rng('noise'), x.shape) if train else 0.0
            x = nn.Sequential([nn.Dense(6), nn.relu, nn.Dense(4)])(x + noise)
            w = self.param('w', nn.initializers.truncated_normal(), (4, 3))
            return x @ w

    class Wrapper(nn.Module):
        inner: nn.Module

        @nn.compact
        def __call__(self, x):
            return self.inner(x) + nn.Dense(3)(x)

    class FieldFromCompact(nn.Module):
        @nn.compact
        def __call__(self, x):
            return Wrapper(inner=nn.Dense(3))(x)

    class FieldFromSetup(nn.Module):
        def setup(self):
            self.enc = Wrapper(inner=nn.Dense(3))

        def __call__(self, x):
            return self.enc(x)

    class SharedInSetup(nn.Module):
        def setup(self):
            self.shared = nn.Dense(3)
            self.w1 = Wrapper(self.shared)
            self.w2 = Wrapper(self.shared)

        def __call__(self, x):
            return self.w1(x) + self.w2(x)

    class NestedSequential(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Sequential([nn.Dense(3), nn.Sequential([nn.Dense(4), nn.Dense(3)])])(x)

    return {'mlp': MLP, 'nested': Nested, 'field_from_compact': FieldFromCompact,
            'field_from_setup': FieldFromSetup, 'shared_in_setup': SharedInSetup,
            'nested_sequential': NestedSequential,
            'orphan_field': lambda: Wrapper(Wrapper(nn.Dense(3)))}


@pytest.mark.parametrize('name,x_shape', [
    ('mlp', (2, 28, 28)), ('nested', (3, 5)), ('field_from_compact', (2, 3)),
    ('field_from_setup', (2, 3)), ('shared_in_setup', (2, 3)), ('nested_sequential', (2, 3)),
    ('orphan_field', (2, 3))])
@pytest.mark.parametrize('seed', [0, 42])
def test_init_values_equal_flax(name, x_shape, seed):
    x = np.random.RandomState(seed).uniform(0, 255, x_shape).astype(np.float32)
    ours = _models(fnn, random)[name]().init(fkey(seed), jnp.asarray(x))
    theirs = _models(flax_linen, jax.random)[name]().init(jax.random.PRNGKey(seed),
                                                         jax.numpy.asarray(x))
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=0, atol=0)


def test_init_with_typed_key_equals_flax():
    x = np.ones((1, 784), np.float32)
    ours = _models(fnn, random)['mlp']().init(random.key(5), jnp.asarray(x))
    theirs = _models(flax_linen, jax.random)['mlp']().init(jax.random.key(5),
                                                          jax.numpy.asarray(x))
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=0, atol=0)


def test_stochastic_apply_equals_flax():
    x = np.random.RandomState(0).normal(size=(3, 5)).astype(np.float32)
    theirs_vars = _models(flax_linen, jax.random)['nested']().init(jax.random.PRNGKey(1),
                                                                  jax.numpy.asarray(x))
    ours_vars = to_fluxion(theirs_vars)
    ours = _models(fnn, random)['nested']().apply(ours_vars, jnp.asarray(x), train=True,
                                          rngs={'dropout': fkey(2), 'noise': fkey(3)})
    theirs = _models(flax_linen, jax.random)['nested']().apply(
        theirs_vars, jax.numpy.asarray(x), train=True,
        rngs={'dropout': jax.random.PRNGKey(2), 'noise': jax.random.PRNGKey(3)})
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def _dropout_programs(nn, rand, jnp_, lib):
    """Dropout masks and raw ``make_rng`` keys of several module layouts (outputs of ``apply``, as NumPy)."""
    x = jnp_.ones((4, 6))

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dropout(0.5)(x, deterministic=False)

    class Outer(nn.Module):
        """The same child called twice, a second child, and the parent's own stream."""

        @nn.compact
        def __call__(self, x):
            block = Block()
            return block(x), block(x), Block()(x), self.make_rng('dropout'), self.make_rng('dropout')

    class FromSetup(nn.Module):
        def setup(self):
            self.key = self.make_rng('dropout')
            self.drop = nn.Dropout(0.4)
            self.drops = [nn.Dropout(0.2), nn.Dropout(0.7, broadcast_dims=(1,))]

        def __call__(self, x):
            return (self.key, self.drop(x, False), self.drop(x, False), self.drops[0](x, False),
                    self.drops[1](x, False))

    class Wrap(nn.Module):
        sub: nn.Module

        @nn.compact
        def __call__(self, x):
            return self.sub(x, deterministic=False), self.make_rng('dropout')

    class Shared(nn.Module):
        @nn.compact
        def __call__(self, x):
            shared = nn.Dropout(0.5)
            return Wrap(shared)(x), Wrap(shared)(x), shared(x, deterministic=False)

    class Deep(nn.Module):
        @nn.compact
        def __call__(self, x):
            outer = Outer(name='outer')
            return outer(x), outer(x), [self.make_rng('dropout') for _ in range(300)][255:258]

    def run(model, inputs, rngs, **kwargs):
        return model.apply({}, inputs, rngs=rngs, **kwargs)

    k = rand.PRNGKey
    outs = {
        'outer': run(Outer(), x, {'dropout': k(2)}),
        'setup': run(FromSetup(), x, {'dropout': k(3)}),
        'params_fallback': run(FromSetup(), x, {'params': k(3)}),
        'typed_key': run(FromSetup(), x, {'dropout': rand.key(3)}),
        'shared_field': run(Shared(), x, {'dropout': k(4)}),
        'deep': run(Deep(), x, {'dropout': k(5)}),
        'broadcast_dims': run(nn.Dropout(0.5, broadcast_dims=(0, 2)), jnp_.ones((2, 3, 4)),
                              {'dropout': k(6)}, deterministic=False),
        'negative_broadcast_dim': run(nn.Dropout(0.3, broadcast_dims=(-1,)), x, {'dropout': k(6)},
                                      deterministic=False),
        'jit': lib.jit(lambda key: run(Outer(), x, {'dropout': key}))(k(7)),
    }
    bound = Deep().bind({}, rngs={'dropout': k(8)})
    outs['bound_twice'] = (bound(x), bound(x))
    key_data = rand.key_data
    return {name: [np.asarray(key_data(v) if 'key<' in str(getattr(v, 'dtype', '')) else v)
                   for v in lib.tree_util.tree_leaves(out)] for name, out in outs.items()}


@pytest.mark.parametrize('partitionable', [True, False])
def test_dropout_masks_and_make_rng_keys_equal_flax(partitionable):
    """Keys fold in the module path and the per-scope call count exactly as Flax's LazyRng (bit for bit)."""
    import fluxion
    old = (fluxion.config.jax_threefry_partitionable, jax.config.jax_threefry_partitionable)
    fluxion.config.update('jax_threefry_partitionable', partitionable)
    jax.config.update('jax_threefry_partitionable', partitionable)
    try:
        ours = _dropout_programs(fnn, random, jnp, fluxion)
        theirs = _dropout_programs(flax_linen, jax.random, jax.numpy, jax)
    finally:
        fluxion.config.update('jax_threefry_partitionable', old[0])
        jax.config.update('jax_threefry_partitionable', old[1])
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert len(ours[name]) == len(theirs[name]), name
        for a, b in zip(ours[name], theirs[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)
