"""nnx.vjp/jvp/make_jaxpr/custom_vjp/pmap/shard_map/checkify and the sharding helpers against Flax (the oracle).

Each case is one function of a library namespace ``L`` (``L.nnx``, ``L.jnp``,
``L.jax``, ``L.P``, ``L.mesh``, ``L.checkify``) run once with fluxion and once
with Flax/JAX; the results (arrays, State trees as pure dicts, strings, error
types and messages) must agree.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion.experimental import checkify as fcheckify
from fluxion.flax import nnx
from fluxion.sharding import PartitionSpec as FP


def _ours() -> Any:
    return types.SimpleNamespace(nnx=nnx, jnp=fjnp, jax=fluxion, P=FP, checkify=fcheckify,
                                 mesh=lambda: fluxion.make_mesh((1,), ('d',)))


def _theirs() -> Any:
    fnnx = pytest.importorskip('flax.nnx')
    jax = pytest.importorskip('jax')
    from jax.experimental import checkify
    return types.SimpleNamespace(nnx=fnnx, jnp=jax.numpy, jax=jax, P=jax.sharding.PartitionSpec, checkify=checkify,
                                 mesh=lambda: jax.make_mesh((1,), ('d',), axis_types=(jax.sharding.AxisType.Auto,)))


def normalize(x: Any, L: Any) -> Any:
    """Arrays as NumPy, Modules/States as pure dicts of NumPy, containers recursively."""
    if isinstance(x, (L.nnx.Module, L.nnx.Rngs, L.nnx.State)):
        state = x if isinstance(x, L.nnx.State) else L.nnx.state(x)
        return normalize(L.nnx.to_pure_dict(state), L)
    if isinstance(x, L.nnx.Variable):
        return normalize(x.get_value(), L)
    if isinstance(x, dict):
        return {k: normalize(v, L) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [normalize(v, L) for v in x]
    if hasattr(x, 'dtype') and 'key<' in str(x.dtype):
        return np.asarray(L.jax.random.key_data(x))
    if hasattr(x, 'shape') and hasattr(x, 'dtype'):
        return np.asarray(x)
    return x


def assert_same(a: Any, b: Any, path: str = '') -> None:
    if isinstance(b, dict):
        assert isinstance(a, dict) and sorted(a, key=str) == sorted(b, key=str), (path, a, b)
        for k in b:
            assert_same(a[k], b[k], f'{path}/{k}')
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), (path, a, b)
        for i, (u, v) in enumerate(zip(a, b)):
            assert_same(u, v, f'{path}/{i}')
    elif isinstance(b, np.ndarray):
        a = np.asarray(a)
        assert a.shape == b.shape, (path, a.shape, b.shape)
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-5, atol=2e-6, err_msg=path)
    elif isinstance(b, float):
        np.testing.assert_allclose(float(a), b, rtol=2e-5, err_msg=path)
    else:
        assert a == b, (path, a, b)


def _error(fn: Any) -> Any:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the case compares the class name and message
        return [type(e).__name__, str(e).split('\n')[0]]
    return 'no error'


# -- vjp / jvp / make_jaxpr -------------------------------------------------------------------------------------

def _counter_module(L: Any, n: int = 1) -> Any:
    class Counter(L.nnx.Module):
        def __init__(self):
            self.count = L.nnx.BatchStat(L.jnp.array(0.))
            self.p = L.nnx.Param(L.jnp.array([1., 2.]))

        def __call__(self, x):
            self.count[...] += 1
            return (x * self.p[...] * 2).sum()
    return Counter() if n == 1 else [Counter() for _ in range(n)]


def _x(L: Any) -> Any:
    return L.jnp.asarray(np.random.RandomState(0).randn(2, 3).astype(np.float32))


def case_default_modes_raise(L: Any) -> Any:
    m = L.nnx.Linear(3, 2, rngs=L.nnx.Rngs(0))
    loss = lambda m, x: m(x).sum()  # noqa: E731
    return [_error(lambda: L.nnx.vjp(loss, m, _x(L))),
            _error(lambda: L.nnx.jvp(loss, (m, _x(L)), (m, _x(L)))),
            _error(lambda: L.nnx.make_jaxpr(loss)(m, _x(L))),
            _error(lambda: L.nnx.vjp(m.__call__, _x(L), graph_updates=False))]


def case_vjp_linear(L: Any) -> Any:
    m = L.nnx.Linear(3, 2, rngs=L.nnx.Rngs(0))
    out, vjp_fn = L.nnx.vjp(lambda m, x: (m(x) ** 2).sum(), m, _x(L), graph_updates=False)
    gm, gx = vjp_fn(L.jnp.array(1.5))
    return [out, gm, gx]


def case_vjp_mutation_aux_tree_mode(L: Any) -> Any:
    c = _counter_module(L)
    x = L.jnp.array([3., 4.])
    out, vjp_fn, aux = L.nnx.vjp(lambda c, x: (c(x), x.sum()), c, x, has_aux=True, graph=False)
    gc, gx = vjp_fn(L.jnp.array(1.))
    return [out, aux, gc, gx, c]


def case_vjp_decorator(L: Any) -> Any:
    m = L.nnx.Linear(3, 2, rngs=L.nnx.Rngs(1))

    @L.nnx.vjp(graph_updates=False)
    def f(m, x):
        return m(x).sum()
    out, vjp_fn = f(m, _x(L))
    return [out, vjp_fn(L.jnp.array(1.))]


def case_jvp(L: Any) -> Any:
    m = L.nnx.Linear(3, 2, rngs=L.nnx.Rngs(0))
    tangent = L.nnx.Linear(3, 2, rngs=L.nnx.Rngs(5))
    c, ct = _counter_module(L, 2)
    out = L.nnx.jvp(lambda m, x: (m(x) ** 2).sum(), (m, _x(L)), (tangent, L.jnp.ones((2, 3))), graph_updates=False)
    out2 = L.nnx.jvp(lambda c: (c(L.jnp.ones(2)), 7.0), (c,), (ct,), has_aux=True, graph=False)
    return [list(out), list(out2), c]


def case_make_jaxpr(L: Any) -> Any:
    m = L.nnx.Linear(3, 2, rngs=L.nnx.Rngs(0))
    j1 = L.nnx.make_jaxpr(lambda m, x: (m(x) ** 2).sum(), graph_updates=False)(m, _x(L))
    j2 = L.nnx.make_jaxpr(lambda m, x, s: m(x) * s, graph_updates=False, static_argnums=2)(m, _x(L), 3.0)
    return [[str(v.aval) for v in j.jaxpr.invars] + [str(v.aval) for v in j.jaxpr.outvars] for j in (j1, j2)]


def case_jit_partial(L: Any) -> Any:
    m = L.nnx.Sequential(L.nnx.Linear(2, 3, rngs=L.nnx.Rngs(0)), L.nnx.BatchNorm(3, rngs=L.nnx.Rngs(1)))
    c, = [_counter_module(L)]

    def step(m, c, x, scale):
        return m(x).sum() * scale + c(L.jnp.ones(2))
    f = L.nnx.jit_partial(step, m, c, graph_updates=False)
    x = L.jnp.asarray(np.arange(8.).reshape(4, 2).astype(np.float32))
    outs = [f(x, 2.0), f(x * 2, 3.0)]
    return [outs, m, c, _error(lambda: L.nnx.jit_partial(step, m, c)),
            _error(lambda: L.nnx.jit_partial(step, m, in_shardings=(L.nnx.StateSharding({...: None}),),
                                             graph_updates=False))]


def case_with_rngs(L: Any) -> Any:
    class M(L.nnx.Module):
        def __init__(self):
            self.rngs = L.nnx.Rngs(params=0, dropout=1)
            self.lin = L.nnx.Linear(2, 3, rngs=self.rngs)
    m = M()
    out = []
    for graph in (False, True):
        n = L.nnx.with_rngs(m, split={'params': 4}, fork='dropout', graph=graph, graph_updates=False)
        out.append([n is m, n.lin is m.lin, n.lin.kernel is m.lin.kernel, n.rngs, m.rngs])
    r = L.nnx.Rngs(params=0, dropout=1)
    out.append(L.nnx.with_rngs(r, split=4, graph=False))
    t = L.nnx.with_rngs((r, 3), broadcast={'params': 2}, graph=False)
    out += [t[1], t[0], r]
    out.append(_error(lambda: L.nnx.with_rngs(r, split={'params': 2}, fork='params', graph=False)))
    out.append(L.nnx.with_rngs(r, split={...: 2}, fork='params', graph=False))
    out.append(_error(lambda: L.nnx.with_rngs(r, split=2)))

    @L.nnx.with_rngs(split=3, graph=False)
    def f(rngs):
        return rngs.params.key.shape
    out += [f(r), L.nnx.with_rngs(r, fork=..., only='dropout', graph=False)]
    return out


# -- custom_vjp --------------------------------------------------------------------------------------------------

def _foo(L: Any) -> Any:
    class Foo(L.nnx.Module):
        def __init__(self):
            self.x = L.nnx.Param(L.jnp.array(1.))
            self.y = L.nnx.Param(L.jnp.array(2.))
            self.n = L.nnx.BatchStat(L.jnp.array(0.))
    return Foo()


def _custom_f(L: Any, seen: list) -> Any:
    @L.nnx.custom_vjp
    def f(m, a):
        m.n[...] += 1
        return L.jnp.sin(m.x[...]) * m.y[...] * a

    def f_fwd(m, a):
        return f(m, a), (L.jnp.cos(m.x[...]), L.jnp.sin(m.x[...]), m, a)

    def f_bwd(res, g):
        updates_g, out_g = g
        cos_x, sin_x, m, a = res
        seen.append([type(updates_g).__name__, len(updates_g), sorted(updates_g[0]), updates_g[1], m.n[...]])
        # A deliberately "wrong" rule (x's gradient times 10) shows the custom rule is the one used.
        m_g = L.nnx.State({'x': L.nnx.Param(cos_x * out_g * m.y[...] * a * 10),
                           'y': L.nnx.Param(sin_x * out_g * a), 'n': L.nnx.BatchStat(L.jnp.array(0.))})
        return (m_g, sin_x * m.y[...] * out_g)
    f.defvjp(f_fwd, f_bwd)
    return f


def case_custom_vjp_call_and_grad(L: Any) -> Any:
    seen: list = []
    f = _custom_f(L, seen)
    m = _foo(L)
    y = f(m, L.jnp.array(3.))
    n_after_call = m.n[...]
    g = L.nnx.grad(f, argnums=(0, 1))(m, L.jnp.array(3.))
    return [y, n_after_call, g[0], g[1], m.n[...], seen]


def case_custom_vjp_under_jit(L: Any) -> Any:
    seen: list = []
    f = _custom_f(L, seen)
    m = _foo(L)
    ga = L.nnx.jit(lambda m, a: L.nnx.grad(f, argnums=1)(m, a))(m, L.jnp.array(3.))
    return [ga, m.n[...]]


def case_custom_vjp_diffstate(L: Any) -> Any:
    seen: list = []
    x_attr = L.nnx.PathContains('x')

    @L.nnx.custom_vjp(nondiff_argnums=(L.nnx.DiffState(0, x_attr),))
    def h(m):
        return L.jnp.sin(m.x[...]) * m.y[...]

    def h_fwd(m):
        return h(m), (L.jnp.cos(m.x[...]), m)

    def h_bwd(res, g):
        (m_updates,), out_g = g
        cos_x, m = res
        seen.append(sorted(m_updates))
        return (L.nnx.State({'x': L.nnx.Param(cos_x * out_g * m.y[...])}),)
    h.defvjp(h_fwd, h_bwd)
    m = _foo(L)
    return [L.nnx.grad(h, argnums=L.nnx.DiffState(0, x_attr))(m), seen]


def case_custom_vjp_errors(L: Any) -> Any:
    m = _foo(L)
    k = L.nnx.custom_vjp(lambda m: m.x[...], nondiff_argnums=(0,))
    k.defvjp(lambda m: (m.x[...], None), lambda m, r, g: ())
    return [_error(lambda: k(m))[0],
            _error(lambda: L.nnx.custom_vjp(lambda a, b: a, nondiff_argnums=(0, L.nnx.DiffState(0, ...)))),
            _error(lambda: L.nnx.custom_vjp(lambda a: a)(L.jnp.array(1.)))[0]]


# -- pmap / shard_map ----------------------------------------------------------------------------------------------

def case_pmap_broadcast_module(L: Any) -> Any:
    m = L.nnx.Sequential(L.nnx.Linear(2, 3, rngs=L.nnx.Rngs(0)), L.nnx.BatchNorm(3, rngs=L.nnx.Rngs(1)))
    x = L.jnp.asarray(np.arange(8.).reshape(1, 4, 2).astype(np.float32))
    y = L.nnx.pmap(lambda m, x: m(x), in_axes=(None, 0), axis_name='i')(m, x)
    z = L.nnx.pmap(lambda m, x, s: m(x) * s, in_axes=(None, 0, None), axis_name='i',
                   static_broadcasted_argnums=2)(m, x, 3.0)
    return [y, z, m]


def case_pmap_mapped_module_psum(L: Any) -> Any:
    @L.nnx.split_rngs(splits=1)
    @L.nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
        return L.nnx.Linear(2, 2, rngs=rngs)
    m = make(L.nnx.Rngs(0))

    @L.nnx.pmap(in_axes=(0, 0), axis_name='i')
    def f(m, x):
        m.kernel[...] = m.kernel[...] + 1
        return L.jax.lax.psum(m(x), 'i')
    return [f(m, L.jnp.ones((1, 3, 2))), m]


def case_shard_map_state_sharding(L: Any) -> Any:
    mesh = L.mesh()
    m = L.nnx.Linear(2, 3, rngs=L.nnx.Rngs(0))
    spec = L.nnx.StateSharding({L.nnx.PathContains('kernel'): L.P(None, 'd'), ...: L.P()})

    @L.nnx.shard_map(mesh=mesh, in_specs=(spec, L.P('d')), out_specs=L.P('d'))
    def f(m, x):
        m.kernel[...] = m.kernel[...] * 2
        return L.jax.lax.psum(m(x), 'd')
    y = f(m, L.jnp.asarray(np.arange(8.).reshape(4, 2).astype(np.float32)))
    g = L.nnx.shard_map(lambda m, x: m(x), mesh=mesh, in_specs=(L.P(), L.P('d')), out_specs=L.P('d'))(
        m, L.jnp.ones((4, 2)))
    return [y, g, m]


# -- checkify ----------------------------------------------------------------------------------------------------

def _checked_fn(L: Any) -> Any:
    def f(x):
        L.checkify.check(x > 0, 'x must be positive, got {x}', x=x)
        L.checkify.check(x < 10, 'x too big: {}', x)
        return L.jnp.log(x)
    return f


def case_checkify_library(L: Any) -> Any:
    f = _checked_fn(L)
    ck = L.checkify.checkify(f)
    out = []
    for v in (-1., 11., 1.):
        err, y = ck(L.jnp.array(v))
        out += [err.get(), y]
    err, _ = L.jax.jit(ck)(L.jnp.array(-1.))
    out.append(err.get())
    err, _ = L.jax.vmap(ck)(L.jnp.array([1., -1., 20.]))
    out.append(err.get())
    out.append(_error(lambda: ck(L.jnp.array(-2.))[0].throw()))
    out.append(_error(lambda: f(L.jnp.array(-1.))))
    out.append(_error(lambda: L.jax.jit(f)(L.jnp.array(-1.))))
    out.append(_error(lambda: L.checkify.check(L.jnp.array(True), 'x {}', 1.)))
    out.append(L.jax.grad(lambda x: ck(x)[1])(L.jnp.array(2.)))
    out.append(issubclass(L.checkify.JaxRuntimeError, ValueError))
    return out


def case_nnx_checkify(L: Any) -> Any:
    class Foo(L.nnx.Module):
        def __init__(self, *, rngs):
            self.count = L.nnx.BatchStat(L.jnp.array(0))
            self.linear = L.nnx.Linear(2, 3, rngs=rngs)

        def __call__(self, x):
            self.count[...] += 1
            L.checkify.check(L.jnp.all(x >= 0), 'x must be non-negative, sum {}', x.sum())
            return self.linear(x)
    m = Foo(rngs=L.nnx.Rngs(0))
    out = []
    for x in (-L.jnp.ones((1, 2)), L.jnp.ones((1, 2))):
        err, y = L.nnx.checkify(lambda m, x: m(x))(m, x)
        out += [err.get(), y, m.count[...]]
    err, y = L.nnx.jit(L.nnx.checkify(lambda m, x: m(x)))(m, -L.jnp.ones((1, 2)))
    return out + [err.get(), y, m.count[...]]


# -- sharding helpers ----------------------------------------------------------------------------------------------

def _specs(tree: Any, L: Any) -> Any:
    return {'/'.join(map(str, p)): tuple(v.get_value()) if isinstance(v, L.nnx.Variable) else tuple(v)
            for p, v in L.nnx.to_flat_state(tree)}


def case_partitioning_and_specs(L: Any) -> Any:
    mesh = L.mesh()
    init = L.nnx.with_partitioning(L.nnx.initializers.lecun_normal(), ('d', None))
    no_mesh = _error(lambda: L.nnx.Linear(2, 3, kernel_init=init, rngs=L.nnx.Rngs(0)))
    with L.jax.set_mesh(mesh):
        m = L.nnx.Linear(2, 3, kernel_init=init, rngs=L.nnx.Rngs(0))
        jitted = L.nnx.jit(lambda: L.nnx.Linear(2, 3, kernel_init=init, rngs=L.nnx.Rngs(0)))()
    assert_same(normalize(jitted, L), normalize(m, L))
    st = L.nnx.state(m)
    out = [no_mesh, m.kernel.get_metadata()['out_sharding'], tuple(m.kernel[...].sharding.spec), m,
           _specs(L.nnx.get_partition_spec(st), L),
           tuple(L.nnx.get_named_sharding(st, mesh)['kernel'].get_value().spec)]
    with L.nnx.logical_axis_rules((('d', 'model'),)):
        out.append(_specs(L.nnx.get_partition_spec(st), L))
    return out


def case_eager_sharding_switch(L: Any) -> Any:
    init = L.nnx.with_partitioning(L.nnx.initializers.ones, ('d',))
    out = [L.nnx.using_eager_sharding()]
    with L.nnx.use_eager_sharding(False):
        out.append(L.nnx.using_eager_sharding())
        out.append(L.nnx.Linear(2, 3, bias_init=init, rngs=L.nnx.Rngs(0)).bias)
    out.append(L.nnx.using_eager_sharding())

    @L.nnx.use_eager_sharding(False)
    def inside():
        return L.nnx.using_eager_sharding()
    out += [L.nnx.using_eager_sharding(), inside(), L.nnx.using_eager_sharding()]
    return out


def case_abstract_models(L: Any) -> Any:
    mesh = L.mesh()
    init = L.nnx.with_partitioning(L.nnx.initializers.lecun_normal(), (None, 'd'))
    make = lambda: L.nnx.Linear(2, 3, kernel_init=init, rngs=L.nnx.Rngs(0))  # noqa: E731
    gdef, abs_state = L.nnx.get_abstract_model(make, mesh)
    a = abs_state['kernel'].get_value()
    with L.jax.set_mesh(mesh):
        am = L.nnx.as_abstract(L.nnx.eval_shape(make))
    return [a.shape, str(a.dtype), tuple(a.sharding.spec), tuple(abs_state['bias'].get_value().sharding.spec),
            type(am.kernel.get_value()).__name__, tuple(am.kernel.get_value().sharding.spec),
            L.nnx.PARTITION_NAME]


def case_state_sharding_and_transform_metadata(L: Any) -> Any:
    with L.nnx.use_eager_sharding(False):
        v = L.nnx.Param(L.jnp.ones((4, 2, 3)), out_sharding=('layers', 'a', 'b'))
    seen = []

    @L.nnx.transform_metadata(in_axes=0, out_axes=1, partition='layers')
    def f(v):
        seen.append(v.out_sharding)
        with L.nnx.use_eager_sharding(False):
            return L.nnx.Param(L.jnp.ones((2, 3)), out_sharding=('x', 'y'))
    out = f(v)
    bad = _error(lambda: L.nnx.transform_metadata(lambda v: v, in_axes=1, partition='layers')(v))
    s = L.nnx.StateSharding({L.nnx.Param: 'p', ...: 'r'})
    return [seen, v.out_sharding, out.out_sharding, bad, v.out_sharding, s.map_prefix(('a',), v),
            s.map_prefix(('a',), L.nnx.BatchStat(L.jnp.ones(1))),
            _error(lambda: L.nnx.StateSharding({L.nnx.Param: 'p'}).map_prefix(('a',), L.nnx.BatchStat(1)))[0],
            s == L.nnx.StateSharding({L.nnx.Param: 'p', ...: 'r'})]


def case_vmap_lifts_partition_axis(L: Any) -> Any:
    mesh = L.jax.make_mesh((1, 1), ('d', 'layers'), **({} if L.nnx is nnx else {
        'axis_types': (L.jax.sharding.AxisType.Auto,) * 2}))
    init = L.nnx.with_partitioning(L.nnx.initializers.lecun_normal(), ('d', None))
    lift = {L.nnx.PARTITION_NAME: 'layers'}
    with L.jax.set_mesh(mesh):
        @L.nnx.split_rngs(splits=3)
        @L.nnx.vmap(in_axes=(0,), out_axes=1, transform_metadata=lift)
        def make(rngs):
            return L.nnx.Linear(2, 4, kernel_init=init, rngs=rngs)
        m = make(L.nnx.Rngs(0))
        seen = []

        @L.nnx.vmap(in_axes=(1, 0), out_axes=0, transform_metadata=lift)
        def apply(m, x):
            seen.append(m.kernel.out_sharding)
            return m(x)
        y = apply(m, L.jnp.ones((3, 2)))
        stack = make(L.nnx.Rngs(1))
        steps = []

        @L.nnx.scan(in_axes=(L.nnx.Carry, 1), out_axes=L.nnx.Carry, transform_metadata=lift)
        def forward(x, layer):
            steps.append(layer.kernel.out_sharding)
            return x + layer(L.jnp.ones((1, 2))).sum()
        z = forward(L.jnp.zeros(()), stack)
    spec = L.nnx.get_partition_spec(L.nnx.state(m))['kernel'].get_value()
    return [m, m.kernel.out_sharding, tuple(spec), y, seen, m.kernel.out_sharding, z, steps,
            stack.kernel.out_sharding]


CASES = {name[len('case_'):]: fn for name, fn in dict(globals()).items() if name.startswith('case_')}


@pytest.mark.parametrize('name', sorted(CASES))
def test_matches_flax(name):
    theirs = _theirs()
    fn = CASES[name]
    expected = normalize(fn(theirs), theirs)
    got = normalize(fn(_ours()), _ours())
    assert_same(got, expected)


def test_checkify_nested_transform_is_a_clear_error():
    def f(x):
        fcheckify.check(x > 0, 'neg')
        return x
    with pytest.raises(NotImplementedError, match='nested within checkify'):
        fcheckify.checkify(fluxion.jit(f))(fjnp.array(1.))
    with pytest.raises(NotImplementedError, match='user_checks'):
        fcheckify.checkify(f, errors=frozenset({int}))


def test_vjp_matches_nnx_grad_and_composes_with_jit():
    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = _x(_ours())
    loss = lambda m, x: (m(x) ** 2).sum()  # noqa: E731
    _, vjp_fn = nnx.vjp(loss, m, x, graph_updates=False)
    gm, _ = vjp_fn(fjnp.array(1.))
    g = nnx.grad(loss)(m, x)
    np.testing.assert_allclose(np.asarray(gm.kernel[...]), np.asarray(g['kernel'][...]), rtol=1e-6)
    jitted = nnx.jit(lambda m, x: nnx.vjp(loss, m, x, graph_updates=False)[1](fjnp.array(1.))[0].kernel[...])
    np.testing.assert_allclose(np.asarray(jitted(m, x)), np.asarray(g['kernel'][...]), rtol=1e-6)
