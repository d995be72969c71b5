"""Every fluxion.flax.linen layer against real Flax (the oracle).

Each case builds the same layer from either library's ``nn`` namespace and is
checked twice:

* ``init`` with the same seed gives the same variable tree (names, shapes,
  dtypes, values);
* ``apply`` with Flax's variables (converted to fluxion arrays) gives the
  same output and the same updated collections.
"""

import os
import sys
import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.flax import linen as fnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import assert_trees_close, fkey, to_fluxion, to_numpy  # noqa: E402

flax_linen = pytest.importorskip('flax.linen')
flax_pooling = pytest.importorskip('flax.linen.pooling')
jax = pytest.importorskip('jax')


@dataclasses.dataclass
class Case:
    name: str
    make: Callable[[Any], Any]           # nn namespace -> module
    inputs: Callable[[np.random.RandomState], tuple]
    kwargs: dict = dataclasses.field(default_factory=dict)
    mutable: Any = False
    rngs: tuple = ()                      # stream names needing a key in apply
    rtol: float = 2e-5
    atol: float = 2e-6


def normal(*shape, dtype=np.float32):
    return lambda rs: (rs.normal(size=shape).astype(dtype),)


def ints(high, *shape):
    return lambda rs: (rs.randint(0, high, size=shape).astype(np.int32),)


