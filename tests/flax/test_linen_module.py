"""Module mechanics of fluxion.flax.linen: dataclass fields, naming, binding, variables, errors.

Expected parameter trees and names come from the reference tutorials
(/work/shared/tutorials/000_*.txt and 004_*.txt) and from running real Flax.
"""

import os
import sys
import dataclasses
import inspect

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.flax import errors
from fluxion.flax import linen as nn
from fluxion.flax.core import Scope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import fkey, shapes, to_numpy  # noqa: E402


class MLPCompact(nn.Module):
    """Tutorial 000, compact style."""

    @nn.compact
    def __call__(self, inputs):
        inputs = inputs.reshape(inputs.shape[0], -1) / 255.
        x = nn.Dense(128, name='Dense1')(inputs)
        x = nn.relu(x)
        x = nn.Dense(128, name='Dense2')(x)
        x = nn.relu(x)
        return nn.Dense(10, name='Output')(x)


class MLPSetup(nn.Module):
    """Tutorial 000, setup style."""

    def setup(self):
        self.dense1 = nn.Dense(128, name='Dense1')
        self.dense2 = nn.Dense(128, name='Dense2')
        self.output = nn.Dense(10, name='Output')

    def __call__(self, inputs):
        inputs = inputs.reshape(inputs.shape[0], -1) / 255.
        x = nn.relu(self.dense1(inputs))
        x = nn.relu(self.dense2(x))
        return self.output(x)


# Tutorial 000's parameter overview.
MLP_SHAPES = {'params': {
    'Dense1': {'bias': (128,), 'kernel': (784, 128)},
    'Dense2': {'bias': (128,), 'kernel': (128, 128)},
    'Output': {'bias': (10,), 'kernel': (128, 10)},
}}


# ----------------------------------------------------------------------------
# Class creation.
# ----------------------------------------------------------------------------


def test_subclass_is_dataclass_with_keyword_parent_and_name():
    class MyMod(nn.Module):
        arg_model: int
        other: float = 2.0

    assert dataclasses.is_dataclass(MyMod)
    params = inspect.signature(MyMod.__init__).parameters
    assert list(params) == ['self', 'arg_model', 'other', 'parent', 'name']
    assert params['parent'].kind is inspect.Parameter.KEYWORD_ONLY
    assert params['name'].kind is inspect.Parameter.KEYWORD_ONLY
    m = MyMod(3, name='foo')
    assert (m.arg_model, m.other, m.name) == (3, 2.0, 'foo')
    assert m == MyMod(3, name='foo') and hash(m) == hash(MyMod(3, name='foo'))


def test_unannotated_attribute_is_not_a_field():
    # Tutorial 004: without an annotation the attribute is not a constructor argument.
    class MyMod(nn.Module):
        arg_model = 2

    with pytest.raises(TypeError, match='arg_model'):
        MyMod(arg_model=3)


def test_defining_init_raises_clear_error():
    with pytest.raises(errors.OverrideModuleInitError,
                       match=r'Module Bad defines __init__.*annotated class attributes.*setup'):
        class Bad(nn.Module):  # noqa: F841
            def __init__(self, a):
                self.a = a


def test_function_valued_fields_are_not_wrapped_as_methods():
    assert nn.Dense.__dict__['kernel_init'] is nn.Dense(3).kernel_init
    assert nn.Dense(3).promote_dtype.__name__ == 'promote_dtype'


def test_repr_lists_attributes():
    text = repr(nn.Dense(3))
    assert text.startswith('Dense(\n    # attributes\n    features = 3\n')
    assert repr(MLPSetup()) == 'MLPSetup()'


# ----------------------------------------------------------------------------
# Parameter trees: compact, setup, naming.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize('model_cls', [MLPCompact, MLPSetup])
def test_tutorial_mlp_param_tree(model_cls):
    variables = model_cls().init(fkey(0), jnp.ones((1, 28, 28)))
    assert type(variables) is dict and type(variables['params']) is dict
    assert shapes(variables) == MLP_SHAPES
    out = model_cls().apply(variables, jnp.ones((2, 28, 28)))
    assert out.shape == (2, 10)


