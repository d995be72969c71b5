"""fluxion.flax.nnx's graph/tree machinery against real Flax NNX (the oracle).

Each case is one function ``case(lib, lj)`` run with ``(fluxion.flax.nnx,
fluxion.numpy)`` and with ``(flax.nnx, jax.numpy)``; it returns a dict of
plain values (NumPy arrays, Python scalars/strings/tuples, exception class
names) that must agree.  Covers the pytree-mode attribute machinery
(``data``/``static``/``Data``/``Static``/``dataclass``/``register_data_type``/
``is_data``/``has_data``/``check_pytree``, modules as pytrees), the
split/merge/update contexts, ``unpack``/``GraphState``, ``as_pure``,
``recursive_map`` and the Flax submodule names.
"""

import dataclasses
import warnings
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
import fluxion.optax as foptax
from fluxion.flax import nnx


def _flax():
    return pytest.importorskip('flax.nnx')


def _jax():
    return pytest.importorskip('jax')


def _key_name(k):
    for attr in ('name', 'idx', 'key'):
        if hasattr(k, attr):
            return getattr(k, attr)
    raise AssertionError(f'unknown key {k!r}')


def _np(x):
    if hasattr(x, 'get_value'):
        x = x.get_value()
    return np.asarray(x)


def _tree_paths(lib, tree):
    """``{path of names: ndarray}`` of a pytree, through either library's tree_util."""
    tu = fluxion.tree_util if lib is nnx else _jax().tree_util
    return {tuple(_key_name(k) for k in path): _np(leaf) for path, leaf in tu.tree_flatten_with_path(tree)[0]}


def _state_paths(lib, state):
    return {path: _np(v) for path, v in lib.to_flat_state(state)}


def _error(fn):
    try:
        fn()
    except Exception as e:  # the class name is what must agree
        return type(e).__name__
    return None


def _tu(lib):
    return fluxion.tree_util if lib is nnx else _jax().tree_util


def _jit(lib):
    return fluxion.jit if lib is nnx else _jax().jit


# -- cases -------------------------------------------------------------------------------------------------------


def case_module_is_pytree(lib, lj):
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    out = {'paths': _tree_paths(lib, m)}
    # A jitted function takes the module as a plain pytree argument.
    x = lj.ones((4, 2)) * lj.arange(2.)
    out['jit'] = _np(_jit(lib)(lambda m, x: m(x))(m, x))
    leaves, treedef = _tu(lib).tree_flatten(m)
    rebuilt = _tu(lib).tree_unflatten(treedef, leaves)
    out['rebuilt_type'] = type(rebuilt).__name__
    out['rebuilt_call'] = _np(rebuilt(x))
    return out


def case_grad_through_module_pytree(lib, lj):
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    x = lj.ones((4, 2)) * lj.arange(2.)
    grad = fluxion.grad if lib is nnx else _jax().grad
    g = grad(lambda m: (m(x) ** 2).sum())(m)
    return {'grad': _tree_paths(lib, g), 'type': type(g).__name__}


def _foo(lib, lj):
    class Foo(lib.Pytree):
        def __init__(self):
            self.a = lib.data(42)
            self.b = lib.static((1, 2))
            self.c = lj.zeros(2)
            self.d = lib.data([1.0, 2])
            self.e = None
            self.name = 'foo'
    return Foo()


def case_data_static_markers(lib, lj):
    f = _foo(lib, lj)
    return {'tree': _tree_paths(lib, f), 'state': _state_paths(lib, lib.state(f)),
            'graph_round_trip': _state_paths(lib, lib.state(lib.merge(*lib.split(f)))),
            'merged_static': lib.merge(*lib.split(f)).b}


def case_status_survives_merge(lib, lj):
    f = lib.merge(*lib.split(_foo(lib, lj)))
    # 'a' stays data after the round trip; 'e' stays static, so an array may not go there.
    f.a = lib.data(7)
    return {'a_leaf': _tree_paths(lib, f)[('a',)], 'e_error': _error(lambda: setattr(f, 'e', lj.ones(1)))}