CASES = [
    Case('dense', lambda nn: nn.Dense(5), normal(3, 4)),
    Case('dense_no_bias_3d', lambda nn: nn.Dense(5, use_bias=False), normal(2, 3, 4)),
    Case('dense_bf16_compute', lambda nn: nn.Dense(5, dtype=jax.numpy.bfloat16), normal(3, 4),
         rtol=2e-2, atol=2e-2),
    Case('dense_f16_params', lambda nn: nn.Dense(5, param_dtype=jax.numpy.float16), normal(3, 4),
         rtol=2e-3, atol=2e-3),
    Case('dense_int_inputs', lambda nn: nn.Dense(2), ints(5, 3, 4)),
    Case('dense_general_two_axes', lambda nn: nn.DenseGeneral((2, 3), axis=(-2, -1)),
         normal(4, 5, 6)),
    Case('dense_general_batch_dims', lambda nn: nn.DenseGeneral((2, 3), batch_dims=(0,)),
         normal(4, 5, 6)),
    Case('conv_same', lambda nn: nn.Conv(4, (3, 3)), normal(2, 7, 7, 3)),
    Case('conv_valid_strided', lambda nn: nn.Conv(4, (3, 2), strides=2, padding='VALID'),
         normal(2, 9, 8, 3)),
    Case('conv_circular', lambda nn: nn.Conv(4, (3, 3), padding='CIRCULAR'), normal(1, 6, 6, 2)),
    Case('conv_reflect', lambda nn: nn.Conv(2, (3, 3), padding='REFLECT'), normal(1, 6, 6, 2)),
    Case('conv_explicit_padding', lambda nn: nn.Conv(3, (3, 3), padding=((1, 2), (0, 1))),
         normal(2, 6, 5, 2)),
    Case('conv_int_padding', lambda nn: nn.Conv(3, (3, 3), padding=1), normal(2, 6, 5, 2)),
    Case('conv_dilations', lambda nn: nn.Conv(3, (3, 3), kernel_dilation=2, input_dilation=(1, 2),
                                               padding=((1, 1), (2, 0))),
         normal(2, 8, 6, 2)),
    Case('conv_groups', lambda nn: nn.Conv(6, (3, 3), feature_group_count=2), normal(2, 5, 5, 4)),
    Case('conv_1d_int_kernel', lambda nn: nn.Conv(3, 3), normal(2, 9, 2)),
    Case('conv_causal', lambda nn: nn.Conv(3, (3,), padding='CAUSAL', kernel_dilation=2),
         normal(2, 9, 2)),
    Case('conv_unbatched', lambda nn: nn.Conv(3, (3, 3)), normal(5, 5, 2)),
    Case('conv_two_batch_dims', lambda nn: nn.Conv(3, (3, 3)), normal(2, 3, 5, 5, 2)),
    Case('conv_3d', lambda nn: nn.Conv(2, (2, 2, 2)), normal(1, 4, 4, 4, 2)),
    Case('conv_transpose_same', lambda nn: nn.ConvTranspose(3, (3, 3), strides=(2, 2)),
         normal(2, 4, 4, 2)),
    Case('conv_transpose_valid', lambda nn: nn.ConvTranspose(3, (3, 3), padding='VALID'),
         normal(2, 4, 4, 2)),
    Case('conv_transpose_circular',
         lambda nn: nn.ConvTranspose(3, (3, 3), strides=2, padding='CIRCULAR'), normal(1, 4, 4, 2)),
    Case('conv_transpose_kernel',
         lambda nn: nn.ConvTranspose(3, (3, 3), strides=2, transpose_kernel=True),
         normal(2, 4, 4, 2)),
    Case('embed', lambda nn: nn.Embed(10, 4), ints(10, 3, 5)),
    Case('layer_norm', lambda nn: nn.LayerNorm(), normal(3, 6)),
    Case('layer_norm_axes',
         lambda nn: nn.LayerNorm(reduction_axes=(1, 2), feature_axes=-1, use_fast_variance=False),
         normal(2, 3, 4)),
    Case('layer_norm_bf16', lambda nn: nn.LayerNorm(dtype=jax.numpy.bfloat16), normal(3, 6),
         rtol=2e-2, atol=2e-2),
    Case('rms_norm', lambda nn: nn.RMSNorm(), normal(3, 6)),
    Case('group_norm', lambda nn: nn.GroupNorm(num_groups=2), normal(2, 3, 3, 6)),
    Case('group_norm_size', lambda nn: nn.GroupNorm(num_groups=None, group_size=3),
         normal(2, 4, 6)),
    Case('instance_norm', lambda nn: nn.InstanceNorm(), normal(2, 4, 4, 3)),
    Case('batch_norm_train', lambda nn: nn.BatchNorm(use_running_average=False, momentum=0.9),
         normal(8, 3), mutable=['batch_stats']),
    Case('batch_norm_axis', lambda nn: nn.BatchNorm(use_running_average=False, axis=1),
         normal(4, 3, 5), mutable=['batch_stats']),
    Case('batch_norm_eval', lambda nn: nn.BatchNorm(use_running_average=True), normal(8, 3)),
    Case('dropout', lambda nn: nn.Dropout(0.4, deterministic=False), normal(6, 8),
         rngs=('dropout',)),
    Case('dropout_broadcast', lambda nn: nn.Dropout(0.5, broadcast_dims=(0,)), normal(6, 8),
         kwargs={'deterministic': False}, rngs=('dropout',)),
    Case('dropout_deterministic', lambda nn: nn.Dropout(0.5), normal(6, 8),
         kwargs={'deterministic': True}),
    Case('mha', lambda nn: nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8),
         normal(2, 5, 6)),
    Case('mha_cross_mask', lambda nn: nn.MultiHeadDotProductAttention(num_heads=2, out_features=3),
         lambda rs: (rs.normal(size=(2, 4, 6)).astype(np.float32),
                     rs.normal(size=(2, 7, 6)).astype(np.float32)),
         kwargs={'mask': np.tril(np.ones((4, 7), bool))[None, None]}),
    Case('mha_dropout_normalize_qk',
         lambda nn: nn.MultiHeadDotProductAttention(num_heads=2, dropout_rate=0.3,
                                                    normalize_qk=True, deterministic=False),
         normal(2, 5, 6), rngs=('dropout',)),
    Case('self_attention_causal', lambda nn: nn.SelfAttention(num_heads=3),
         normal(2, 5, 6), kwargs={'mask': np.tril(np.ones((5, 5), bool))[None, None]}),
    Case('prelu', lambda nn: nn.PReLU(), normal(4, 3)),
    Case('sequential', lambda nn: nn.Sequential([nn.Dense(4), nn.gelu, nn.LayerNorm()]),
         normal(3, 5)),
]


