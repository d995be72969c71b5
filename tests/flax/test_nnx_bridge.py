"""nnx.bridge (ToNNX, ToLinen, to_linen, lazy_init, NNXMeta, Functional) against Flax (the oracle).

Each case runs with a library namespace ``L`` (``L.nnx``, ``L.nn`` (Linen),
``L.jax``, ``L.jnp``, ``L.flatten``) for fluxion and for Flax; parameter trees,
values, outputs, gradients and mutated collections must agree.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion.flax import linen as fnn
from fluxion.flax import nnx
from fluxion.flax.traverse_util import flatten_dict as fflatten

from .test_nnx_transforms_extra import assert_same, normalize


def _ours() -> Any:
    return types.SimpleNamespace(nnx=nnx, nn=fnn, jax=fluxion, jnp=fjnp, flatten=fflatten)


def _theirs() -> Any:
    fnnx = pytest.importorskip('flax.nnx')
    jax = pytest.importorskip('jax')
    from flax import linen
    from flax.traverse_util import flatten_dict
    return types.SimpleNamespace(nnx=fnnx, nn=linen, jax=jax, jnp=jax.numpy, flatten=flatten_dict)


def _x(L: Any, shape: tuple = (2, 3), seed: int = 0) -> Any:
    return L.jnp.asarray(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def _flat_vars(L: Any, variables: Any) -> dict:
    return {'/'.join(map(str, p)): np.asarray(L.jax.random.key_data(v) if 'key<' in str(getattr(v, 'dtype', ''))
                                              else v)
            for p, v in L.flatten(_unbox(L, variables)).items()}


def _unbox(L: Any, tree: Any) -> Any:
    if hasattr(tree, 'unbox') and not hasattr(tree, 'items'):
        return tree.unbox()
    if hasattr(tree, 'items'):
        return {k: _unbox(L, v) for k, v in tree.items()}
    return tree


def _linen_block(L: Any) -> Any:
    class Block(L.nn.Module):
        @L.nn.compact
        def __call__(self, x, train=False):
            x = L.nn.Dense(4)(x)
            x = L.nn.BatchNorm(use_running_average=not train)(x)
            return L.nn.Dropout(0.5, deterministic=not train)(x)
    return Block()


def _nnx_block_cls(L: Any) -> Any:
    class NNXBlock(L.nnx.Module):
        def __init__(self, din, dout, *, rngs):
            self.lin = L.nnx.Linear(din, dout, rngs=rngs)
            self.bn = L.nnx.BatchNorm(dout, rngs=rngs)
            self.drop = L.nnx.Dropout(0.5, rngs=rngs)
            self.count = L.nnx.BatchStat(L.jnp.array(0))

        def __call__(self, x):
            self.count[...] += 1
            return self.drop(self.bn(self.lin(x)))

        def features(self, x):
            return self.lin(x) * 2
    return NNXBlock


# -- Linen in NNX ------------------------------------------------------------------------------------------------

def case_to_nnx_lazy_init_state(L: Any) -> Any:
    m = L.nnx.bridge.ToNNX(_linen_block(L), rngs=L.nnx.Rngs(0))
    L.nnx.bridge.lazy_init(m, _x(L))
    flat = {'/'.join(map(str, p)): (type(v).__name__, v.get_value())
            for p, v in L.nnx.to_flat_state(L.nnx.state(m))}
    return [flat, m(_x(L))]


def case_to_nnx_train_call_mutates_and_grads(L: Any) -> Any:
    m = L.nnx.bridge.ToNNX(_linen_block(L), rngs=L.nnx.Rngs(params=1, dropout=2))
    m.lazy_init(_x(L))
    y = m(_x(L, seed=1), train=True, mutable=['batch_stats'])
    g = L.nnx.grad(lambda m: (m(_x(L)) ** 2).sum())(m)
    yj = L.nnx.jit(lambda m, x: m(x))(m, _x(L, seed=2))
    return [y, m.BatchNorm_0['mean'], g, yj]


def case_to_nnx_in_nnx_module_and_methods(L: Any) -> Any:
    class Dual(L.nn.Module):
        @L.nn.compact
        def __call__(self, x):
            return L.nn.Dense(3)(x)

        def double(self, x):
            return self(x) * 2

    class Outer(L.nnx.Module):
        def __init__(self, rngs):
            self.linen = L.nnx.bridge.ToNNX(Dual(), rngs=rngs)
            self.head = L.nnx.Linear(3, 1, rngs=rngs)

        def __call__(self, x):
            return self.head(self.linen(x))
    m = Outer(L.nnx.Rngs(3))
    L.nnx.bridge.lazy_init(m, _x(L))
    return [m, m(_x(L)), m.linen.double(_x(L))]


def case_to_nnx_key_rngs(L: Any) -> Any:
    m = L.nnx.bridge.ToNNX(L.nn.Dense(2), rngs=L.jax.random.key(4))
    m.lazy_init(_x(L))
    return [L.nnx.state(m, L.nnx.Param), m(_x(L))]


# -- NNX in Linen ------------------------------------------------------------------------------------------------

def case_to_linen_init_apply(L: Any) -> Any:
    lm = L.nnx.bridge.to_linen(_nnx_block_cls(L), 3, 4)
    rngs = {'params': L.jax.random.key(0), 'dropout': L.jax.random.key(5)}
    v = lm.init(rngs, _x(L))
    y, upd = lm.apply(v, _x(L, seed=1), mutable=['batch_stats'], rngs={'dropout': L.jax.random.key(1)})
    f = lm.apply(v, _x(L), nnx_method='features', rngs={'dropout': L.jax.random.key(1)})
    return [_flat_vars(L, v), y, _flat_vars(L, upd), f]


def case_to_linen_grad_and_jit(L: Any) -> Any:
    lm = L.nnx.bridge.ToLinen(_nnx_block_cls(L), args=(3, 4))
    v = lm.init({'params': L.jax.random.key(0), 'dropout': L.jax.random.key(5)}, _x(L))

    def loss(params):
        out, _ = lm.apply({'params': params, 'batch_stats': v['batch_stats']}, _x(L), mutable=['batch_stats'],
                          rngs={'dropout': L.jax.random.key(1)})
        # The bias feeds BatchNorm, which cancels its gradient (rounding noise): add a path that does not.
        feats = lm.apply({'params': params, 'batch_stats': v['batch_stats']}, _x(L), nnx_method='features')
        return (out ** 2).sum() + (feats ** 2).sum()
    g = L.jax.grad(loss)(v['params'])
    lj = L.jax.jit(loss)(v['params'])
    return [_flat_vars(L, g), lj]


def case_to_linen_inside_linen(L: Any) -> Any:
    cls = _nnx_block_cls(L)

    class Outer(L.nn.Module):
        @L.nn.compact
        def __call__(self, x):
            return L.nnx.bridge.to_linen(cls, 4, 2, name='inner')(L.nn.Dense(4)(x))
    v = Outer().init({'params': L.jax.random.key(2), 'dropout': L.jax.random.key(3)}, _x(L))
    y, upd = Outer().apply(v, _x(L), mutable=['batch_stats'], rngs={'dropout': L.jax.random.key(7)})
    return [_flat_vars(L, v), y, _flat_vars(L, upd)]


def case_to_linen_metadata_boxes(L: Any) -> Any:
    class Boxed(L.nnx.Module):
        def __init__(self, rngs):
            self.w = L.nnx.Param(L.jnp.ones((2, 3)), note='hello')
            self.v = L.nnx.Param(L.jnp.zeros(3))

        def __call__(self, x):
            return x @ self.w[...] + self.v[...]
    lm = L.nnx.bridge.to_linen(Boxed)
    v = lm.init(L.jax.random.key(0), L.jnp.ones((1, 2)))
    w = v['params']['w']
    y = lm.apply(v, L.jnp.ones((1, 2)))
    return [type(w).__name__, w.var_type.__name__, w.metadata['note'], w.unbox(), isinstance(v['params']['v'], L.nn.meta.AxisMetadata),
            y, tuple(w.get_partition_spec())]


def case_variable_conversion(L: Any) -> Any:
    bv = L.nnx.bridge.variables
    attrs = bv.linen_vars_to_nnx_attrs({'params': {'a': {'k': L.jnp.ones(2)}}, 'batch_stats': {'a': {'m': 1.0}}})
    back = bv.nnx_attrs_to_linen_vars(attrs)
    dup = None
    try:
        bv.linen_vars_to_nnx_attrs({'params': {'a': 1.0}, 'batch_stats': {'a': 2.0}})
    except ValueError as e:
        dup = type(e).__name__
    return [{k: {n: type(v).__name__ for n, v in d.items()} for k, d in attrs.items()}, _flat_vars(L, back), dup,
            type(bv.to_nnx_var('params', 1.0)).__name__, bv.is_vanilla_variable(L.nnx.Param(1.0))]


def case_functional(L: Any) -> Any:
    f = L.nnx.bridge.functional(L.nnx.Linear)(3, 2)
    st = f.init(rngs=L.nnx.Rngs(0))
    y, (g, new_state) = f.apply(st)(_x(L))
    return [st, y, new_state]


CASES = {name[len('case_'):]: fn for name, fn in dict(globals()).items() if name.startswith('case_')}


@pytest.mark.parametrize('name', sorted(CASES))
def test_bridge_matches_flax(name):
    theirs = _theirs()
    expected = normalize(CASES[name](theirs), theirs)
    got = normalize(CASES[name](_ours()), _ours())
    assert_same(got, expected)


def test_lazy_init_rejects_non_module_callables():
    with pytest.raises(ValueError, match='needs to be a method of an NNX Module'):
        nnx.bridge.lazy_init(lambda x: x, 1)


def _partition_case(L: Any, mesh: Any) -> Any:
    class Sharded(L.nnx.Module):
        def __init__(self, rngs):
            init = L.nnx.bridge.with_partitioning(L.nnx.initializers.lecun_normal(), ('d', None))
            self.lin = L.nnx.Linear(2, 3, kernel_init=init, rngs=rngs)

        def __call__(self, x):
            return self.lin(x)
    with L.jax.set_mesh(mesh):
        v = L.nnx.bridge.to_linen(Sharded).init(L.jax.random.key(0), L.jnp.ones((1, 2)))
        box = v['params']['lin']['kernel']
        dense = L.nn.Dense(3, kernel_init=L.nn.with_partitioning(L.nn.initializers.ones, (None, 'd')))
        m = L.nnx.bridge.ToNNX(dense, rngs=L.nnx.Rngs(0))
        m.lazy_init(L.jnp.ones((1, 2)))
        y = m(L.jnp.ones((1, 2)))
    k = m.kernel
    return [type(box).__name__, tuple(box.names), box.unbox(), k.get_metadata()['out_sharding'],
            k.get_metadata()['linen_meta_type'].__name__, y, tuple(L.nnx.get_partition_spec(L.nnx.state(m))['kernel'].get_value())]


def test_partitioned_boxes_cross_the_bridge():
    theirs = _theirs()
    import jax
    mesh = jax.make_mesh((1,), ('d',), axis_types=(jax.sharding.AxisType.Auto,))
    expected = normalize(_partition_case(theirs, mesh), theirs)
    got = normalize(_partition_case(_ours(), fluxion.make_mesh((1,), ('d',), axis_types=(fluxion.sharding.AxisType.Auto,))), _ours())
    assert_same(got, expected)