def case_errors(lib, lj):
    class Holder(lib.Module):
        def __init__(self, value):
            self.x = value

    class Later(lib.Module):
        def __init__(self):
            self.x = None

    later = Later()
    out = {
        'list_of_modules': _error(lambda: Holder([lib.Linear(1, 1, rngs=lib.Rngs(0))])),
        'static_with_array': _error(lambda: Holder(lib.static(lj.ones(2)))),
        'nested_marker': _error(lambda: Holder([lib.data(1)])),
        'array_into_static': _error(lambda: setattr(later, 'x', lj.ones(2))),
        'explicit_override': _error(lambda: setattr(later, 'x', lib.data(lj.ones(2)))),
        'check_pytree_type': _error(lambda: lib.check_pytree(3)),
        'data_both_forms': _error(lambda: lib.data(1, default=2)),
        'static_reserved_metadata': _error(lambda: lib.static(metadata={'static': True})),
        'object_pytree_true': _error(lambda: type('O', (lib.Object,), {}, pytree=True)),
        'wrapped_ok': _error(lambda: Holder(lib.data([lib.Linear(1, 1, rngs=lib.Rngs(0))]))),
    }
    return out


def case_object_is_not_pytree(lib, lj):
    class Plain(lib.Object):
        def __init__(self):
            self.w = lib.Param(lj.ones(2))
            self.items = [lj.zeros(1)]  # allowed: no status checks without pytree mode

    p = Plain()
    leaves = _tu(lib).tree_leaves(p)
    return {'leaf_is_object': len(leaves) == 1 and leaves[0] is p,
            'state': _state_paths(lib, lib.state(p))}


def case_is_data_has_data(lib, lj):
    values = {'array': lj.ones(2), 'numpy': np.ones(2), 'np_scalar': np.float32(1), 'param': lib.Param(1),
              'rngs': lib.Rngs(0), 'module': lib.Linear(1, 1, rngs=lib.Rngs(0)), 'int': 1, 'str': 's',
              'list_of_arrays': [lj.ones(1)], 'none': None}
    out = {f'is_data_{k}': lib.is_data(v) for k, v in values.items()}
    shared = lj.ones(1)
    found = lib.has_data({'a': [shared, 1, 'x'], 'b': (lib.Param(2), shared), 'c': None})
    out['has_data'] = tuple(type(x).__name__.replace('ArrayImpl', 'Array') for x in found)
    out['has_data_empty'] = lib.has_data([1, 'a', None])
    return out


def case_register_data_type(lib, lj):
    @dataclasses.dataclass(frozen=True)
    class Box:
        value: int

    lib.register_data_type(Box)

    class Foo(lib.Pytree):
        def __init__(self):
            self.box = Box(3)
            self.tag = 'x'

    f = Foo()
    return {'is_data': lib.is_data(Box(1)), 'leaves': tuple(repr(x.value) for x in _tu(lib).tree_leaves(
        f, is_leaf=lambda x: isinstance(x, Box)))}


def case_dataclass(lib, lj):
    @lib.dataclass
    class Point(lib.Pytree):
        x: Any = lib.data()
        y: Any = lib.data(default=0.0)
        label: str = lib.static(default='p')

    p = Point(lj.ones(2), y=lj.zeros(1), label='q')
    q = Point(lj.ones(2))
    return {'tree': _tree_paths(lib, p), 'label': p.label, 'default_label': q.label,
            'default_y': _tree_paths(lib, q)[('y',)], 'repr_is_dataclass': 'Point(x=' in repr(p)}


def case_annotations(lib, lj):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)

        class Foo(lib.Pytree):
            a: lib.Data[Any]
            b: lib.Static[Any]

            def __init__(self):
                self.a = 5        # data by annotation, though an int
                self.b = 'name'
                self.c = 6        # static: not data on its own

    return {'tree': _tree_paths(lib, Foo())}


def case_update_context(lib, lj):
    class Foo(lib.Module):
        def __init__(self):
            self.w = lib.Param(lj.ones(2))

    m1 = Foo()
    w = m1.w
    with lib.update_context('demo'):
        with lib.split_context('demo') as ctx:
            graphdef, state = ctx.split(m1)

        @_jit(lib)
        def f(graphdef, state):
            with lib.merge_context('demo', inner=True) as ctx:
                m2 = ctx.merge(graphdef, state)
            m2.a = 1
            m2.ref = m2
            m2.w[...] = m2.w[...] * 3
            m2.v = lib.BatchStat(lj.zeros(1))
            with lib.split_context('demo') as ctx:
                return ctx.split(m2)

        graphdef_out, state_out = f(graphdef, state)
        with lib.merge_context('demo', inner=False) as ctx:
            m3 = ctx.merge(graphdef_out, state_out)
    return {'same': m3 is m1, 'a': m1.a, 'ref': m1.ref is m1, 'same_w': m1.w is w, 'w': _np(m1.w),
            'v': _np(m1.v), 'v_type': type(m1.v).__name__, 'state': _state_paths(lib, lib.state(m1))}