def test_compact_and_setup_styles_give_identical_values():
    x = jnp.arange(2 * 28 * 28, dtype=jnp.float32).reshape(2, 28, 28)
    v1 = MLPCompact().init(fkey(3), x)
    v2 = MLPSetup().init(fkey(3), x)
    np.testing.assert_array_equal(to_numpy(v1)['params']['Dense2']['kernel'],
                                  to_numpy(v2)['params']['Dense2']['kernel'])
    np.testing.assert_allclose(np.asarray(MLPCompact().apply(v1, x)),
                               np.asarray(MLPSetup().apply(v2, x)), rtol=1e-6)


def test_autonames_count_per_class():
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(3)(x)
            x = nn.Dense(3, name='named')(x)
            x = nn.LayerNorm()(x)
            x = nn.Dense(2)(x)
            return nn.LayerNorm()(x)

    tree = shapes(Net().init(fkey(0), jnp.ones((1, 4))))['params']
    assert sorted(tree) == ['Dense_0', 'Dense_1', 'LayerNorm_0', 'LayerNorm_1', 'named']
    assert tree['Dense_1'] == {'kernel': (3, 2), 'bias': (2,)}


def test_setup_lists_tuples_dicts_get_indexed_names():
    class Net(nn.Module):
        def setup(self):
            self.d = {'a': nn.Dense(2), 'b': [nn.Dense(3), nn.Dense(4)]}
            self.t = (nn.Dense(5),)
            self.single = nn.Dense(6)

        def __call__(self, x):
            return self.d['a'](x), self.d['b'][1](x), self.t[0](x), self.single(x)

    tree = shapes(Net().init(fkey(0), jnp.ones((1, 2))))['params']
    # Same names as Flax; d_b_0 is never called so it has no parameters.
    assert sorted(tree) == ['d_a', 'd_b_1', 'single', 't_0']
    assert tree['d_b_1']['kernel'] == (2, 4)


def test_tutorial_004_scope_names_and_parents(capsys):
    class Leaf(nn.Module):
        slope: float

        @nn.compact
        def __call__(self, x):
            print((self.scope.name, self.scope.parent is not None,
                   type(self.scope).__name__))
            return x * self.slope

    class Compound(nn.Module):
        n: int

        def setup(self):
            self.leaves = [Leaf(2.0) for _ in range(self.n)]

        def __call__(self, x):
            for leaf in self.leaves:
                x = leaf(x)
            return x

    model = Compound(n=3)
    params = model.init(fkey(0), jnp.array(1.0))
    assert params == {}
    result = model.apply(params, jnp.array(1.0))
    assert float(result) == 8.0
    lines = capsys.readouterr().out.strip().splitlines()
    expected = [f"('leaves_{i}', True, 'Scope')" for i in range(3)]
    assert lines == expected * 2


def test_sequential_adopts_layers_by_index():
    model = nn.Sequential([nn.Dense(3), nn.relu, nn.Dense(2)])
    variables = model.init(fkey(0), jnp.ones((1, 2)))
    assert shapes(variables) == {'params': {
        'layers_0': {'kernel': (2, 3), 'bias': (3,)},
        'layers_2': {'kernel': (3, 2), 'bias': (2,)}}}
    # The user's modules stay unbound and unnamed.
    assert model.layers[0].scope is None and model.layers[0].name is None


def test_same_module_instance_twice_shares_parameters():
    d = nn.Dense(3)
    variables = nn.Sequential([d, d]).init(fkey(0), jnp.ones((1, 3)))
    assert shapes(variables) == {'params': {'layers_0': {'kernel': (3, 3), 'bias': (3,)}}}


def test_module_reused_in_compact_shares_parameters():
    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            d = nn.Dense(3)
            return d(d(x))

    assert shapes(Outer().init(fkey(0), jnp.ones((1, 3)))) == {
        'params': {'Dense_0': {'kernel': (3, 3), 'bias': (3,)}}}


