"""Module and FrozenDict text: the same program prints the same text with fluxion and with Flax.

Each case builds its objects with either library (``nn``, ``jnp``, ``random`` of fluxion or of jax/flax) and
returns the texts to compare; object addresses (``at 0x...``) are masked.
"""

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion.flax import core as fcore
from fluxion.flax import linen as fnn

flax_linen = pytest.importorskip('flax.linen')
flax_core = pytest.importorskip('flax.core')
jax = pytest.importorskip('jax')


def _libs(which):
    if which == 'fluxion':
        return fnn, fjnp, fluxion.random, fcore
    return flax_linen, jax.numpy, jax.random, flax_core


def _mask(text):
    return re.sub(r' at 0x[0-9a-f]+', ' at 0x?', text)


def _layer_reprs(nn, jnp, random, core):
    return [repr(nn.Dense(3)), repr(nn.Dense(3, use_bias=False, dtype=jnp.bfloat16)),
            repr(nn.Conv(4, (3, 3), strides=2)), repr(nn.ConvTranspose(2, (3,))),
            repr(nn.DenseGeneral((2, 3), axis=(-2, -1))), repr(nn.Dropout(0.5, broadcast_dims=(1,))),
            repr(nn.BatchNorm(use_running_average=True)), repr(nn.LayerNorm()), repr(nn.GroupNorm(2)),
            repr(nn.RMSNorm()), repr(nn.Embed(3, 4)), repr(nn.MultiHeadDotProductAttention(num_heads=2)),
            repr(nn.SelfAttention(num_heads=1, dropout_rate=0.1)),
            repr(nn.Dense(3, kernel_init=functools.partial(nn.initializers.normal, 0.1)))]


def _user_module_reprs(nn, jnp, random, core):
    class MLP(nn.Module):
        features: Sequence[int]
        act: Callable = nn.relu
        dtype: Any = jnp.float32
        hidden: Any = dataclasses.field(default=None, init=False)

        @nn.compact
        def __call__(self, x):
            return x

    class Base(nn.Module):
        a: int
        b: float = 1.0

    class Derived(Base):
        c: str = 'x'
        d: Any = None

    class Wrap(nn.Module):
        sub: nn.Module
        n: int = 2

    class WithDict(nn.Module):
        layers: dict

    class Empty(nn.Module):
        pass

    texts = [repr(MLP([3, 4])), repr(MLP((3, 4), name='foo')), repr(Derived(1, c='y')),
             repr(Wrap(nn.Dense(2), n=5)), repr(Wrap(MLP([1]))), repr(WithDict({'a': nn.Dense(1), 'b': 3})),
             repr(Wrap(Wrap(nn.Dropout(0.1)))), repr(Empty()),
             repr(nn.Sequential([nn.Dense(2), nn.Dense(3)])),
             [f.name for f in dataclasses.fields(Derived)], [f.name for f in dataclasses.fields(nn.Dense)],
             [f.name for f in dataclasses.fields(MLP) if f.repr]]
    return texts


