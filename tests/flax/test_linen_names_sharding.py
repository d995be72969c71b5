"""fluxion.flax.linen against real Flax: method name scopes (named_call and its switches), shardings of
partitioned variables (get_sharding, logical_to_mesh_sharding) and kw_only_dataclasses.

Name scopes are compared through the name stacks that ``make_jaxpr`` records on each equation; the two
libraries lower some layers to different numbers of equations, so runs of equal stacks are collapsed first.
"""

import dataclasses
import inspect
import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion.flax import linen as fnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import assert_trees_close, fkey, to_numpy  # noqa: E402

flax_linen = pytest.importorskip('flax.linen')
jax = pytest.importorskip('jax')

X = np.random.RandomState(0).normal(size=(2, 4)).astype(np.float32)
SEQ = np.random.RandomState(1).normal(size=(2, 3, 4)).astype(np.float32)


# ----------------------------------------------------------------------------
# Name scopes of module methods.
# ----------------------------------------------------------------------------

def _compact_mlp(nn, jnp):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.relu(nn.Dense(3, name='hidden')(x)))
    return MLP(), X


def _setup_and_methods(nn, jnp):
    class Model(nn.Module):
        def setup(self):
            self.d = nn.Dense(3)
            self.scale = jnp.ones(3) * 3

        @nn.named_call
        def forced(self, x):
            return self.d(x) * 2

        @nn.nowrap
        def helper(self, x):          # not wrapped: runs in the caller's scope
            return x - 1

        def plain(self, x):
            return self.helper(x) * self.scale

        def __call__(self, x):
            return self.plain(self.forced(x))
    return Model(name='top'), X


def _unforced_named_call(nn, jnp):
    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            return self.double(nn.Dense(3)(x))

        def double(self, x):
            return x * 2

    Model.double = nn.named_call(Model.double, force=False)
    return Model(), X


def _rnn(nn, jnp):
    class Model(nn.Module):
        @nn.compact
        def __call__(self, xs):
            return nn.Dense(2)(nn.RNN(nn.LSTMCell(3))(xs))
    return Model(), SEQ


NAMED_CASES = {
    'compact-mlp': _compact_mlp,
    'setup-and-methods': _setup_and_methods,
    'unforced-named-call': _unforced_named_call,
    'rnn': _rnn,
}
# JAX's scan moves other loop-invariant work out of the body than fluxion's: compared loosely.
UNORDERED = {'rnn'}


def _stacks(jaxpr):
    """The name stacks of a jaxpr's equations, runs of equal stacks collapsed (no sub-jaxprs)."""
    out = []
    for eqn in jaxpr.eqns:
        names = '' if eqn.source_info is None else str(eqn.source_info.name_stack)
        if not out or out[-1] != names:
            out.append(names)
    return out


def _names(jaxpr):
    """(the non-empty name stacks of a jaxpr's equations, those in its sub-jaxprs at any depth)."""
    top, nested = set(), set()
    for eqn in jaxpr.eqns:
        if eqn.source_info is not None and str(eqn.source_info.name_stack):
            top.add(str(eqn.source_info.name_stack))
        for v in eqn.params.values():
            if hasattr(v, 'eqns'):
                sub_top, sub_nested = _names(getattr(v, 'jaxpr', v))
                nested |= sub_top | sub_nested
    return top, nested


def _traced(nn, jnp, lib, build, enabled):
    module, x = build(nn, jnp)
    variables = module.init(lib.random.PRNGKey(0), jnp.asarray(x))
    with nn.override_named_call(enabled):
        apply_jaxpr = lib.make_jaxpr(module.apply)(variables, jnp.asarray(x))
        init_jaxpr = lib.make_jaxpr(lambda x: module.init(lib.random.PRNGKey(0), x))(jnp.asarray(x))
    return apply_jaxpr, init_jaxpr, variables, x