def test_compact_method_called_twice_reuses_names_and_params():
    class Twice(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(3)(x)

    class Parent(nn.Module):
        def setup(self):
            self.child = Twice()

        def __call__(self, x):
            return self.child(x) + self.child(x)

    variables = Parent().init(fkey(0), jnp.ones((1, 3)))
    assert shapes(variables) == {'params': {'child': {'Dense_0': {'kernel': (3, 3),
                                                                    'bias': (3,)}}}}
    out = Parent().apply(variables, jnp.ones((1, 3)))
    single = Twice().apply({'params': variables['params']['child']}, jnp.ones((1, 3)))
    np.testing.assert_allclose(np.asarray(out), 2 * np.asarray(single), rtol=1e-6)


def test_setup_and_compact_together_tutorial_004():
    class ConvLayerNormLeakyReLU(nn.Module):
        output_channels: int
        kernel_size: int
        leaky_slope: float

        def setup(self):
            self.conv = nn.Conv(features=self.output_channels, kernel_size=self.kernel_size,
                                kernel_init=nn.initializers.lecun_normal())
            self.layer_norm = nn.LayerNorm()

        @nn.compact
        def __call__(self, x):
            x = self.conv(x)
            x = self.layer_norm(x)
            return nn.leaky_relu(x, negative_slope=self.leaky_slope)

    model = ConvLayerNormLeakyReLU(output_channels=4, kernel_size=(3, 3), leaky_slope=0.01)
    out, variables = model.init_with_output(fkey(0), jnp.ones((1, 8, 8, 3)))
    assert shapes(variables) == {'params': {'conv': {'kernel': (3, 3, 3, 4), 'bias': (4,)},
                                            'layer_norm': {'scale': (4,), 'bias': (4,)}}}
    np.testing.assert_allclose(np.asarray(out), np.asarray(model.apply(variables, jnp.ones((1, 8, 8, 3)))),
                               rtol=1e-6)


def test_param_with_extra_init_args_tutorial_004():
    class MyMod(nn.Module):
        arg_model: int

        @nn.compact
        def __call__(self, inputs):
            params = self.param('whatever', nn.initializers.uniform(),
                                (jnp.shape(inputs)[-1], self.arg_model), jnp.float32)
            return inputs @ params

    mod = MyMod(arg_model=7)
    x = jnp.ones((5, 10))
    output1, params = mod.init_with_output(fkey(1), x)
    output2 = mod.apply(params, x)
    assert shapes(params) == {'params': {'whatever': (10, 7)}}
    assert float(((output1 - output2) ** 2).sum()) == 0.0


# ----------------------------------------------------------------------------
# init / apply / bind options.
# ----------------------------------------------------------------------------


class Counter(nn.Module):
    @nn.compact
    def __call__(self, x):
        count = self.variable('counter', 'count', lambda: jnp.zeros((), jnp.int32))
        if not self.is_initializing() and self.is_mutable_collection('counter'):
            count.value = count.value + 1
        self.sow('intermediates', 'doubled', 2 * x)
        return x + self.param('b', nn.initializers.ones, ())


def test_init_returns_all_collections_but_intermediates():
    variables = Counter().init(fkey(0), 1.0)
    assert sorted(variables) == ['counter', 'params']
    assert int(variables['counter']['count']) == 0


def test_apply_mutable_returns_updated_collections():
    variables = Counter().init(fkey(0), 1.0)
    out = Counter().apply(variables, 1.0, mutable=False)
    assert float(out) == 2.0  # plain output, no tuple
    out, updates = Counter().apply(variables, 1.0, mutable=['counter'])
    assert sorted(updates) == ['counter'] and int(updates['counter']['count']) == 1
    assert int(variables['counter']['count']) == 0  # inputs are never modified
    out, updates = Counter().apply(variables, 3.0, mutable=['intermediates'])
    assert sorted(updates) == ['intermediates']
    assert [float(v) for v in updates['intermediates']['doubled']] == [6.0]
    _, everything = Counter().apply(variables, 1.0, mutable=True)
    assert sorted(everything) == ['counter', 'intermediates', 'params']
    _, rest = Counter().apply(variables, 1.0, mutable=nn.DenyList(['params', 'intermediates']))
    assert sorted(rest) == ['counter']


def test_writing_immutable_collection_raises():
    class Writer(nn.Module):
        @nn.compact
        def __call__(self):
            count = self.variable('counter', 'count', lambda: jnp.zeros((), jnp.int32))
            count.value = count.value + 1

    variables = Writer().init(fkey(0))
    with pytest.raises(errors.ModifyScopeVariableError,
                       match=r'"count" in scope "/".*collection "counter" is immutable'):
        Writer().apply(variables)


def test_missing_variable_collection_raises():
    with pytest.raises(errors.ScopeCollectionNotFound, match=r'"count".*"counter".*empty'):
        Counter().apply({'params': {'b': jnp.ones(())}}, 1.0)


def test_sow_accumulates_and_capture_intermediates():
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            self.sow('intermediates', 'h', x)
            self.sow('intermediates', 'h', x + 1)
            return nn.Dense(2)(x)

    variables = Net().init(fkey(0), jnp.ones((1, 3)))
    _, state = Net().apply(variables, jnp.ones((1, 3)), capture_intermediates=True,
                           mutable=['intermediates'])
    inter = state['intermediates']
    assert len(inter['h']) == 2 and float(inter['h'][1][0, 0]) == 2.0
    assert [a.shape for a in inter['__call__']] == [(1, 2)]
    assert [a.shape for a in inter['Dense_0']['__call__']] == [(1, 2)]


def test_method_argument_selects_a_method():
    class AE(nn.Module):
        def setup(self):
            self.enc = nn.Dense(2)
            self.dec = nn.Dense(4)

        def encode(self, x):
            return self.enc(x)

        def __call__(self, x):
            return self.dec(self.encode(x))

    model = AE()
    variables = model.init(fkey(0), jnp.ones((1, 4)))
    x = jnp.ones((3, 4))
    z1 = model.apply(variables, x, method=AE.encode)
    z2 = model.apply(variables, x, method='encode')
    z3 = model.apply(variables, x, method=lambda m, x: m.enc(x))
    assert z1.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(z1), np.asarray(z2))
    np.testing.assert_array_equal(np.asarray(z1), np.asarray(z3))
    enc_only = model.init(fkey(0), jnp.ones((1, 4)), method='encode')
    assert sorted(enc_only['params']) == ['enc']