_INIT_CACHE = {}


def _init_both(case, seed=0):
    """(inputs, our variables, Flax's variables), computed once per case (tests only read them)."""
    if case.name not in _INIT_CACHE:
        rs = np.random.RandomState(seed)
        args = case.inputs(rs)
        ours = case.make(fnn).init(fkey(seed), *[jnp.asarray(a) for a in args], **case.kwargs)
        theirs = case.make(flax_linen).init(jax.random.PRNGKey(seed),
                                            *[jax.numpy.asarray(a) for a in args], **case.kwargs)
        _INIT_CACHE[case.name] = args, ours, theirs
    return _INIT_CACHE[case.name]


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_init_matches_flax(case):
    _, ours, theirs = _init_both(case)
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=0, atol=0)


@pytest.mark.parametrize('case', CASES, ids=lambda c: c.name)
def test_apply_matches_flax(case):
    args, _, variables = _init_both(case)
    if 'batch_stats' in variables:  # non-trivial running statistics
        variables = jax.tree_util.tree_map(lambda v: v + 0.25, variables)
    rng_ours = {name: fkey(7 + i) for i, name in enumerate(case.rngs)}
    rng_theirs = {name: jax.random.PRNGKey(7 + i) for i, name in enumerate(case.rngs)}
    ours = case.make(fnn).apply(to_fluxion(variables), *[jnp.asarray(a) for a in args],
                                rngs=rng_ours or None, mutable=case.mutable, **case.kwargs)
    theirs = case.make(flax_linen).apply(variables, *[jax.numpy.asarray(a) for a in args],
                                         rngs=rng_theirs or None, mutable=case.mutable,
                                         **case.kwargs)
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=case.rtol, atol=case.atol)


def test_embed_attend_matches_flax():
    rs = np.random.RandomState(0)
    ids = rs.randint(0, 10, size=(3,)).astype(np.int32)
    query = rs.normal(size=(2, 4)).astype(np.float32)
    variables = flax_linen.Embed(10, 4).init(jax.random.PRNGKey(0), jax.numpy.asarray(ids))
    ours = fnn.Embed(10, 4).apply(to_fluxion(variables), jnp.asarray(query), method='attend')
    theirs = flax_linen.Embed(10, 4).apply(variables, jax.numpy.asarray(query), method='attend')
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=1e-5, atol=1e-6)


def test_batch_norm_running_average_update_by_hand():
    x = np.random.RandomState(0).normal(2.0, 3.0, size=(16, 2)).astype(np.float32)
    model = fnn.BatchNorm(use_running_average=False, momentum=0.8)
    variables = model.init(fkey(0), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(variables['batch_stats']['mean']), [0.0, 0.0])
    y, updates = model.apply(variables, jnp.asarray(x), mutable=['batch_stats'])
    np.testing.assert_allclose(np.asarray(updates['batch_stats']['mean']), 0.2 * x.mean(0),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(updates['batch_stats']['var']),
                               0.8 + 0.2 * x.var(0), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(y), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5),
                               rtol=1e-4, atol=1e-5)
    # Evaluation mode uses the stored statistics and changes nothing.
    evaluated = fnn.BatchNorm(use_running_average=True).apply(
        {**variables, 'batch_stats': updates['batch_stats']}, jnp.asarray(x))
    mean, var = 0.2 * x.mean(0), 0.8 + 0.2 * x.var(0)
    np.testing.assert_allclose(np.asarray(evaluated), (x - mean) / np.sqrt(var + 1e-5),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match='use_running_average'):
        fnn.BatchNorm().apply(variables, jnp.asarray(x))