def case_update_context_decorator(lib, lj):
    class Foo(lib.Module):
        def __init__(self):
            self.w = lib.Param(lj.ones(2))

    @lib.update_context('deco')
    def g(m1):
        with lib.split_context('deco') as ctx:
            gdef, st = ctx.split(m1)
        with lib.merge_context('deco', inner=True) as ctx:
            m2 = ctx.merge(gdef, st)
        del m2.w
        m2.u = lib.Param(lj.zeros(3))
        with lib.split_context('deco') as ctx:
            gdef, st = ctx.split(m2)
        with lib.merge_context('deco', inner=False) as ctx:
            return ctx.merge(gdef, st)

    m = Foo()
    out = g(m)
    return {'same': out is m, 'has_w': hasattr(m, 'w'), 'state': _state_paths(lib, lib.state(m))}


def case_context_errors(lib, lj):
    def merge_without_inner():
        with lib.update_context('t'):
            with lib.merge_context('t'):
                pass
    return {'no_context': _error(lambda: lib.current_update_context('missing')),
            'split_without_update': _error(lambda: lib.split_context('missing').__enter__()),
            'merge_without_inner': _error(merge_without_inner)}


def case_split_context_shares_references(lib, lj):
    a = lib.Linear(2, 2, rngs=lib.Rngs(0))
    b = lib.Sequential(a, lib.Linear(2, 1, rngs=lib.Rngs(1)))
    with lib.split_context() as ctx:
        ga, sa = ctx.split(a)
        gb, sb = ctx.split(b)
    with lib.merge_context() as ctx:
        a2 = ctx.merge(ga, sa)
        b2 = ctx.merge(gb, sb)
    return {'shared': b2.layers[0] is a2, 'copied': a2.kernel is not a.kernel,
            'b_state': _state_paths(lib, sb), 'a_state': _state_paths(lib, sa),
            'values': _state_paths(lib, lib.state(b2))}


def case_unpack_graphstate(lib, lj):
    m = lib.Sequential(lib.Linear(2, 3, rngs=lib.Rngs(0)), lib.BatchNorm(3, rngs=lib.Rngs(1)))
    gs = lib.unpack(m)
    params, stats = lib.unpack(m, lib.Param, lib.BatchStat)
    other = lib.unpack(lib.Linear(2, 3, rngs=lib.Rngs(0)))
    merged = lib.merge(params, stats)
    leaves = _tu(lib).tree_leaves(gs)
    return {'type': type(gs).__name__, 'merged_state': _state_paths(lib, lib.state(merged)),
            'one': _state_paths(lib, lib.state(lib.merge(gs))), 'n_leaves': len(leaves),
            'params_keys': tuple(params['layers'][1]) if 'layers' in params else tuple(params[0]),
            'mixed_error': _error(lambda: lib.merge(gs, other)),
            'not_graphstate_error': _error(lambda: lib.merge(gs, lib.state(m))),
            'bad_first_error': _error(lambda: lib.merge(3, gs)),
            'bad_state_error': _error(lambda: lib.GraphState(lib.graphdef(m), {'a': 1}))}


def case_as_pure(lib, lj):
    m = lib.Linear(2, 3, rngs=lib.Rngs(0))
    pure_state = lib.as_pure(lib.state(m))
    leaves = _tu(lib).tree_leaves(pure_state, is_leaf=lambda x: isinstance(x, lib.Variable))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        old = lib.pure({'p': lib.Param(lj.ones(1)), 'x': 3})
    return {'no_variables': not any(isinstance(x, lib.Variable) for x in leaves),
            'values': _state_paths(lib, pure_state), 'old': (_np(old['p']), old['x']),
            'warned': any(issubclass(w.category, DeprecationWarning) for w in caught)}