def test_bind_and_unbind():
    variables = MLPSetup().init(fkey(0), jnp.ones((1, 28, 28)))
    bound = MLPSetup().bind(variables)
    y = bound(jnp.ones((2, 28, 28)))
    np.testing.assert_allclose(np.asarray(y),
                               np.asarray(MLPSetup().apply(variables, jnp.ones((2, 28, 28)))),
                               rtol=1e-6)
    kernel = bound.dense1.variables['params']['kernel']
    assert kernel.shape == (784, 128)
    assert bound.dense2.path == ('Dense2',)
    module, unbound_vars = bound.unbind()
    assert module.scope is None and shapes(unbound_vars) == MLP_SHAPES


def test_is_initializing_and_has_rng():
    seen = []

    class Probe(nn.Module):
        @nn.compact
        def __call__(self):
            seen.append((self.is_initializing(), self.has_rng('params'), self.has_rng('dropout')))
            return 0

    Probe().init(fkey(0))
    Probe().apply({}, rngs={'dropout': fkey(1)})
    assert seen == [(True, True, False), (False, False, True)]


def test_perturb_gives_intermediate_gradients():
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.Dense(2, kernel_init=nn.initializers.ones)(x)
            h = self.perturb('h', h)
            return jnp.sum(h ** 2)

    x = jnp.ones((1, 3))
    variables = Net().init(fkey(0), x)
    assert shapes(variables['perturbations']) == {'h': (1, 2)}
    grads = fluxion.grad(lambda v: Net().apply(v, x))(variables)
    np.testing.assert_allclose(np.asarray(grads['perturbations']['h']), [[6.0, 6.0]])


def test_init_accepts_dict_of_rngs_and_typed_keys():
    v1 = MLPCompact().init({'params': fkey(0)}, jnp.ones((1, 784)))
    v2 = MLPCompact().init(fluxion.random.key(0), jnp.ones((1, 784)))
    np.testing.assert_array_equal(np.asarray(v1['params']['Output']['kernel']),
                                  np.asarray(v2['params']['Output']['kernel']))


# ----------------------------------------------------------------------------
# Errors.
# ----------------------------------------------------------------------------


def test_unbound_setup_attribute_access_raises():
    with pytest.raises(AttributeError,
                       match=r'"MLPSetup" object has no attribute "dense1".*setup\(\).*'
                             r'init\(\)/apply\(\)'):
        MLPSetup().dense1


