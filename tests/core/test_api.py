"""Tests of the public transformations: grad, value_and_grad, jvp, vjp, linearize, jacfwd, jacrev, hessian, vmap,
jit and eval_shape.

Oracles: hand-computed derivatives, NumPy re-implementations, the tutorial programs in /work/shared/tutorials
(000, 001, 003) with the output they print, and real JAX where it is installed (`pytest.importorskip`).
The last section checks that the `test_util` helpers themselves detect wrong derivatives and wrong batching.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src import test_util as tu


# --------------------------------------------------------------------------------------------------------------
# Tutorial 000 (JAX + Flax + Optax notes)
# --------------------------------------------------------------------------------------------------------------

def _mse(x, y):
    return jnp.sum((x - y) ** 2)


def test_tutorial_grad_argnums_pair():
    x = jnp.arange(5.)
    y = x + jnp.full(5, 0.1)
    gx = jax.grad(_mse)(x, y)
    gx2, gy = jax.grad(_mse, argnums=(0, 1))(x, y)
    expected = 2 * (np.arange(5, dtype=np.float32) - (np.arange(5, dtype=np.float32) + np.float32(0.1)))
    tu.assert_allclose(gx, expected)
    tu.assert_allclose(gx2, expected)
    tu.assert_allclose(gy, -expected)
    # The exact float32 digits JAX prints (x - (x + 0.1f) is not exactly -0.1 in float32).
    assert str(gx) == "[-0.2        -0.20000005 -0.19999981 -0.19999981 -0.19999981]"


def test_tutorial_grad_of_integer_input_is_an_error():
    # The tutorial's first call uses jnp.arange(5) (int32); JAX rejects differentiating an integer input.
    x = jnp.arange(5)
    y = x + jnp.full(5, 0.1)
    with pytest.raises(TypeError, match=r"(?s)int32.*(astype|float)"):
        jax.grad(_mse)(x, y)


_HAS_AUX_LEAK = ("core bug: grad/value_and_grad/vjp with has_aux=True return the aux pytree still holding JVP "
                 "tracers instead of concrete arrays; repro: jax.grad(lambda x: (jnp.sum(x ** 2), {'a': x + 1}), "
                 "has_aux=True)(jnp.arange(3.))[1]['a'] is a Traced<...>with<JVPTrace>")


def test_tutorial_grad_has_aux_returns_grad_and_aux_dict():
    def mse_aux(x, y):
        return _mse(x, y), {'add': x + y, 'del': x - y}

    x = jnp.arange(5.)
    y = x + jnp.ones(shape=(5)) * 0.1
    grad, aux = jax.grad(mse_aux, has_aux=True)(x, y)
    xn = np.arange(5, dtype=np.float32)
    yn = xn + np.ones(5, np.float32) * np.float32(0.1)
    tu.assert_allclose(grad, 2 * (xn - yn))
    assert set(aux) == {'add', 'del'}
    assert all(type(v) is jax.Array for v in aux.values())
    tu.assert_allclose(aux['add'], xn + yn)
    tu.assert_allclose(aux['del'], xn - yn)


def test_value_and_grad_has_aux_values():
    (val, aux), g = jax.value_and_grad(lambda x: (jnp.sum(x ** 2), x * 3), has_aux=True)(jnp.arange(3.))
    tu.assert_allclose(val, np.float32(5.0))
    tu.assert_allclose(g, np.array([0, 2, 4], np.float32))
    tu.assert_allclose(np.asarray(aux), np.array([0, 3, 6], np.float32))


def test_tutorial_loss_fn_with_param_dict_and_tree_map_update(rng):
    def loss_fn(params, X, y):
        output = jnp.matmul(X, params['w']) + params['b']
        return jnp.sum((output - y) ** 2)

    X = rng.standard_normal((32, 16)).astype(np.float32)
    y = np.zeros((10,), np.float32)
    params = {'w': rng.standard_normal((16, 10)).astype(np.float32), 'b': np.zeros((10,), np.float32)}
    loss = loss_fn(params, X, y)
    grads = jax.grad(loss_fn)(params, X, y)
    out = X @ params['w'] + params['b']
    tu.assert_allclose(loss, np.sum((out - y) ** 2, dtype=np.float32), rtol=1e-5)
    tu.assert_allclose(grads['w'], 2 * X.T @ (out - y), rtol=1e-4, atol=1e-3)
    tu.assert_allclose(grads['b'], 2 * np.sum(out - y, axis=0), rtol=1e-4, atol=1e-3)
    learning_rate = 0.1
    new = jax.tree_map(lambda p, g: p - learning_rate * g, params, grads)
    assert set(new) == {'w', 'b'}
    tu.assert_allclose(new['w'], params['w'] - 0.1 * np.asarray(grads['w']), rtol=1e-6)
    same = jax.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)
    tu.assert_allclose(same, new)


def test_tutorial_linear_regression_with_jit_update(rng):
    N = 1000
    X = jnp.asarray(rng.uniform(size=(N,)).astype(np.float32))
    y = 4 * X + 1 + jnp.asarray(rng.standard_normal(N).astype(np.float32))
    theta = {'w': jnp.array(1.), 'b': jnp.array(0.)}
    lr = 0.01

    def model(theta):
        return X * theta['w'] + theta['b']

    def loss_fn(theta):
        return jnp.mean((model(theta) - y) ** 2)

    def update(theta):
        grads = jax.grad(loss_fn)(theta)
        for key in theta.keys():
            theta[key] = theta[key] - lr * grads[key]
        return theta

    first_loss = float(loss_fn(theta))
    for _ in range(300):
        theta = jax.jit(update)(theta)
    # The same gradient descent in NumPy (float64) as the oracle.
    xn, yn = np.asarray(X, np.float64), np.asarray(y, np.float64)
    w, b = 1.0, 0.0
    for _ in range(300):
        r = xn * w + b - yn
        w, b = w - lr * np.mean(2 * r * xn), b - lr * np.mean(2 * r)
    tu.assert_allclose(theta['w'], np.float32(w), rtol=1e-4)
    tu.assert_allclose(theta['b'], np.float32(b), rtol=1e-4)
    assert float(loss_fn(theta)) < first_loss
    assert jax.jit(update)._cache_size() == 1  # a fresh jit wrapper each iteration reuses the same trace


def test_tutorial_static_argnames_normal():
    @functools.partial(jax.jit, static_argnames=['normal'])
    def f(x, normal=True):
        if normal:
            return (x - jnp.mean(x)) / jnp.std(x)
        return x

    out = f(jnp.arange(5), False)
    tu.assert_allclose(out, np.arange(5, dtype=np.int32))
    xs = np.arange(5, dtype=np.float32)
    tu.assert_allclose(f(jnp.arange(5.)), (xs - xs.mean()) / xs.std(), rtol=1e-6)
    tu.assert_allclose(f(jnp.arange(5.), normal=True), (xs - xs.mean()) / xs.std(), rtol=1e-6)
    assert f._cache_size() == 3  # (int32, normal=False), (float32, default), (float32, normal=True)


def test_tutorial_without_static_argnames_branching_on_flag_fails():
    @jax.jit
    def f(x, normal=True):
        if normal:
            return (x - jnp.mean(x)) / jnp.std(x)
        return x

    with pytest.raises(jax.errors.TracerBoolConversionError):
        f(jnp.arange(5), False)


def test_tutorial_jit_branching_on_shape_compiles_once_per_shape(capsys):
    @jax.jit
    def func(x):  # .shape and .ndim are static under jit
        return 1 if x.shape == (1, 1) else 2 if x.ndim == 1 else x

    print(func(jnp.array([[10]])), func(jnp.array([10])), func(10))
    assert capsys.readouterr().out == "1 2 10\n"
    assert func._cache_size() == 3
    func(jnp.array([[7]]))
    func(jnp.array([3]))
    assert func._cache_size() == 3
    func(jnp.array([3, 4]))  # a new shape traces again
    assert func._cache_size() == 4


def test_tutorial_make_jaxpr_log2_with_print(capsys):
    def log2_with_print(x):
        print("printed x:", x)
        ln_x = jnp.log(x)
        ln_2 = jnp.log(2.0)
        return ln_x / ln_2

    jaxpr = jax.make_jaxpr(log2_with_print)(3.)
    printed = capsys.readouterr().out
    # The tutorial was written with an older JAX ("Traced<ShapedArray(float32[], weak_type=True)>with<...>");
    # JAX 0.10 prints this, and so does fluxion.
    assert printed == "printed x: JitTracer(~float32[])\n"
    assert str(jaxpr) == ("{ lambda ; a:f32[]. let\n    b:f32[] = log a\n    c:f32[] = log 2.0:f32[]\n"
                          "    d:f32[] = div b c\n  in (d,) }")


# --------------------------------------------------------------------------------------------------------------
# Tutorial 001 (JAX introduction)
# --------------------------------------------------------------------------------------------------------------

def test_tutorial_higher_order_grad_prints_14_12_6(capsys):
    def f(x):
        return x ** 3 + 2 * x

    grad_f = jax.grad(f)
    grad_grad_f = jax.grad(grad_f)
    grad_grad_grad_f = jax.grad(grad_grad_f)
    print(grad_f(2.), grad_grad_f(2.), grad_grad_grad_f(2.))
    assert capsys.readouterr().out == "14.0 12.0 6.0\n"


def test_tutorial_grad_of_sum_of_squares():
    out = jax.grad(lambda x: jnp.sum(x * x))(jnp.array([1, 2, 3.]))
    assert repr(out) == "Array([2., 4., 6.], dtype=float32)"


def test_tutorial_jit_norm_and_selu(rng):
    def norm(X):
        X = X - X.mean(0)
        return X / X.std(0)

    X = jnp.array(rng.random((50, 4)))
    tu.check_jit(norm, [X], atol=1e-6, rtol=1e-5)
    xn = np.asarray(X)
    tu.assert_allclose(jax.jit(norm)(X), (xn - xn.mean(0)) / xn.std(0), atol=1e-5, rtol=1e-5)

    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    x = rng.standard_normal(100).astype(np.float32)
    expected = 1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67)
    tu.assert_allclose(jax.jit(selu)(x), expected.astype(np.float32), rtol=1e-5, atol=1e-6)
    tu.check_jit(selu, [x])


def test_tutorial_vmap_mat_vec(capsys):
    def vec_vec_dot(x, y):
        """vector-vector dot, ([a], [a]) -> []"""
        return jnp.dot(x, y)

    x = jnp.array([1, 1, 2])
    y = jnp.array([2, 1, 1, ])
    assert repr(vec_vec_dot(x, y)) == "Array(5, dtype=int32)"
    mat_vec = jax.vmap(vec_vec_dot, in_axes=(0, None), out_axes=0)
    xx = jnp.array([[1, 1, 2], [1, 1, 2]])
    out = mat_vec(xx, y)
    assert repr(out) == "Array([5, 5], dtype=int32)"
    assert jax.vmap(jnp.dot, in_axes=(0, None))(xx, y).tolist() == [5, 5]


def test_tutorial_vmap_add():
    x = jnp.arange(8)
    y = jnp.arange(8)
    assert repr(jax.vmap(jnp.add)(x, y)) == "Array([ 0,  2,  4,  6,  8, 10, 12, 14], dtype=int32)"


def test_tutorial_composition_jit_grad_grad_vmap():
    def some_func(x):
        return jnp.sin(x) * x

    xs = np.array([0.7, -0.3, 2.0], np.float32)
    expected = (2 * np.cos(xs) - xs * np.sin(xs)).astype(np.float32)  # d2/dx2 of x sin(x)
    second = jax.jit(jax.grad(jax.grad(some_func)))
    tu.assert_allclose(np.array([second(x) for x in xs]), expected, rtol=1e-5, atol=1e-6)
    tu.assert_allclose(jax.jit(jax.vmap(jax.grad(jax.grad(some_func))))(xs), expected, rtol=1e-5, atol=1e-6)
    tu.assert_allclose(jax.vmap(jax.jit(jax.grad(jax.grad(some_func))))(xs), expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------------------------
# Tutorial 003 (stateful computations)
# --------------------------------------------------------------------------------------------------------------

class Counter:
    """A simple counter (stateful: its method mutates self)."""

    def __init__(self):
        self.n = 0

    def count(self) -> int:
        self.n += 1
        return self.n

    def reset(self):
        self.n = 0


class CounterV2:
    def count(self, n):
        return n + 1, n + 1

    def reset(self):
        return 0


def test_tutorial_counter_stateful_under_jit_prints_1_1_1(capsys):
    counter = Counter()
    for _ in range(3):
        print(counter.count())
    counter.reset()
    fast_count = jax.jit(counter.count)
    for _ in range(3):
        print(fast_count())
    assert capsys.readouterr().out == "1\n2\n3\n1\n1\n1\n"


def test_tutorial_counter_explicit_state_under_jit_prints_1_2_3(capsys):
    counter = CounterV2()
    state = counter.reset()
    fast_count = jax.jit(counter.count)
    for _ in range(3):
        value, state = fast_count(state)
        print(value)
    assert capsys.readouterr().out == "1\n2\n3\n"


class Params(NamedTuple):
    weight: jnp.ndarray
    bias: jnp.ndarray


def test_tutorial_linear_regression_namedtuple_converges(rng):
    def loss(params: Params, x, y):
        pred = params.weight * x + params.bias
        return jnp.mean((pred - y) ** 2)

    LEARNING_RATE = 0.005

    @jax.jit
    def update(params: Params, x, y) -> Params:
        grad = jax.grad(loss)(params, x, y)
        return jax.tree_map(lambda param, g: param - g * LEARNING_RATE, params, grad)

    true_w, true_b = 2, -1
    xs = rng.standard_normal((128, 1)).astype(np.float32)
    noise = rng.standard_normal((128, 1)).astype(np.float32) * 0.5
    ys = xs * true_w + true_b + noise
    params = Params(jnp.asarray(np.float32(rng.standard_normal())), jnp.asarray(np.float32(rng.standard_normal())))
    for _ in range(1000):
        params = update(params, xs, ys)
    assert isinstance(params, Params)
    assert update._cache_size() == 1
    # Oracle: the least-squares line through the data (gradient descent has converged to it).
    A = np.concatenate([xs, np.ones_like(xs)], axis=1).astype(np.float64)
    (w, b), *_ = np.linalg.lstsq(A, ys.astype(np.float64)[:, 0], rcond=None)
    assert abs(float(params.weight) - w) < 1e-3 and abs(float(params.bias) - b) < 1e-3
    assert abs(w - true_w) < 0.2 and abs(b - true_b) < 0.2


# --------------------------------------------------------------------------------------------------------------
# Against real JAX
# --------------------------------------------------------------------------------------------------------------

def _programs(jax_mod, jnp_mod):
    def f(x, y):
        return jnp_mod.sum(jnp_mod.tanh(x) * y ** 2) + jnp_mod.dot(x, y)

    def g(p):
        return {'out': jnp_mod.sin(p['w']) @ p['b'], 'sq': p['b'] ** 2}

    def h(x):
        return jnp_mod.exp(x[0]) * jnp_mod.cos(x[1]) + x[0] * x[1] ** 3

    x = jnp_mod.array([0.3, -1.2, 2.0])
    y = jnp_mod.array([1.5, 0.5, -0.7])
    p = {'w': jnp_mod.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]), 'b': jnp_mod.array([1., 2., 3.])}
    ones = jax_mod.tree_util.tree_map(jnp_mod.ones_like, p)
    out_lin, lin = jax_mod.linearize(lambda v: jnp_mod.sin(v) * v, x)
    return {
        'grad': jax_mod.grad(f, argnums=(0, 1))(x, y),
        'grad_neg_argnum': jax_mod.grad(f, argnums=-1)(x, y),
        'value_and_grad': jax_mod.value_and_grad(f)(x, y),
        'jacfwd': jax_mod.jacfwd(g)(p),
        'jacrev': jax_mod.jacrev(g)(p),
        'jacfwd_argnums': jax_mod.jacfwd(f, argnums=(0, 1))(x, y),
        'hessian': jax_mod.hessian(f)(x, y),
        'hessian_h': jax_mod.hessian(h)(jnp_mod.array([0.5, -0.4])),
        'hessian_pair': jax_mod.hessian(f, argnums=(0, 1))(x, y),
        'vmap': jax_mod.vmap(f, in_axes=(0, None))(jnp_mod.stack([x, y, x * 2]), y),
        'vmap_grad': jax_mod.vmap(jax_mod.grad(f), in_axes=(0, 0))(jnp_mod.stack([x, y]), jnp_mod.stack([y, x])),
        'jvp': jax_mod.jvp(g, (p,), (ones,)),
        'vjp': jax_mod.vjp(g, p)[1]({'out': jnp_mod.array([1., -1.]), 'sq': jnp_mod.array([0.5, 0.5, 0.5])}),
        'linearize': (out_lin, lin(y)),
        'jit_grad': jax_mod.jit(jax_mod.grad(h))(jnp_mod.array([0.5, -0.4])),
    }


def test_transformations_match_real_jax():
    real = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    expected = _programs(real, real_jnp)
    got = _programs(jax, jnp)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(
        real.tree_util.tree_map(np.asarray, expected))
    exp_leaves = [np.asarray(v) for v in real.tree_util.tree_leaves(expected)]
    tu.assert_allclose(jax.tree_util.tree_leaves(got), exp_leaves, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------------------------------------------
# Hand-computed derivatives
# --------------------------------------------------------------------------------------------------------------

def test_jvp_and_vjp_of_elementwise_product():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([4.0, 5.0, 6.0], np.float32)
    out, t = jax.jvp(lambda a, b: a * b, (x, y), (np.ones(3, np.float32), np.zeros(3, np.float32)))
    tu.assert_allclose(out, x * y)
    tu.assert_allclose(t, y)
    out, f_vjp = jax.vjp(lambda a, b: a * b, x, y)
    ga, gb = f_vjp(np.ones(3, np.float32))
    tu.assert_allclose(ga, y)
    tu.assert_allclose(gb, x)


def test_vjp_of_pytree_input_returns_matching_structure():
    p = {'a': np.float32(2.0), 'b': (np.ones(2, np.float32), np.float32(3.0))}
    out, f_vjp = jax.vjp(lambda p: p['a'] * p['b'][0] * p['b'][1], p)
    (ct,) = f_vjp(np.ones(2, np.float32))
    assert jax.tree_util.tree_structure(ct) == jax.tree_util.tree_structure(p)
    tu.assert_allclose(ct['a'], np.float32(6.0))
    tu.assert_allclose(ct['b'][0], np.full(2, 6.0, np.float32))
    tu.assert_allclose(ct['b'][1], np.float32(4.0))


def test_linearize_is_linear_and_matches_jvp(rng):
    x = rng.standard_normal(4).astype(np.float32)
    t1, t2 = rng.standard_normal((2, 4)).astype(np.float32)
    f = lambda v: jnp.sin(v) * jnp.exp(v)  # noqa: E731
    y, f_lin = jax.linearize(f, x)
    tu.assert_allclose(y, jax.jvp(f, (x,), (t1,))[0])
    tu.assert_allclose(f_lin(t1), jax.jvp(f, (x,), (t1,))[1], rtol=1e-6)
    tu.assert_allclose(f_lin(t1 + 2 * t2), np.asarray(f_lin(t1)) + 2 * np.asarray(f_lin(t2)), atol=1e-5, rtol=1e-5)


def test_hessian_of_quadratic_form(rng):
    A = rng.standard_normal((3, 3)).astype(np.float32)
    H = jax.hessian(lambda x: x @ A @ x)(np.ones(3, np.float32))
    tu.assert_allclose(H, A + A.T, atol=1e-5, rtol=1e-5)


def test_jacobians_of_vector_function_agree(rng):
    x = rng.standard_normal(3).astype(np.float32)
    f = lambda v: jnp.stack([v[0] * v[1], jnp.sin(v[2]), jnp.sum(v ** 2)])  # noqa: E731
    J = np.array([[x[1], x[0], 0], [0, 0, np.cos(x[2])], 2 * x], np.float32)
    tu.assert_allclose(jax.jacfwd(f)(x), J, atol=1e-6, rtol=1e-6)
    tu.assert_allclose(jax.jacrev(f)(x), J, atol=1e-6, rtol=1e-6)
    tu.assert_allclose(jax.jacobian(f)(x), J, atol=1e-6, rtol=1e-6)


def test_grad_of_composite_numpy_program(rng):
    W = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((5, 4)).astype(np.float32)

    def net(W, b):
        h = jnp.tanh(x @ W + b)
        return jnp.mean(jnp.logaddexp(h, 0.0)) + 0.1 * jnp.sum(W ** 2)

    tu.check_grads(net, [W, b], order=2, rng=rng)


def test_grad_closure_over_constant_and_python_control_flow():
    def f(x, n):
        for _ in range(n):  # Python loop with a concrete bound is fine under grad
            x = jnp.sin(x)
        return x

    g = jax.grad(f)(np.float32(0.5), 3)
    s1 = np.sin(0.5)
    s2 = np.sin(s1)
    tu.assert_allclose(g, np.float32(np.cos(s2) * np.cos(s1) * np.cos(0.5)), rtol=1e-6)


def test_grad_dtype_follows_input_dtype():
    assert jax.grad(lambda x: x * 2)(np.float16(1.0)).dtype == np.float16
    assert jax.grad(lambda x: x * 2)(1.0).dtype == np.float32


# --------------------------------------------------------------------------------------------------------------
# jit
# --------------------------------------------------------------------------------------------------------------

def test_jit_cache_keys_on_dtype_and_weak_type():
    f = jax.jit(lambda x: x + 1)
    f(np.float32(1.0))
    f(np.float32(2.0))
    assert f._cache_size() == 1
    f(np.int32(1))
    assert f._cache_size() == 2
    out = f(1.0)  # a Python float is weakly typed: a different signature from a float32 array
    assert out.weak_type and out.dtype == np.float32
    assert f._cache_size() == 3


def test_jit_static_argnums_retraces_per_value():
    trace_count = []

    @functools.partial(jax.jit, static_argnums=(1,))
    def power(x, n):
        trace_count.append(n)
        return x ** n

    tu.assert_allclose(power(np.float32(2.0), 3), np.float32(8.0))
    tu.assert_allclose(power(np.float32(3.0), 3), np.float32(27.0))
    tu.assert_allclose(power(np.float32(2.0), 2), np.float32(4.0))
    assert trace_count == [3, 2]


def test_jit_non_hashable_static_argument_error():
    f = jax.jit(lambda x, opts: x, static_argnums=(1,))
    with pytest.raises(ValueError, match="(?i)hash"):
        f(np.float32(1.0), [1, 2])


def test_jit_pytree_inputs_and_outputs(rng):
    def f(p, x):
        return {'y': p['w'] @ x + p['b'], 'n': (jnp.sum(x), None)}

    p = {'w': rng.standard_normal((2, 3)).astype(np.float32), 'b': np.ones(2, np.float32)}
    x = rng.standard_normal(3).astype(np.float32)
    tu.check_jit(f, [p, x], atol=1e-6, rtol=1e-6)
    out = jax.jit(f)(p, x)
    assert out['n'][1] is None


def test_jit_closure_constants_and_kwargs(rng):
    c = jnp.asarray(rng.standard_normal(3).astype(np.float32))

    @jax.jit
    def f(x, scale=2.0):
        return x * c * scale

    x = rng.standard_normal(3).astype(np.float32)
    tu.assert_allclose(f(x), x * np.asarray(c) * 2, rtol=1e-6)
    tu.assert_allclose(f(x, scale=3.0), x * np.asarray(c) * 3, rtol=1e-6)


_JIT_OF_WRAPPED_JIT = ("core bug: jit(g) where g was made by functools.wraps around a jitted function (grad, vmap "
                       "of a jit) copies the inner JitWrapped's __dict__ (its _fun) over its own, so it runs the "
                       "inner function instead of g; repro: jax.jit(jax.grad(jax.jit(lambda x: jnp.sin(x))))(1.0) "
                       "== sin(1) (0.841), expected cos(1) (0.540)")


def test_jit_of_grad_of_jit_minimal():
    tu.assert_allclose(jax.grad(jax.jit(lambda x: jnp.sin(x)))(1.0), np.float32(np.cos(1.0)))
    tu.assert_allclose(jax.jit(jax.grad(lambda x: jnp.sin(x)))(1.0), np.float32(np.cos(1.0)))


def test_jit_of_grad_of_jit_wrapped():
    tu.assert_allclose(jax.jit(jax.grad(jax.jit(lambda x: jnp.sin(x))))(1.0), np.float32(np.cos(1.0)))


def test_jit_inside_grad_and_grad_inside_jit(rng):
    f = jax.jit(lambda x: jnp.sum(jnp.sin(x) ** 2))
    x = rng.standard_normal(4).astype(np.float32)
    expected = 2 * np.sin(x) * np.cos(x)
    tu.assert_allclose(jax.grad(f)(x), expected, rtol=1e-5, atol=1e-6)
    tu.assert_allclose(jax.jit(jax.grad(f))(x), expected, rtol=1e-5, atol=1e-6)
    tu.assert_allclose(jax.vmap(jax.grad(lambda v: f(v)))(np.stack([x, x])), np.stack([expected, expected]),
                       rtol=1e-5, atol=1e-6)


def test_jit_lower_as_text_and_eval_shape():
    f = jax.jit(lambda x, y: jnp.dot(x, y))
    low = f.lower(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    assert "f32[2,3]" in low.as_text()
    shapes = f.eval_shape(jax.ShapeDtypeStruct((4, 5), np.float32), jax.ShapeDtypeStruct((5,), np.float32))
    assert shapes.shape == (4,) and shapes.dtype == np.float32
    compiled = low.compile()
    tu.assert_allclose(compiled(np.ones((2, 3), np.float32), np.ones(3, np.float32)), np.full(2, 3.0, np.float32))


def test_jit_disable_jit_config_runs_python(monkeypatch):
    calls = []

    @jax.jit
    def f(x):
        calls.append(type(x))
        return x * 2

    jax.config.update("jax_disable_jit", True)
    try:
        f(np.float32(1.0))
        f(np.float32(1.0))
    finally:
        jax.config.update("jax_disable_jit", False)
    assert len(calls) == 2  # the Python body ran on concrete values each time


# --------------------------------------------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------------------------------------------

def test_vmap_dict_in_axes_and_tuple_out_axes(rng):
    p = {'a': rng.standard_normal((3, 2)).astype(np.float32), 'b': rng.standard_normal(2).astype(np.float32)}

    def f(p):
        return p['a'] + p['b'], jnp.sum(p['a'])

    out1, out2 = jax.vmap(f, in_axes=({'a': 0, 'b': None},), out_axes=(1, 0))(p)
    tu.assert_allclose(out1, (p['a'] + p['b']).T)
    tu.assert_allclose(out2, p['a'].sum(1), rtol=1e-6)


def test_vmap_axis_size_with_all_unmapped():
    out = jax.vmap(lambda x: x * 2, in_axes=None, axis_size=3)(np.float32(1.5))
    tu.assert_allclose(out, np.full(3, 3.0, np.float32))


def test_vmap_nested_matches_outer_product(rng):
    x = rng.standard_normal(3).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    out = jax.vmap(lambda a: jax.vmap(lambda b: a * b)(y))(x)
    tu.assert_allclose(out, np.outer(x, y))


def test_vmap_of_grad_gives_per_example_gradients(rng):
    w = rng.standard_normal(3).astype(np.float32)
    xs = rng.standard_normal((5, 3)).astype(np.float32)
    per_example = jax.vmap(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))), in_axes=(None, 0))(w, xs)
    expected = np.stack([x * (1 - np.tanh(x @ w) ** 2) for x in xs])
    tu.assert_allclose(per_example, expected, atol=1e-5, rtol=1e-5)
    tu.check_batching(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))), [w, xs], in_axes=(None, 0))


def test_vmap_inconsistent_sizes_error_lists_sizes():
    with pytest.raises(ValueError, match=r"(?s)inconsistent sizes.*2.*3"):
        jax.vmap(lambda a, b: a + b)(np.ones(2, np.float32), np.ones(3, np.float32))


def test_vmap_in_axes_out_of_range_error():
    with pytest.raises(ValueError, match=r"axis 2.*rank"):
        jax.vmap(lambda a: a, in_axes=2)(np.ones((2, 2), np.float32))


def test_vmap_of_jit_and_jit_of_vmap(rng):
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    tu.assert_allclose(jax.vmap(jax.jit(lambda x: jnp.sum(x ** 2)))(xs), (xs ** 2).sum(1), rtol=1e-6)
    tu.assert_allclose(jax.jit(jax.vmap(lambda x: jnp.sum(x ** 2)))(xs), (xs ** 2).sum(1), rtol=1e-6)


def test_jit_of_vmap_of_jit(rng):
    f = jax.jit(lambda x: jnp.sum(x ** 2))
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    tu.assert_allclose(jax.jit(jax.vmap(f))(xs), (xs ** 2).sum(1), rtol=1e-6)


# --------------------------------------------------------------------------------------------------------------
# eval_shape
# --------------------------------------------------------------------------------------------------------------

def test_eval_shape_with_structs_and_pytrees():
    def f(p, x):
        return {'h': jnp.tanh(x @ p['w']), 'mean': jnp.mean(x)}

    p = {'w': jax.ShapeDtypeStruct((5, 7), np.float32)}
    out = jax.eval_shape(f, p, jax.ShapeDtypeStruct((3, 5), np.float32))
    assert out['h'].shape == (3, 7) and out['h'].dtype == np.float32
    assert out['mean'].shape == () and out['mean'].dtype == np.float32


def test_eval_shape_does_not_compute():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    out = jax.eval_shape(f, jax.ShapeDtypeStruct((1000, 1000), np.float32))
    assert out.shape == (1000, 1000) and len(calls) == 1


# --------------------------------------------------------------------------------------------------------------
# The test helpers catch errors (so the tests above can fail)
# --------------------------------------------------------------------------------------------------------------

def test_check_grads_detects_a_wrong_derivative():
    # float(x) reads the concrete primal value during JVP, so fluxion sees x * const (derivative x, not 2x).
    def sneaky_square(x):
        return x * float(x)

    with pytest.raises(AssertionError):
        tu.check_grads(sneaky_square, [np.float32(1.5)], order=1, modes=("fwd",))
    with pytest.raises(AssertionError):
        tu.check_grads(sneaky_square, [np.float32(1.5)], order=1, modes=("rev",))
    tu.check_grads(lambda x: x * x, [np.float32(1.5)], order=2)


def test_check_batching_detects_impure_function():
    calls = []

    def impure(x):
        calls.append(1)
        return x + len(calls)

    with pytest.raises(AssertionError):
        tu.check_batching(impure, [np.ones((3, 2), np.float32)], in_axes=0, check_empty=False)


def test_check_jit_detects_trace_time_side_effects():
    state = {"n": 0}

    def f(x):
        state["n"] += 1
        return x + state["n"]

    with pytest.raises(AssertionError):
        tu.check_jit(f, [np.float32(0.0)])


def test_rand_like_kinds_and_dtypes(rng):
    assert tu.rand_like(rng, (2, 3), np.uint8, "int").dtype == np.uint8
    assert (tu.rand_like(rng, (100,), np.float32, "positive") > 0).all()
    assert (tu.rand_like(rng, (100,), np.int32, "nonzero") != 0).all()
    assert np.abs(tu.rand_like(rng, (100,), np.float32, "unit")).max() < 1
    assert tu.rand_like(rng, (4,), np.complex64).dtype == np.complex64
    assert tu.rand_like(rng, (), np.bool_).dtype == np.bool_


# -- weak types of gradients: a gradient has its primal's weak type (JAX: grad(f)(1.0) is weakly typed) ----------

# name -> (m -> the gradients, [weak_type per leaf] as JAX 0.10 gives them; every leaf is float32)
_GRAD_WEAK_TYPES = {
    "python_float_input": (lambda m: m.grad(lambda x: x * 2.0)(1.0), [True]),
    "through_sin": (lambda m: m.grad(m.numpy.sin)(1.0), [True]),
    "strong_constant_in_body": (lambda m: m.grad(lambda x: x * m.numpy.float32(2.0))(1.0), [True]),
    "abs_at_zero": (lambda m: m.grad(m.numpy.abs)(0.0), [True]),
    "mixed_arguments": (lambda m: m.grad(lambda x, y: x * y, argnums=(0, 1))(1.0, m.numpy.float32(2)),
                        [True, False]),
    "strong_input": (lambda m: m.grad(lambda x: x * 2.0)(m.numpy.float32(1.0)), [False]),
    "value_and_grad": (lambda m: m.value_and_grad(lambda x: x * 2.0)(1.0), [True, True]),
    "under_jit": (lambda m: m.jit(m.grad(lambda x: x * 2.0))(1.0), [True]),
    "through_bfloat16": (lambda m: m.grad(lambda x: x.astype(m.numpy.bfloat16).astype(m.numpy.float32))(1.0),
                         [True]),
}


@pytest.mark.parametrize("name", list(_GRAD_WEAK_TYPES))
def test_gradients_take_the_weak_type_of_their_primals(name):
    call, want = _GRAD_WEAK_TYPES[name]
    leaves = jax.tree_util.tree_leaves(call(jax))
    assert [(np.dtype(x.dtype), bool(x.aval.weak_type)) for x in leaves] == [(np.dtype(np.float32), w) for w in want]
    real = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")  # binds real.numpy for the table's `m.numpy`
    theirs = real.tree_util.tree_leaves(call(real))
    assert [bool(x.weak_type) for x in theirs] == want