def test_dropout_is_deterministic_given_key():
    x = jnp.ones((100,))
    drop = fnn.Dropout(0.5, deterministic=False)
    a = drop.apply({}, x, rngs={'dropout': fkey(0)})
    b = drop.apply({}, x, rngs={'dropout': fkey(0)})
    c = drop.apply({}, x, rngs={'dropout': fkey(1)})
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(c))
    assert set(np.unique(np.asarray(a)).tolist()) <= {0.0, 2.0}
    np.testing.assert_array_equal(np.asarray(fnn.Dropout(0.5).apply({}, x, deterministic=True)),
                                  np.ones(100))
    np.testing.assert_array_equal(np.asarray(fnn.Dropout(1.0).apply({}, x, deterministic=False)),
                                  np.zeros(100))


@pytest.mark.parametrize('fn,kwargs', [
    ('avg_pool', dict(window_shape=(2, 2))),
    ('avg_pool', dict(window_shape=(3, 3), strides=(2, 2), padding='SAME')),
    ('avg_pool', dict(window_shape=(3, 3), padding='SAME', count_include_pad=False)),
    ('avg_pool', dict(window_shape=(3, 2), padding=((1, 1), (0, 1)), count_include_pad=False)),
    ('max_pool', dict(window_shape=(2, 2), strides=(2, 2))),
    ('max_pool', dict(window_shape=(3, 3), padding='SAME')),
    ('min_pool', dict(window_shape=(2, 3), strides=(1, 2), padding='VALID')),
])
@pytest.mark.parametrize('shape', [(2, 6, 7, 3), (6, 7, 3), (2, 2, 6, 7, 3)])
def test_pooling_matches_flax(fn, kwargs, shape):
    x = np.random.RandomState(0).normal(size=shape).astype(np.float32)
    ours = getattr(fnn, fn)(jnp.asarray(x), **kwargs)
    # Flax mishandles some options with two batch dims; pooling is per example,
    # so flatten the batch dims for the oracle.
    flat = x.reshape((-1,) + x.shape[-3:]) if x.ndim == 5 else x
    theirs = getattr(flax_pooling, fn)(jax.numpy.asarray(flat), **kwargs)
    theirs = np.asarray(theirs).reshape(x.shape[:-3] + theirs.shape[-3:])
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=1e-6, atol=1e-6)


def test_attention_functions_and_masks_match_flax():
    rs = np.random.RandomState(0)
    q, k, v = (rs.normal(size=(2, 4, 3, 5)).astype(np.float32) for _ in range(3))
    bias = rs.normal(size=(1, 3, 4, 4)).astype(np.float32)
    tokens = np.array([[1, 2, 0, 0], [3, 0, 0, 0]], np.int32)
    ours_mask = fnn.combine_masks(fnn.make_attention_mask(jnp.asarray(tokens > 0),
                                                          jnp.asarray(tokens > 0)),
                                  fnn.make_causal_mask(jnp.asarray(tokens)))
    theirs_mask = flax_linen.combine_masks(
        flax_linen.make_attention_mask(jax.numpy.asarray(tokens > 0),
                                       jax.numpy.asarray(tokens > 0)),
        flax_linen.make_causal_mask(jax.numpy.asarray(tokens)))
    assert_trees_close(to_numpy(ours_mask), to_numpy(theirs_mask), rtol=0, atol=0)
    assert fnn.combine_masks(None, None) is None
    ours = fnn.dot_product_attention(*map(jnp.asarray, (q, k, v)), bias=jnp.asarray(bias),
                                     mask=ours_mask)
    theirs = flax_linen.dot_product_attention(*map(jax.numpy.asarray, (q, k, v)),
                                              bias=jax.numpy.asarray(bias), mask=theirs_mask)
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=1e-5, atol=1e-6)
    ours_w = fnn.dot_product_attention_weights(jnp.asarray(q), jnp.asarray(k), dropout_rate=0.5,
                                               dropout_rng=fkey(3), broadcast_dropout=False)
    theirs_w = flax_linen.dot_product_attention_weights(
        jax.numpy.asarray(q), jax.numpy.asarray(k), dropout_rate=0.5,
        dropout_rng=jax.random.PRNGKey(3), broadcast_dropout=False)
    assert_trees_close(to_numpy(ours_w), to_numpy(theirs_w), rtol=1e-5, atol=1e-6)