def test_calling_unbound_modules_raises():
    with pytest.raises(errors.CallCompactUnboundModuleError,
                       match=r"compact method MLPCompact.__call__ on an unbound module"):
        MLPCompact()(jnp.ones((1, 784)))
    with pytest.raises(AttributeError, match='dense1'):
        MLPSetup()(jnp.ones((1, 784)))
    with pytest.raises(errors.CallSetupUnboundModuleError, match=r'MLPSetup.setup\(\)'):
        MLPSetup().setup()
    with pytest.raises(errors.CallUnboundModuleMethodError, match=r'self.param.*Dense'):
        nn.Dense(3).param('w', nn.initializers.zeros, (1,))


def test_init_on_class_raises():
    with pytest.raises(errors.InvalidInstanceModuleError, match='instance'):
        nn.Dense.init(fkey(0), jnp.ones((1, 2)))


def test_name_in_use_raises():
    class Dup(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(3, name='a')(x)
            return nn.Dense(3, name='a')(x)

    class Dup2(nn.Module):
        @nn.compact
        def __call__(self, x):
            self.param('a', nn.initializers.zeros, (1,))
            return nn.Dense(3, name='a')(x)

    for cls in (Dup, Dup2):
        with pytest.raises(errors.NameInUseError,
                           match=rf'submodule "a" in Module {cls.__name__}'):
            cls().init(fkey(0), jnp.ones((1, 2)))


def test_submodule_outside_setup_or_compact_raises():
    class NotCompact(nn.Module):
        def __call__(self, x):
            return nn.Dense(3)(x)

    with pytest.raises(errors.AssignSubModuleError, match=r'Dense.*setup\(\).*@nn.compact'):
        NotCompact().init(fkey(0), jnp.ones((1, 2)))


def test_setattr_outside_setup_raises():
    class SetAttr(nn.Module):
        def __call__(self, x):
            self.foo = 1
            return x

    with pytest.raises(errors.SetAttributeFrozenModuleError, match=r'foo=1.*SetAttr.*frozen'):
        SetAttr().init(fkey(0), 1.0)


def test_wrong_param_shape_raises():
    with pytest.raises(errors.ScopeParamShapeError,
                       match=r'"kernel" in scope "/" has shape \(4, 3\).*\(2, 3\)'):
        nn.Dense(3).apply({'params': {'kernel': jnp.ones((4, 3)), 'bias': jnp.zeros(3)}},
                          jnp.ones((1, 2)))


def test_missing_params_raise():
    with pytest.raises(errors.ScopeParamNotFoundError, match=r'"bias" was not found in scope "/"'):
        nn.Dense(3).apply({'params': {'kernel': jnp.ones((2, 3))}}, jnp.ones((1, 2)))
    with pytest.raises(errors.ScopeCollectionNotFound, match=r'"kernel".*"params".*empty'):
        nn.Dense(3).apply({}, jnp.ones((1, 2)))


def test_invalid_variables_raise():
    with pytest.raises(errors.ApplyScopeInvalidVariablesTypeError, match='dict of collections'):
        nn.Dense(3).apply({'kernel': jnp.ones((2, 3))}, jnp.ones((1, 2)))
    with pytest.raises(errors.ApplyScopeInvalidVariablesStructureError, match="extra 'params'"):
        nn.Dense(3).apply({'params': {'params': {'kernel': jnp.ones((2, 3))}}}, jnp.ones((1, 2)))


def test_invalid_rngs_raise():
    with pytest.raises(errors.InvalidRngError, match='"params".*uint32\\[2\\]'):
        nn.Dense(3).init(0, jnp.ones((1, 2)))
    with pytest.raises(errors.InvalidRngError, match=r'stream "dropout".*rngs=\{"dropout": key\}'):
        nn.Dropout(0.5, deterministic=False).apply({}, jnp.ones((1, 2)))


def test_merge_param():
    assert nn.merge_param('x', None, 3) == 3 and nn.merge_param('x', 2, None) == 2
    with pytest.raises(ValueError, match='"x" must be passed'):
        nn.merge_param('x', None, None)
    with pytest.raises(ValueError, match='only one place'):
        nn.merge_param('x', 1, 2)


def test_scope_is_a_core_scope():
    class Probe(nn.Module):
        @nn.compact
        def __call__(self):
            assert isinstance(self.scope, Scope)
            return self.scope.path_text

    assert Probe().apply({}) == '/'