def case_recursive_map(lib, lj):
    class M(lib.Module):
        def __init__(self):
            self.lin = lib.Linear(2, 2, rngs=lib.Rngs(0))
            self.t = (1, 2)
            self.k = lib.data([lib.Param(lj.ones(1)), 3.0])

    m = M()
    m.shared = m.lin
    seen = []

    def f(path, x):
        seen.append((path, type(x).__name__))
        if isinstance(x, lib.Linear):
            x.visited = True
        if isinstance(x, float):
            return x * 2
        if isinstance(x, lib.Param) and x.shape == (1,):
            return lib.Param(x[...] + 1)
        return x

    r = lib.recursive_map(f, m)
    return {'seen': tuple(p for p in seen if '_pytree__' not in str(p[0])), 'new_root': r is not m,
            'shared': r.shared is r.lin, 'visited': r.lin.visited, 'orig_not_visited': hasattr(m.lin, 'visited'),
            'k1': r.k[1], 'k0': _np(r.k[0]), 'k0_shared': r.k[0] is m.k[0]}


def case_submodules(lib, lj):
    return {'graphlib_split': lib.graphlib.split is lib.split, 'graphlib_merge': lib.graphlib.merge is lib.merge,
            'statelib_State': lib.statelib.State is lib.State,
            'variablelib_Param': lib.variablelib.Param is lib.Param, 'rnglib_Rngs': lib.rnglib.Rngs is lib.Rngs,
            'filterlib_Any': lib.filterlib.Any is lib.Any, 'pytreelib_data': lib.pytreelib.data is lib.data,
            'object_Pytree': lib.object.Pytree is lib.Pytree,
            'graphlib_contexts': lib.graphlib.update_context is lib.update_context,
            'M_bound': getattr(lib.M.__bound__, '__forward_arg__', None) or lib.M.__bound__.__name__, 'A': type(lib.A).__name__}


def case_deprecated(lib, lj):
    def new_api(x):
        """Doubles."""
        return x * 2
    old = lib.deprecations.deprecated(new_api)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        y = old(3)
    return {'y': y, 'category': caught[0].category.__name__, 'message': str(caught[0].message),
            'name': old.__name__, 'doc_kept': 'Doubles.' in old.__doc__}


def case_to_tree_from_tree(lib, lj):
    ext = lib.extract if lib is nnx else __import__('flax.nnx.extract', fromlist=['x'])
    a = lib.Linear(2, 2, rngs=lib.Rngs(0))
    b = lib.Sequential(a, lib.Linear(2, 1, rngs=lib.Rngs(1)))
    tree = {'a': a, 'b': b, 'x': lj.ones(3), 'n': 5}
    t = lib.to_tree(tree)
    back = lib.from_tree(t)
    prefixed = lib.to_tree((a, b), prefix=(0, 0))
    return {'types': {k: type(v).__name__ for k, v in t.items() if k != 'x'},
            'a_state': _state_paths(lib, t['a'].state), 'b_state': _state_paths(lib, t['b'].state),
            'leaves': len(_tu(lib).tree_leaves(t)), 'shared': back['b'].layers[0] is back['a'],
            'new_objects': back['a'] is not a, 'x': _np(back['x']), 'n': back['n'],
            'values': _state_paths(lib, lib.state(back['b'])), 'prefixed_types': tuple(
                type(v).__name__ for v in prefixed),
            'aliasing_error': _error(lambda: lib.to_tree((a, b), prefix=(0, 1))),
            'no_graphdef_error': _error(lambda: lib.NodeStates.from_states(1).graphdef),
            'two_states_error': _error(lambda: lib.NodeStates.from_states(1, 2).state),
            'bad_leaf_error': _error(lambda: lib.from_tree({'a': 1}, map_non_graph_nodes=True)),
            'is_tree_node': ext.is_tree_node(t['a'])}