def _bound_module_reprs(nn, jnp, random, core):
    texts = []

    class WithSetup(nn.Module):
        n: int = 3

        def setup(self):
            self.d = nn.Dense(self.n)
            self.ls = [nn.Dense(1), nn.Dense(2)]

        def __call__(self, x):
            return self.ls[1](self.ls[0](self.d(x)))

    class Compact(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.Dense(3)(x)
            y = nn.Dense(2, name='named')(y)
            texts.append(repr(self))
            return y

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            return WithSetup(n=2)(Compact()(x))

    x = jnp.ones((1, 2))
    variables = WithSetup().init(random.PRNGKey(0), x)
    bound = WithSetup().bind(variables)
    texts.append(repr(bound))            # setup has not run yet: no children
    bound(x)
    texts.append(repr(bound))            # children after setup
    Outer().init(random.PRNGKey(0), x)   # repr of a compact module, taken inside its call
    texts.append(repr(Compact()))
    return texts


def _frozen_dict_reprs(nn, jnp, random, core):
    fd = core.freeze({'b': 1, 'a': {'z': 2.0, 'c': 'x'}, 'params': {}, 3: None})
    arrays = core.freeze({'w': np.arange(6.0).reshape(2, 3), 'n': {'m': np.zeros((2, 2), np.int32)}})
    plain = {'outer': {'inner': [1, 2]}, 'frozen': core.freeze({'k': 1}), 'empty': {}}
    return [repr(fd), str(fd), fd.pretty_repr(), fd.pretty_repr(num_spaces=2), repr(core.FrozenDict()),
            repr(fd['a']), repr(fd.keys()), repr(fd.values()), repr(arrays), core.pretty_repr(plain),
            core.pretty_repr(fd), core.pretty_repr(3), core.pretty_repr({}),
            repr(fd.copy({'new': 1})), repr(fd.pop('b')[0])]


@pytest.mark.parametrize('case', [_layer_reprs, _user_module_reprs, _bound_module_reprs, _frozen_dict_reprs],
                         ids=['layers', 'user_modules', 'bound_modules', 'frozen_dict'])
def test_text_matches_flax(case):
    ours = [_mask(t) if isinstance(t, str) else t for t in case(*_libs('fluxion'))]
    theirs = [_mask(t) if isinstance(t, str) else t for t in case(*_libs('flax'))]
    for a, b in zip(ours, theirs):
        assert a == b
    assert len(ours) == len(theirs)


def test_dense_repr_text():
    """The text itself (no oracle needed): fields in declaration order, then ``parent``/``name`` excluded."""
    assert repr(fnn.Dense(3)) == '\n'.join([
        'Dense(', '    # attributes', '    features = 3', '    use_bias = True', '    dtype = None',
        '    param_dtype = float32', '    precision = None', '    kernel_init = init', '    bias_init = zeros',
        '    promote_dtype = promote_dtype', '    dot_general = None', '    dot_general_cls = None', ')'])
    assert [f.name for f in dataclasses.fields(fnn.Dropout)] == [
        'rate', 'broadcast_dims', 'deterministic', 'rng_collection', 'parent', 'name']
    assert repr(fcore.freeze({'a': {'b': 1}})) == 'FrozenDict({\n    a: {\n        b: 1,\n    },\n})'


def test_factory_fields_replace_the_ops():
    """``dot_general_cls`` / ``conv_general_dilated_cls`` / the attention einsum factories are used, as in Flax."""
    calls = []

    def counting(op):
        def factory():
            def run(*args, **kwargs):
                calls.append(op.__name__)
                return op(*args, **kwargs)
            return run
        return factory

    x = fjnp.ones((1, 4, 4, 2))
    for module in [fnn.Dense(3, dot_general_cls=counting(fluxion.lax.dot_general)),
                   fnn.DenseGeneral(3, dot_general_cls=counting(fluxion.lax.dot_general)),
                   fnn.Conv(3, (2, 2), conv_general_dilated_cls=counting(fluxion.lax.conv_general_dilated))]:
        variables = module.init(fluxion.random.PRNGKey(0), x)
        expected = module.clone(**{f: None for f in ('dot_general_cls', 'conv_general_dilated_cls')
                                   if hasattr(module, f)}).apply(variables, x)
        np.testing.assert_array_equal(np.asarray(module.apply(variables, x)), np.asarray(expected))
    assert calls == ['dot_general', 'dot_general'] * 2 + ['conv_general_dilated'] * 2

    einsums = []

    def einsum_factory():
        def einsum(spec, a, b):
            einsums.append(spec)
            return fjnp.einsum(spec, a, b)
        return einsum

    q = fjnp.ones((1, 3, 4))
    mha = fnn.MultiHeadDotProductAttention(num_heads=2, qk_attn_weights_einsum_cls=einsum_factory,
                                           attn_weights_value_einsum_cls=einsum_factory,
                                           qkv_dot_general_cls=counting(fluxion.lax.dot_general))
    variables = mha.init(fluxion.random.PRNGKey(0), q)
    calls.clear()
    einsums.clear()
    mha.apply(variables, q)
    assert einsums == ['...qhd,...khd->...hqk', '...hqk,...khd->...qhd']
    assert calls == ['dot_general'] * 3
    with pytest.raises(ValueError, match='must be specified together'):
        fnn.dot_product_attention(fjnp.ones((1, 3, 2, 2)), fjnp.ones((1, 3, 2, 2)), fjnp.ones((1, 3, 2, 2)),
                                  qk_attn_weights_einsum=fjnp.einsum)
