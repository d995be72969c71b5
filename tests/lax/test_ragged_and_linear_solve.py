"""`lax.ragged_dot`, `lax.ragged_dot_general` and `lax.custom_linear_solve` (with `linear_solve_p`) against real
JAX: values, jit against eager, vmap against a loop, and derivatives against finite differences to second order.
For `custom_linear_solve` the derivative rules are the point: reverse mode must call `transpose_solve` (an
iterative solver in a `while_loop`, which cannot be transposed), and forward-over-reverse must go through the
transposed matvec."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion._src import test_util as tu

jax = pytest.importorskip("jax")
jlax = jax.lax


# --- ragged dot products -----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Ragged:
    name: str
    lhs: tuple
    rhs: tuple
    group_sizes: tuple
    dims: tuple | None = None  # (dot_dimension_numbers, lhs_ragged, rhs_group); None: lax.ragged_dot
    jax_grads: tuple = (0, 1)  # operands JAX 0.10.2 differentiates in (none outside the non-contracting mode)


RAGGED = [
    Ragged("ragged_dot", (7, 3), (3, 3, 4), (2, 0, 3)),
    Ragged("ragged_dot_full", (5, 2), (2, 2, 3), (2, 3)),
    Ragged("noncontracting_batched", (2, 6, 3), (3, 2, 3, 4), (1, 2, 2), ((([2], [2]), ([0], [1])), [1], [0])),
    Ragged("noncontracting_group_last", (6, 3), (3, 4, 2), (3, 1), ((([1], [0]), ([], [])), [0], [2])),
    Ragged("contracting", (4, 6), (6, 5), (1, 3, 2), ((([1], [0]), ([], [])), [1], []), jax_grads=()),
    Ragged("contracting_batched", (2, 3, 5), (2, 5, 4), (2, 2), ((([2], [1]), ([0], [0])), [2], []),
           jax_grads=()),
    Ragged("batch", (5, 2, 3), (5, 3, 4), (1, 2), ((([2], [1]), ([0], [0])), [0], []), jax_grads=()),
]


def _ragged_call(L, rec):
    if rec.dims is None:
        return lambda a, b: L.ragged_dot(a, b, np.array(rec.group_sizes, np.int32))
    dn = L.RaggedDotDimensionNumbers(*rec.dims)
    return lambda a, b: L.ragged_dot_general(a, b, np.array(rec.group_sizes, np.int32), dn)


def _ragged_args(rec, seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(rec.lhs).astype(np.float32), r.standard_normal(rec.rhs).astype(np.float32)]


@pytest.mark.parametrize("rec", RAGGED, ids=[r.name for r in RAGGED])
def test_ragged_values_jit_and_vmap(rec):
    args = _ragged_args(rec)
    ours, theirs = _ragged_call(lax, rec)(*args), _ragged_call(jlax, rec)(*args)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)
    f = _ragged_call(lax, rec)
    tu.check_jit(f, args)
    tu.check_batching(f, [np.stack([a, 2 * a]) for a in args])
    tu.check_batching(f, [np.stack([args[0], -args[0]]), args[1]], in_axes=[0, None])


@pytest.mark.parametrize("rec", RAGGED, ids=[r.name for r in RAGGED])
def test_ragged_derivatives(rec):
    args = [a.astype(np.float64) for a in _ragged_args(rec, 1)]
    with tu.enable_x64():
        tu.check_grads(_ragged_call(lax, rec), args, order=2)
    if not rec.jax_grads:  # finite differences above are the only reference
        return
    args32 = _ragged_args(rec, 2)
    g = fluxion.grad(lambda a, b: jnp.sum(jnp.sin(_ragged_call(lax, rec)(a, b))), argnums=rec.jax_grads)(*args32)
    jg = jax.grad(lambda a, b: jax.numpy.sum(jax.numpy.sin(_ragged_call(jlax, rec)(a, b))),
                  argnums=rec.jax_grads)(*args32)
    for x, y in zip(g, jg):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)


def test_ragged_traced_group_sizes_and_integer_outputs():
    lhs, rhs = _ragged_args(RAGGED[0])
    f = fluxion.jit(lambda gs: lax.ragged_dot(lhs, rhs, gs))
    for gs in ([2, 0, 3], [7, 0, 0], [0, 0, 1]):
        gs = np.array(gs, np.int32)
        np.testing.assert_allclose(np.asarray(f(gs)), np.asarray(jlax.ragged_dot(lhs, rhs, gs)), rtol=1e-5,
                                   atol=1e-6)
    li, ri, gs = np.arange(6, dtype=np.int8).reshape(3, 2), np.ones((2, 2, 2), np.int8), np.array([1, 2], np.int32)
    out = lax.ragged_dot(li, ri, gs, preferred_element_type=np.int32)
    want = jlax.ragged_dot(li, ri, gs, preferred_element_type=np.int32)
    assert out.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))


def test_ragged_errors():
    lhs, rhs = _ragged_args(RAGGED[0])
    with pytest.raises(TypeError, match="lhs \\[m, k\\]"):
        lax.ragged_dot(lhs[0], rhs, np.array([1, 1, 1], np.int32))
    with pytest.raises(TypeError, match="integers"):
        lax.ragged_dot(lhs, rhs, np.array([1.0, 1.0, 1.0], np.float32))
    with pytest.raises(TypeError, match="groups"):
        lax.ragged_dot(lhs, rhs, np.array([1, 1], np.int32))
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot(lhs, rhs, np.array([1, 1, 1], np.int32), group_offset=np.array([0], np.int32))
    dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [0])
    with pytest.raises(TypeError, match="group dimensions"):
        lax.ragged_dot_general(np.ones((4, 6), np.float32), np.ones((6, 5), np.float32), np.array([6], np.int32), dn)
    assert hash(dn) == hash(lax.RaggedDotDimensionNumbers([[[1], [0]], [[], []]], (1,), (0,)))


# --- custom_linear_solve -----------------------------------------------------------------------------------------

def _matrix(seed=0, n=4, symmetric=False):
    r = np.random.default_rng(seed)
    q = r.standard_normal((n, n))
    a = q @ q.T + n * np.eye(n) if symmetric else q + n * np.eye(n)
    return a


def _cg(matvec, b, iters=30):
    """Plain conjugate gradients in a while_loop: solvable, not transposable (reverse mode must not reach it)."""
    def body(state):
        x, r, p, k = state
        ap = matvec(p)
        rr = jnp.vdot(r, r)
        alpha = rr / jnp.vdot(p, ap)
        x, r_new = x + alpha * p, r - alpha * ap
        return x, r_new, r_new + (jnp.vdot(r_new, r_new) / rr) * p, k + 1

    def cond(state):
        return (state[3] < iters) & (jnp.vdot(state[1], state[1]) > 1e-28)

    return lax.while_loop(cond, body, (jnp.zeros_like(b), b, b, 0))[0]


def _direct(L, N):
    def solve(a, b):
        return L.custom_linear_solve(lambda x: a @ x, b, lambda f, y: N.linalg.solve(a, y),
                                     lambda f, y: N.linalg.solve(a.T, y))
    return solve


def test_custom_linear_solve_matches_jax():
    a, b = _matrix().astype(np.float32), np.arange(1.0, 5.0, dtype=np.float32)
    ours, theirs = _direct(lax, jnp)(a, b), _direct(jlax, jax.numpy)(a, b)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ours), np.linalg.solve(a, b), rtol=1e-5)
    loss = lambda s, N: lambda a, b: N.sum(N.sin(s(a, b)))  # noqa: E731
    g = fluxion.grad(loss(_direct(lax, jnp), jnp), argnums=(0, 1))(a, b)
    jg = jax.grad(loss(_direct(jlax, jax.numpy), jax.numpy), argnums=(0, 1))(a, b)
    for x, y in zip(g, jg):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-6)
    tu.check_jit(_direct(lax, jnp), [a, b])
    jaxpr = str(fluxion.make_jaxpr(_direct(lax, jnp))(a, b))
    assert "custom_linear_solve" in jaxpr
    assert lax.linear_solve_p.name == jlax.linear_solve_p.name


@pytest.mark.parametrize("symmetric", [False, True])
def test_custom_linear_solve_derivatives_through_an_iterative_solver(symmetric):
    a0 = _matrix(1, symmetric=True)
    b0 = np.linspace(-1.0, 2.0, 4)

    def solve(a, b):
        a = (a + a.T) / 2  # keep A symmetric positive definite under the finite-difference perturbations
        if symmetric:
            return lax.custom_linear_solve(lambda x: a @ x, b, _cg, symmetric=True)
        return lax.custom_linear_solve(lambda x: a @ x, b, _cg, transpose_solve=_cg)

    with tu.enable_x64():
        np.testing.assert_allclose(np.asarray(solve(a0, b0)), np.linalg.solve(a0, b0), rtol=1e-10)
        tu.check_grads(solve, [a0, b0], order=2, atol=1e-5, rtol=1e-5)
        tu.check_grads(fluxion.jit(solve), [a0, b0], order=1, atol=1e-5, rtol=1e-5)


def test_custom_linear_solve_nonsymmetric_transpose_is_used():
    """For a non-symmetric A, reverse mode must solve with A^T: the cotangent of b is A^-T ct."""
    a, b = _matrix(2), np.ones(4)
    with tu.enable_x64():
        ct = np.arange(4.0)
        _, vjp = fluxion.vjp(lambda b: _direct(lax, jnp)(a, b), b)
        np.testing.assert_allclose(np.asarray(vjp(ct)[0]), np.linalg.solve(a.T, ct), rtol=1e-10)
        tu.check_grads(_direct(lax, jnp), [a, b], order=2)


def test_custom_linear_solve_vmap():
    a = np.stack([_matrix(3), _matrix(4)]).astype(np.float32)
    b = np.stack([np.ones(4), np.arange(4.0)]).astype(np.float32)
    f = _direct(lax, jnp)
    tu.check_batching(f, [a, b], atol=1e-5, rtol=1e-5)
    tu.check_batching(f, [a[0], b], in_axes=[None, 0], atol=1e-5, rtol=1e-5)
    tu.check_batching(f, [a, b[0]], in_axes=[0, None], atol=1e-5, rtol=1e-5)
    iterative = lambda a, b: lax.custom_linear_solve(lambda x: a @ x, b, _cg, symmetric=True)  # noqa: E731
    spd = np.stack([_matrix(5, symmetric=True), _matrix(6, symmetric=True)]).astype(np.float32)
    tu.check_batching(iterative, [spd, b], atol=1e-4, rtol=1e-4)
    g = fluxion.vmap(fluxion.grad(lambda a, b: jnp.sum(iterative(a, b))))(spd, b)
    for k in range(2):
        want = fluxion.grad(lambda a: jnp.sum(jnp.linalg.solve(a, b[k])))(spd[k])
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(want), rtol=1e-3, atol=1e-5)


def test_custom_linear_solve_pytree_and_errors():
    b = {"u": np.float32([1.0, 2.0]), "v": np.float32([3.0])}
    scale = {"u": np.float32([2.0, 4.0]), "v": np.float32([5.0])}
    matvec = lambda x: fluxion.tree_util.tree_map(lambda s, y: s * y, scale, x)  # noqa: E731
    div = lambda f, y: fluxion.tree_util.tree_map(lambda s, v: v / s, scale, y)  # noqa: E731
    x = lax.custom_linear_solve(matvec, b, div, symmetric=True)
    np.testing.assert_allclose(np.asarray(x["u"]), [0.5, 0.5])
    np.testing.assert_allclose(np.asarray(x["v"]), [0.6])
    a, rhs = _matrix(7).astype(np.float32), np.ones(4, np.float32)
    only_solve = lambda a, b: lax.custom_linear_solve(lambda x: a @ x, b,  # noqa: E731
                                                      lambda f, y: jnp.linalg.solve(a, y))
    fluxion.jvp(lambda b: only_solve(a, b), (rhs,), (rhs,))  # forward mode needs no transpose_solve
    with pytest.raises(TypeError, match="transpose_solve"):
        fluxion.grad(lambda b: jnp.sum(only_solve(a, b)))(rhs)
    with pytest.raises(TypeError, match="structure"):
        lax.custom_linear_solve(lambda x: (x, x), rhs, lambda f, y: y)
    with pytest.raises(TypeError, match="shapes and dtypes"):
        lax.custom_linear_solve(lambda x: x[:2], rhs, lambda f, y: y)
    with pytest.raises(NotImplementedError, match="has_aux"):
        lax.custom_linear_solve(lambda x: x, rhs, lambda f, y: (y, 0), has_aux=True)


# --- polygamma_p (the order is an operand, as in JAX) ------------------------------------------------------------

def test_polygamma_primitive_matches_jax():
    m = np.float32([0, 1, 2, 3, 1.5, -1])
    x = np.float32([1.5, 2.0, 3.0, 0.7, 2.0, 2.0])
    ours, theirs = lax.polygamma(m, x), jlax.polygamma(m, x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-5, equal_nan=True)
    assert lax.polygamma_p.name == jlax.polygamma_p.name
    assert "polygamma" in str(fluxion.make_jaxpr(lax.polygamma)(m, x))
    valid_m, valid_x = m[:4], x[:4]
    tu.check_jit(lax.polygamma, [valid_m, valid_x])
    tu.check_batching(lax.polygamma, [np.stack([valid_m, valid_m[::-1]]), np.stack([valid_x, valid_x + 1])])
    tu.check_batching(lax.polygamma, [np.float32(1), np.stack([valid_x, valid_x + 1])], in_axes=[None, 0])
    with tu.enable_x64():
        tu.check_grads(lambda v: lax.polygamma(valid_m.astype(np.float64), v), [valid_x.astype(np.float64) + 1],
                       order=2, atol=1e-5, rtol=1e-5)
    g = fluxion.grad(lambda v: jnp.sum(lax.polygamma(valid_m, v)))(valid_x)
    jg = jax.grad(lambda v: jax.numpy.sum(jlax.polygamma(valid_m, v)))(valid_x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4)
    np.testing.assert_allclose(float(fluxion.grad(lax.digamma)(np.float32(1.5))),
                               float(jax.grad(jlax.digamma)(np.float32(1.5))), rtol=1e-6)
    with pytest.raises(ValueError, match="with respect to m"):
        fluxion.grad(lambda k: lax.polygamma(k, np.float32(2)))(np.float32(1))
    with pytest.raises(TypeError):
        lax.polygamma(np.int32(1), np.int32(2))


# --- rng_bit_generator (JAX's CPU stream, bit for bit) -----------------------------------------------------------

RNG_CASES = [((4,), np.uint32), ((2, 3), np.uint32), ((), np.uint32), ((5,), np.uint8), ((3, 3), np.uint16),
             ((7,), np.uint64), ((2, 5), np.uint64), ((0,), np.uint32), ((9,), np.uint32), ((3, 5, 2), np.uint32),
             ((3, 1, 5), np.uint32)]


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("shape,dtype", RNG_CASES, ids=[f"{s}-{np.dtype(d).name}" for s, d in RNG_CASES])
def test_rng_bit_generator_bits_match_jax(shape, dtype, x64):
    keys = np.random.default_rng(sum(shape) + len(shape)).integers(0, 2**32, (4, 4), dtype=np.uint64)
    keys = np.concatenate([keys.astype(np.uint32), [[5, 6, 0xFFFFFFFF, 0xFFFFFFFF]]]).astype(np.uint32)
    import warnings
    with warnings.catch_warnings(), (tu.enable_x64(jax.config) if x64 else contextlib_null()):
        warnings.simplefilter("ignore")  # JAX warns that uint64 is uint32 without 64-bit mode
        for key in keys:
            for algorithm in lax.RandomAlgorithm:
                ours = lax.rng_bit_generator(key, shape, dtype, algorithm)
                theirs = jlax.rng_bit_generator(key, shape, dtype, jlax.RandomAlgorithm(int(algorithm)))
                for a, b in zip(ours, theirs):
                    a, b = np.asarray(a), np.asarray(b)
                    assert (a.dtype, a.shape) == (b.dtype, b.shape)
                    np.testing.assert_array_equal(a, b)
        for algorithm in lax.RandomAlgorithm:
            f = lambda k, a=algorithm: lax.rng_bit_generator(k, shape, dtype, a)  # noqa: E731
            tu.check_jit(f, [keys[0]])
            tu.check_batching(f, [keys])  # every key its own stream (JAX's vmap uses the first key for all)


def contextlib_null():
    import contextlib
    return contextlib.nullcontext()


def test_rng_bit_generator_chains_and_errors():
    key = np.array([1, 2, 3, 4], np.uint32)
    k1, a = lax.rng_bit_generator(key, (6,))
    _, b = lax.rng_bit_generator(k1, (6,))
    jk1, ja = jlax.rng_bit_generator(key, (6,))
    np.testing.assert_array_equal(np.asarray(b), np.asarray(jlax.rng_bit_generator(jk1, (6,))[1]))
    assert not np.array_equal(np.asarray(a), np.asarray(b))
    assert "rng_bit_generator" in str(fluxion.make_jaxpr(lambda k: lax.rng_bit_generator(k, (2,)))(key))
    assert lax.rng_bit_generator_p.name == jlax.rng_bit_generator_p.name
    with pytest.raises(TypeError, match="uint32 of shape"):
        lax.rng_bit_generator(key[:2], (3,))
    with pytest.raises(TypeError, match="uint32 of shape"):
        lax.rng_bit_generator(key.astype(np.int32), (3,))
    with pytest.raises(TypeError, match="dtype"):
        lax.rng_bit_generator(key, (3,), np.float32)