def case_tree_mode(lib, lj):
    class Block(lib.Module):
        def __init__(self):
            self.lin = lib.Linear(2, 3, rngs=lib.Rngs(0))
            self.bn = lib.BatchNorm(3, rngs=lib.Rngs(1))
            self.count = lib.data(3)
            self.name = 'block'

    class Plain(lib.Object):
        def __init__(self):
            self.w = lib.Param(lj.ones(1))

    m = Block()
    gdef, params, rest = lib.split(m, lib.Param, ..., graph=False)
    back = lib.merge(gdef, params, rest)
    shared = Block()
    shared.again = shared.lin
    with lib.set_graph_mode(False):
        in_context = lib.set_graph_mode.current_value()
        ctx_paths = _state_paths(lib, lib.state(m))
        ctx_error = _error(lambda: lib.split(shared))
    restored = lib.set_graph_mode.current_value()

    @lib.set_graph_updates(False)
    def inside():
        return lib.set_graph_updates.current_value()

    return {'params': _state_paths(lib, params), 'rest': _state_paths(lib, rest),
            'back_type': type(back).__name__, 'back_state': _state_paths(lib, lib.state(back)),
            'back_name': back.name, 'fresh': back.lin is not m.lin and back.lin.kernel is m.lin.kernel,
            'in_context': in_context, 'ctx_paths': ctx_paths, 'shared_error': ctx_error, 'restored': restored,
            'graph_mode_shared_ok': _error(lambda: lib.split(shared)),
            'object_error': _error(lambda: lib.split(Plain(), graph=False)),
            'decorated': inside(), 'after_decorated': lib.set_graph_updates.current_value(),
            'unpack': _state_paths(lib, lib.unpack(m, graph=False)),
            'graphdef_differs': lib.graphdef(m, graph=False) != lib.graphdef(m)}


def case_jit_partial(lib, lj):
    optax = foptax if lib is nnx else pytest.importorskip('optax')
    x, y = lj.ones((4, 2)) * lj.arange(2.), lj.ones((4, 3))

    def make():
        model = lib.Sequential(lib.BatchNorm(2, rngs=lib.Rngs(1)), lib.Linear(2, 3, rngs=lib.Rngs(0)))
        return model, lib.Optimizer(model, optax.adam(1e-2), wrt=lib.Param)

    def train_step(model, optimizer, x, y):
        loss, grads = lib.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    out = {}
    for graph in (False, True):
        model, opt = make()
        with lib.set_graph_updates(False):
            step = lib.jit_partial(train_step, model, opt, graph=graph)
        out[f'losses_{graph}'] = np.array([float(step(x, y)) for _ in range(3)])
        out[f'state_{graph}'] = _state_paths(lib, lib.state(model))
        out[f'step_{graph}'] = int(_np(opt.step))
    model, opt = make()
    out['updates_error'] = _error(lambda: lib.jit_partial(train_step, model, opt))
    shared = lib.Linear(2, 2, rngs=lib.Rngs(0))
    out['alias_error'] = _error(lambda: lib.jit_partial(lambda a, b: a(x), shared, shared, graph=False)(x))
    out['runtime_variable_error'] = _error(
        lambda: lib.jit_partial(lambda m, v: m(x), shared, graph=False)(lib.Param(lj.ones(1))))
    return out


def case_capture(lib, lj):
    class Foo(lib.Module):
        def __init__(self):
            self.lin = lib.Linear(2, 2, rngs=lib.Rngs(0))

        def features(self, x):
            return self.lin(x)

        def __call__(self, x):
            self.sow(lib.Intermediate, 'inp', x)
            y = self.perturb('grad_of_y', self.features(x))
            return (y * 3).sum()

    m = Foo()
    x = lj.ones((1, 2)) * lj.arange(2.)
    r1, inter = lib.capture(m, lib.Intermediate)(x)
    r2, outs = lib.capture(m.__call__, lib.Intermediate, method_outputs=lib.Intermediate)(x)
    r3, perts = lib.capture(lambda m, x: m(x), lib.Perturbation)(m, x)
    seeded = {'grad_of_y': lib.Perturbation(lj.ones((1, 2)))}
    r4 = lib.capture(lambda m, x: m(x), init=seeded)(m, x)
    r5, p5 = lib.capture(lib.Perturbation)(lambda m, x: m(x))(m, x)
    return {'r': np.array([float(r1), float(r2), float(r3), float(r4), float(r5)]),
            'inter': _state_paths(lib, inter), 'outs': _state_paths(lib, outs), 'perts': _state_paths(lib, perts),
            'p5': _state_paths(lib, p5), 'clean': not hasattr(m, '__captures__'),
            'state_after': _state_paths(lib, lib.state(m)), 'not_instrumented': not hasattr(Foo.features, '__wrapped__')}


def _stream_keys(lib, rngs):
    key_data = fluxion.random.key_data if lib is nnx else _jax().random.key_data
    return {name: (_np(key_data(getattr(rngs, name).key[...])), _np(getattr(rngs, name).count))
            for name in ('params', 'dropout', 'noise')}