def test_attention_shape_errors_are_clear():
    q = jnp.ones((2, 4, 3, 5))
    with pytest.raises(ValueError, match=r'same depth.*query \(2, 4, 3, 5\), key \(2, 4, 3, 6\)'):
        fnn.dot_product_attention(q, jnp.ones((2, 4, 3, 6)), jnp.ones((2, 4, 3, 6)))
    with pytest.raises(ValueError, match='divisible by num_heads'):
        fnn.SelfAttention(num_heads=4).init(fkey(0), jnp.ones((1, 3, 6)))


def test_mha_sow_weights_and_decode_cache():
    x = jnp.asarray(np.random.RandomState(0).normal(size=(1, 4, 6)).astype(np.float32))
    model = fnn.SelfAttention(num_heads=2)
    variables = model.init(fkey(0), x)
    _, state = model.apply(variables, x, sow_weights=True, mutable=['intermediates'])
    weights = state['intermediates']['attention_weights'][0]
    assert weights.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(np.asarray(weights).sum(-1), np.ones((1, 2, 4)), rtol=1e-5)
    # Decoding one position at a time with a causal cache equals causal attention.
    dec = fnn.SelfAttention(num_heads=2, decode=True)
    cache = dec.init(fkey(0), x)['cache']
    full = model.apply(variables, x, mask=fnn.make_causal_mask(jnp.ones((1, 4))))
    steps = []
    for t in range(4):
        y, updated = dec.apply({'params': variables['params'], 'cache': cache}, x[:, t:t + 1],
                               mutable=['cache'])
        cache = updated['cache']
        steps.append(np.asarray(y))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), np.asarray(full), rtol=1e-5,
                               atol=1e-6)


def test_layer_input_errors_are_clear():
    with pytest.raises(ValueError, match='Embed inputs must be an integer'):
        fnn.Embed(10, 4).init(fkey(0), jnp.ones((3,)))
    with pytest.raises(ValueError, match=r'Number of groups \(4\) does not divide.*\(6\)'):
        fnn.GroupNorm(num_groups=4).init(fkey(0), jnp.ones((1, 3, 6)))
    with pytest.raises(ValueError, match='exactly one of num_groups and group_size'):
        fnn.GroupNorm(group_size=2).init(fkey(0), jnp.ones((1, 3, 6)))
    with pytest.raises(ValueError, match='Invalid padding'):
        fnn.Conv(2, (3, 3), padding=[1, 2, 3]).init(fkey(0), jnp.ones((1, 5, 5, 1)))
    with pytest.raises(ValueError, match=r'at least 3 dimensions.*\(5, 1\)'):
        fnn.Conv(2, (3, 3)).init(fkey(0), jnp.ones((5, 1)))
    with pytest.raises(ValueError, match='CAUSAL padding is only implemented for 1-D'):
        fnn.Conv(2, (3, 3), padding='CAUSAL').init(fkey(0), jnp.ones((1, 5, 5, 1)))
    with pytest.raises(ValueError, match='batch_dims'):
        fnn.DenseGeneral(3, batch_dims=(1,)).init(fkey(0), jnp.ones((2, 3, 4)))


def test_activations_are_fluxion_nn_functions():
    assert fnn.relu is fluxion.nn.relu and fnn.gelu is fluxion.nn.gelu
    assert fnn.log_softmax is fluxion.nn.log_softmax and fnn.tanh is jnp.tanh
    x = jnp.asarray([-2.0, 0.5])
    np.testing.assert_allclose(np.asarray(fnn.leaky_relu(x, negative_slope=0.1)), [-0.2, 0.5],
                               rtol=1e-6)
    assert fnn.initializers.zeros_init() is fnn.initializers.zeros