@pytest.mark.parametrize('enabled', [True, False])
@pytest.mark.parametrize('name', sorted(NAMED_CASES))
def test_method_name_scopes_equal_flax(name, enabled):
    build = NAMED_CASES[name]
    o_apply, o_init, o_vars, x = _traced(fnn, fjnp, fluxion, build, enabled)
    t_apply, t_init, t_vars, _ = _traced(flax_linen, jax.numpy, jax, build, enabled)
    for ours, theirs in ((o_apply, t_apply), (o_init, t_init)):
        (o_top, o_nested), (t_top, t_nested) = _names(ours.jaxpr), _names(theirs.jaxpr)
        assert o_nested == t_nested
        if name in UNORDERED:   # which loop-invariant equations leave the loop body differs
            assert o_top <= t_top | {f'{outer}/{n}' for outer in t_top for n in t_nested}
        else:
            assert o_top == t_top
    if name not in UNORDERED:
        assert _stacks(o_apply.jaxpr) == _stacks(t_apply.jaxpr)
        # Flax's init also stages its key handling (no name); compare the named equations.
        assert [s for s in _stacks(o_init.jaxpr) if s] == [s for s in _stacks(t_init.jaxpr) if s]
    # Names never change values, under jit too.
    module, _ = build(fnn, fjnp)
    t_module, _ = build(flax_linen, jax.numpy)
    expected = np.asarray(t_module.apply(t_vars, jax.numpy.asarray(x)))
    with fnn.override_named_call(enabled):
        got = fluxion.jit(module.apply)(o_vars, fjnp.asarray(x))
    assert_trees_close(np.asarray(got), expected, rtol=1e-5, atol=1e-5)


def test_named_call_switches_restore_and_show_in_pretty_print():
    module, x = _compact_mlp(fnn, fjnp)
    variables = module.init(fkey(0), fjnp.asarray(x))
    trace = fluxion.make_jaxpr(module.apply)
    try:
        fnn.disable_named_call()
        assert all(e.source_info is None for e in trace(variables, fjnp.asarray(x)).eqns)
        with fnn.override_named_call(True):
            assert '# [MLP/hidden]' in trace(variables, fjnp.asarray(x)).pretty_print(name_stack=True)
        assert all(e.source_info is None for e in trace(variables, fjnp.asarray(x)).eqns)
        fnn.enable_named_call()
        assert '# [MLP/Dense_0]' in trace(variables, fjnp.asarray(x)).pretty_print(name_stack=True)
    finally:
        fnn.enable_named_call()


# ----------------------------------------------------------------------------
# Shardings of partitioned variables.
# ----------------------------------------------------------------------------

def _partitioned(nn, jnp, logical):
    """Two Dense layers with boxed kernels: mesh axis names, or logical names (``logical=True``)."""
    box = (lambda names: nn.with_logical_partitioning(nn.initializers.lecun_normal(), names)) \
        if logical else (lambda names: nn.with_partitioning(nn.initializers.lecun_normal(), names))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(4, kernel_init=box((None, 'model' if not logical else 'mlp')))(x)
            x = nn.Dense(3, kernel_init=box(('data', None) if not logical else ('mlp', 'embed')))(x)
            self.sow('intermediates', 'count', 3)          # a non-array leaf: no sharding
            return x
    return Model()


def _mesh(lib):
    devices = np.array(lib.devices()[:1], dtype=object).reshape(1, 1)
    return lib.sharding.Mesh(devices, ('data', 'model'))


def _sharding_summary(tree, lib):
    """Leaves as (spec entries, mesh axis names), None leaves kept."""
    leaves = lib.tree_util.tree_leaves(
        tree, is_leaf=lambda x: x is None or isinstance(x, lib.sharding.NamedSharding))
    return [None if s is None else (tuple(s.spec), tuple(s.mesh.axis_names)) for s in leaves]


RULES = [('embed', 'data'), ('mlp', 'model')]


def _shardings(nn, jnp, lib):
    x, key, mesh = jnp.asarray(X), lib.random.PRNGKey(0), _mesh(lib)
    variables = _partitioned(nn, jnp, logical=False).init(key, x, mutable=True)
    specs = nn.get_partition_spec(_partitioned(nn, jnp, logical=True).init(key, x, mutable=True))
    with nn.logical_axis_rules(RULES):
        logical = nn.logical_to_mesh_sharding(specs, mesh)
    return variables, (nn.get_sharding(variables, mesh), logical,
                       nn.logical_to_mesh_sharding(specs, mesh, []))


def test_get_sharding_and_logical_to_mesh_sharding_equal_flax():
    o_vars, ours = _shardings(fnn, fjnp, fluxion)
    _, theirs = _shardings(flax_linen, jax.numpy, jax)
    for o, t in zip(ours, theirs):
        assert _sharding_summary(o, fluxion) == _sharding_summary(t, jax)
    # The shardings place the unboxed variables (1x1 mesh: every shard is the whole array).
    placed = fluxion.device_put(fnn.unbox(o_vars['params']), ours[0]['params'])
    assert_trees_close(to_numpy(placed), to_numpy(fnn.unbox(o_vars['params'])))
    kernel = o_vars['params']['Dense_0']['kernel']
    assert kernel.get_sharding(_mesh(fluxion)) == ours[0]['params']['Dense_0']['kernel']