def case_with_rngs(lib, lj):
    out = {}
    rngs = lib.Rngs(params=0, dropout=1, noise=2)
    out['split_all'] = _stream_keys(lib, lib.with_rngs(rngs, split=4, graph=False))
    out['after_split_all'] = _stream_keys(lib, rngs)
    rngs = lib.Rngs(params=0, dropout=1, noise=2)
    new = lib.with_rngs(rngs, split={'params': 4, ...: (2, 3)}, fork='dropout', graph=False)
    out['mixed'] = _stream_keys(lib, new)
    rngs = lib.Rngs(params=0, dropout=1, noise=2)
    with lib.set_graph_updates(False):
        new = lib.with_rngs(rngs, broadcast=3, only='noise')
    out['broadcast_graph'] = _stream_keys(lib, new)
    out['default_error'] = _error(lambda: lib.with_rngs(lib.Rngs(0), split=2))
    out['conflict_error'] = _error(lambda: lib.with_rngs(lib.Rngs(params=0), split={'params': 2}, fork='params',
                                                         graph=False))

    @lib.with_rngs(split=2, graph=False)
    def f(r):
        return _stream_keys(lib, r)
    out['decorated'] = f(lib.Rngs(params=0, dropout=1, noise=2))
    model = lib.Dropout(0.5, rngs=lib.Rngs(dropout=3))
    new_model = lib.with_rngs(model, split=2, graph=False)
    out['module'] = _np((fluxion.random.key_data if lib is nnx else _jax().random.key_data)(
        new_model.rngs.key[...]))
    return out


def case_recursive_map_tree_mode(lib, lj):
    class Two(lib.Module):
        def __init__(self, a, b):
            self.a, self.b, self.name = a, b, 'two'

    m = Two(lib.Linear(2, 2, rngs=lib.Rngs(0)), lib.Linear(2, 1, rngs=lib.Rngs(1)))
    seen = []

    def f(path, x):
        seen.append((path, type(x).__name__))
        return lib.Param(x[...] * 2) if isinstance(x, lib.Param) else x

    r = lib.recursive_map(f, m, graph=False)
    shared = Two(m.a, m.a)
    return {'seen': tuple(s for s in seen if '_pytree__' not in str(s[0])), 'state': _state_paths(lib, lib.state(r)),
            'new': r.a is not m.a, 'name': r.name,
            'dup_error': _error(lambda: lib.recursive_map(lambda p, x: x, shared, graph=False))}


def case_traversals(lib, lj):
    t = lib.traversals
    xs = {'foo': 1, 'bar': {'a': 2, 'b': {}}, 'baz': {'c': {'d': 3}}}
    return {'flat': t.flatten_mapping(xs), 'flat_empty': tuple(t.flatten_mapping(xs, keep_empty_nodes=True)),
            'sep': t.flatten_mapping(xs, sep='/'), 'seq': t.flatten_to_sequence(xs),
            'leafy': t.flatten_mapping(xs, is_leaf=lambda p, x: p == ('baz',)),
            'round': t.unflatten_mapping(t.flatten_mapping(xs)),
            'round_empty': t.unflatten_mapping(t.flatten_mapping(xs, keep_empty_nodes=True)),
            'round_sep': t.unflatten_mapping(t.flatten_mapping(xs, sep='/'), sep='/'),
            'from_pairs': t.unflatten_mapping([(('x', 'y'), 1), (('z',), 2)]),
            'state': t.flatten_mapping(lib.State({'a': {'b': 1}})),
            'bad': _error(lambda: t.unflatten_mapping(5))}


def case_cached_partial(lib, lj):
    optax = foptax if lib is nnx else pytest.importorskip('optax')
    x, y = lj.ones((4, 2)) * lj.arange(2.), lj.ones((4, 3))
    model = lib.Sequential(lib.BatchNorm(2, rngs=lib.Rngs(1)), lib.Linear(2, 3, rngs=lib.Rngs(0)))
    opt = lib.Optimizer(model, optax.adam(1e-2), wrt=lib.Param)

    @lib.jit
    def train_step(model, optimizer, x, y):
        loss, grads = lib.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    step = lib.cached_partial(train_step, model, opt)
    losses = np.array([float(step(x, y)) for _ in range(3)])

    @lib.jit
    def grow(m, x):
        m.extra = lib.Param(lj.zeros(1))
        return x

    def tree_mode():
        with lib.set_graph_mode(False):
            lib.cached_partial(train_step, model, opt)
    m2 = lib.Linear(2, 2, rngs=lib.Rngs(0))
    return {'losses': losses, 'state': _state_paths(lib, lib.state(model)), 'step': int(_np(opt.step)),
            'mutation_error': _error(lambda: lib.cached_partial(grow, m2)(x)),
            'original_untouched': not hasattr(m2, 'extra'),
            'tree_mode_error': _error(tree_mode),
            'no_updates_error': _error(lambda: lib.cached_partial(train_step, model, graph_updates=False))}