def _unboxed_sharding(nn, jnp, lib, apply_constraint):
    mesh = _mesh(lib)
    box = nn.Partitioned(jnp.arange(6.0).reshape(2, 3), (None, 'model'), mesh=mesh)
    out = box.unbox(apply_constraint=apply_constraint)
    return np.asarray(out), out.sharding


@pytest.mark.parametrize('apply_constraint', [True, False])
def test_partitioned_unbox_applies_the_constraint_like_flax(apply_constraint):
    o_val, o_sharding = _unboxed_sharding(fnn, fjnp, fluxion, apply_constraint)
    t_val, t_sharding = _unboxed_sharding(flax_linen, jax.numpy, jax, apply_constraint)
    np.testing.assert_array_equal(o_val, t_val)
    assert type(o_sharding).__name__ == type(t_sharding).__name__
    if apply_constraint:
        assert tuple(o_sharding.spec) == tuple(t_sharding.spec) == (None, 'model')


def test_shardings_name_missing_mesh_axes():
    variables = _partitioned(fnn, fjnp, logical=False).init(fkey(0), fjnp.asarray(X))
    mesh = fluxion.sharding.Mesh(np.array(fluxion.devices()[:1], dtype=object), ('data',))
    with pytest.raises(ValueError, match='model'):
        fnn.get_sharding(variables, mesh)
    with pytest.raises(ValueError, match='Duplicate'):
        fnn.logical_to_mesh_sharding(fluxion.sharding.PartitionSpec('a', 'a'), mesh, [])


# ----------------------------------------------------------------------------
# kw_only_dataclasses.
# ----------------------------------------------------------------------------

def _kw_classes(kd):
    @kd.dataclass
    class Parent:
        name: str = kd.field(default='', kw_only=True)
        a: int

    @kd.dataclass
    class Child(Parent):
        size: float = 1.0
        _: kd.KW_ONLY
        z: int = 3
        w: list = dataclasses.field(default_factory=list)

    @kd.dataclass(extra_fields=[('q', int, dataclasses.field(default=4))], frozen=True)
    class Extra:
        b: int = 0

    @kd.dataclass
    class Required(Parent):
        size: float          # required after an inherited defaulted keyword-only field
    return Parent, Child, Extra, Required


KW_CALLS = [
    ('Child', (5, 2.0), {'name': 'x'}),
    ('Child', (1,), {'z': 7, 'w': [1]}),
    ('Child', (1, 2.0, 3), {}),                   # a keyword-only field given positionally
    ('Extra', (1,), {}),
    ('Extra', (1, 2), {}),
    ('Required', (0, 2.5), {'name': 'r'}),
    ('Required', (0,), {}),                       # the required field is missing
]


def _kw_outcome(kd, cls_name, args, kwargs):
    classes = dict(zip(['Parent', 'Child', 'Extra', 'Required'], _kw_classes(kd)))
    cls = classes[cls_name]
    fields = [(f.name, bool(f.metadata.get(kd.KW_ONLY))) for f in dataclasses.fields(cls)]
    try:
        obj = cls(*args, **kwargs)
    except TypeError:
        return fields, 'TypeError'
    return fields, repr(obj).split('.')[-1], dataclasses.astuple(obj)


@pytest.mark.parametrize('cls_name,args,kwargs', KW_CALLS)
def test_kw_only_dataclasses_equal_flax(cls_name, args, kwargs):
    from flax.linen import kw_only_dataclasses as theirs
    ours = fnn.kw_only_dataclasses
    assert _kw_outcome(ours, cls_name, args, kwargs) == _kw_outcome(theirs, cls_name, args, kwargs)


def test_kw_only_dataclasses_errors_equal_flax():
    from flax.linen import kw_only_dataclasses as theirs
    for kd in (fnn.kw_only_dataclasses, theirs):
        with pytest.raises(ValueError, match='no default'):
            kd.field(kw_only=True)

        class NoDefault:
            __annotations__ = {'_': kd.KW_ONLY, 'x': int}
        with pytest.raises(ValueError, match='no default'):
            kd.dataclass(NoDefault)

        class TwoMarkers:
            __annotations__ = {'_': kd.KW_ONLY, 'x': int, '__': kd.KW_ONLY}
            x = 1
        with pytest.raises(TypeError, match='KW_ONLY'):
            kd.dataclass(TwoMarkers)
        with pytest.raises(ValueError, match='extra_fields'):
            kd.dataclass(type('E', (), {}), extra_fields=[('q', int, 4)])
    params = list(inspect.signature(_kw_classes(fnn.kw_only_dataclasses)[3]).parameters)
    assert params == ['a', 'size', 'name']