def case_deepcopy_and_pickle(lib, lj):
    import copy
    import pickle

    class Pair(lib.Module):
        def __init__(self):
            self.a = lib.Linear(2, 3, rngs=lib.Rngs(0))
            self.b = self.a
            self.flag = lib.data(1)

    m = Pair()
    c = copy.deepcopy(m)
    lin = lib.Linear(2, 3, rngs=lib.Rngs(0))
    seq = lib.Sequential(lin, lin)
    p = pickle.loads(pickle.dumps(seq))
    return {'copy_shared': c.b is c.a, 'copy_new': c.a.kernel is not m.a.kernel,
            'copy_state': _state_paths(lib, lib.state(c)), 'copy_tree': _tree_paths(lib, c),
            'pickle_shared': p.layers[0] is p.layers[1], 'pickle_state': _state_paths(lib, lib.state(p)),
            'variable': _np(copy.deepcopy(lib.Param(lj.ones(2), tag='t'))),
            'variable_meta': pickle.loads(pickle.dumps(lib.Param(lj.ones(1), tag='t'))).tag}


def case_reprlib(lib, lj):
    r = lib.reprlib

    class Point(r.Representable):
        def __init__(self, **kw):
            self.kw = kw

        def __nnx_repr__(self):
            yield r.Object(type(self), comment=' # note')
            for k, v in self.kw.items():
                yield r.Attr(k, v)

    class Flat(r.Representable):
        def __nnx_repr__(self):
            yield r.Object('Flat', same_line=True, start='<', end='>')
            yield r.Attr('a', 1)
            yield r.Attr('b', 'two', start='[', end=']')

    class Empty(r.Representable):
        def __nnx_repr__(self):
            yield r.Object(type(self), empty_repr='...')

    class Bad(r.Representable):
        def __nnx_repr__(self):
            yield r.Attr('a', 1)

    nested = Point(x=1, y=2.5, flag=True, none=None, s='hi', t=(1,), l=[1, 'a'], d={'k': 3},
                   inner=Point(z=r.PrettyMapping({'m': 1})), raw=r.PrettySequence([1, Flat()]))
    with_color = r.REPR_CONTEXT.current_color
    r.REPR_CONTEXT.current_color = r.Color(*[f'<{f}>' for f in r.Color._fields])
    try:
        painted = r.get_repr(Point(a=1, b=[None, 's']))
    finally:
        r.REPR_CONTEXT.current_color = with_color
    return {'nested': repr(nested), 'flat': repr(Flat()), 'empty': repr(Empty()),
            'painted': painted, 'colorized_plain': r.colorized({'a': (1,)}) if with_color == r.NO_COLOR else '',
            'bad': _error(lambda: repr(Bad())), 'not_representable': _error(lambda: r.get_repr(3)),
            'no_color': tuple(r.NO_COLOR)}


CASES: dict[str, Callable] = {name[5:]: fn for name, fn in globals().items() if name.startswith('case_')}


def _assert_same(a, b, where=''):
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a, key=str) == sorted(b, key=str), (where, sorted(a, key=str),
                                                                                   sorted(b, key=str))
        for k in a:
            _assert_same(a[k], b[k], f'{where}/{k}')
    elif isinstance(a, (tuple, list)) and not isinstance(a, np.ndarray):
        assert len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f'{where}[{i}]')
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (where, a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-6, atol=1e-6,
                                   err_msg=where)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize('name', sorted(CASES))
def test_graph_machinery_matches_flax(name):
    fnnx, jax = _flax(), _jax()
    ours = CASES[name](nnx, fjnp)
    theirs = CASES[name](fnnx, jax.numpy)
    _assert_same(ours, theirs, name)

