"""Tests of `fluxion.nn`: activations against NumPy formulas (float64) and JAX, derivatives against finite
differences and JAX's conventions at kinks, one_hot under jit/vmap, and initializers bit-for-bit against JAX."""

from __future__ import annotations

import contextlib
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import nn, random
from fluxion.nn import initializers

X = np.concatenate([np.linspace(-7.5, 7.5, 31), [-1.0, 0.0, 1.0, 3.0, 6.0, -3.0]]).astype(np.float32)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    from scipy.special import erf
    return erf(x)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> float64 NumPy reference (written from the textbook definitions).
REFERENCE = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": _sigmoid,
    "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0),
    "log_sigmoid": lambda x: -(np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "silu": lambda x: x * _sigmoid(x),
    "swish": lambda x: x * _sigmoid(x),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "selu": lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip((x + 1) / 2, 0, 1),
    "identity": lambda x: x,
}

# Activations that are smooth at every point of X (finite differences are meaningful everywhere).
SMOOTH = ["sigmoid", "softplus", "log_sigmoid", "silu", "tanh", "gelu", "mish", "squareplus", "celu", "selu",
          "elu", "soft_sign"]


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_activation_values(name):
    got = getattr(nn, name)(X)
    assert got.dtype == np.float32 and got.shape == X.shape
    # gelu's 1 + tanh(z) cancels where tanh(z) nears -1, magnifying the absolute error of XLA's float32 tanh (which
    # fluxion computes bit for bit: JAX's gelu values are the same) to ~4e-7
    atol = 1e-6 if name == "gelu" else 2e-7
    np.testing.assert_allclose(got, REFERENCE[name](X.astype(np.float64)), rtol=2e-6, atol=atol)


def test_gelu_exact_and_integer_input():
    ref = 0.5 * X.astype(np.float64) * (1 + _erf(X.astype(np.float64) / np.sqrt(2)))
    np.testing.assert_allclose(nn.gelu(X, approximate=False), ref, rtol=2e-6, atol=2e-7)
    assert nn.gelu(jnp.arange(3)).dtype == np.float32


@pytest.mark.parametrize("name", SMOOTH)
def test_gradients_match_finite_differences(name):
    x = X[X != 0]  # selu has a kink at 0
    x64 = x.astype(np.float64)
    h = 1e-4
    numeric = (REFERENCE[name](x64 + h) - REFERENCE[name](x64 - h)) / (2 * h)
    grad = fluxion.vmap(fluxion.grad(getattr(nn, name)))(x)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


def test_derivatives_at_kinks():
    g = lambda f, x: float(fluxion.grad(f)(np.float32(x)))  # noqa: E731
    assert g(nn.relu, 0.0) == 0.0 and g(nn.relu, 2.0) == 1.0 and g(nn.relu, -2.0) == 0.0
    assert g(nn.relu6, 0.0) == 0.0 and g(nn.relu6, 6.0) == 0.0 and g(nn.relu6, 3.0) == 1.0
    assert g(nn.leaky_relu, 0.0) == 1.0 and g(nn.leaky_relu, -1.0) == pytest.approx(0.01)
    assert g(nn.hard_tanh, 0.5) == 1.0 and g(nn.hard_tanh, 2.0) == 0.0
    # Second derivative through relu's hand-written derivative.
    assert float(fluxion.grad(fluxion.grad(nn.relu))(np.float32(1.0))) == 0.0
    assert bool(np.isnan(nn.relu(np.float32(np.nan))))


def test_softmax_family():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    x64 = x.astype(np.float64)
    for axis in (-1, 0):
        e = np.exp(x64 - x64.max(axis, keepdims=True))
        ref = e / e.sum(axis, keepdims=True)
        np.testing.assert_allclose(nn.softmax(x, axis=axis), ref, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(nn.log_softmax(x, axis=axis), np.log(ref), rtol=1e-5, atol=1e-6)
        from scipy.special import logsumexp
        np.testing.assert_allclose(nn.logsumexp(x, axis=axis), logsumexp(x64, axis=axis), rtol=1e-6)
    # Stable for huge logits, exact zeros for masked entries.
    big = np.array([1000.0, 1001.0, 999.0], np.float32)
    assert np.all(np.isfinite(nn.softmax(big))) and np.all(np.isfinite(nn.log_softmax(big)))
    np.testing.assert_allclose(float(nn.logsumexp(big)), 1000 + np.log(np.exp(0) + np.exp(1) + np.exp(-1)),
                               rtol=1e-6)
    mask = np.array([True, False, True])
    sm = np.asarray(nn.softmax(big, where=mask))
    assert sm[1] == 0 and sm.sum() == pytest.approx(1.0)
    assert np.asarray(nn.log_softmax(big, where=mask))[1] == -np.inf
    np.testing.assert_allclose(nn.logsumexp(x, axis=1, b=2.0), np.log(2) + nn.logsumexp(x, axis=1), rtol=1e-6)
    val, sign = nn.logsumexp(x, b=-1.0, return_sign=True)
    assert float(sign) == -1.0
    np.testing.assert_allclose(val, nn.logsumexp(x), rtol=1e-6)
    assert nn.logsumexp(jnp.full((2,), -np.inf)) == -np.inf


def test_softmax_gradients():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4,)).astype(np.float64).astype(np.float32)
    w = np.arange(4.0, dtype=np.float32)
    s = np.exp(x - x.max())
    s /= s.sum()
    # d/dx sum(w * softmax(x)) = s * (w - sum(w s)).
    np.testing.assert_allclose(fluxion.grad(lambda z: jnp.sum(w * nn.softmax(z)))(x), s * (w - np.sum(w * s)),
                               rtol=1e-5, atol=1e-7)
    # d/dx sum(w * log_softmax(x)) = w - s * sum(w).
    np.testing.assert_allclose(fluxion.grad(lambda z: jnp.sum(w * nn.log_softmax(z)))(x), w - s * w.sum(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fluxion.grad(lambda z: nn.logsumexp(z))(x), s, rtol=1e-5)


def test_standardize_and_glu():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(nn.standardize(x), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(nn.glu(x), x64[:, :2] * _sigmoid(x64[:, 2:]), rtol=1e-6)
    np.testing.assert_allclose(nn.glu(x[:2], axis=0), x64[:1] * _sigmoid(x64[1:2]), rtol=1e-6)
    with pytest.raises(ValueError, match="even"):
        nn.glu(x[:, :3])


def test_one_hot():
    y = np.array([0, 2, 5, -1, 9])
    expected = np.zeros((5, 6), np.float32)
    for i, c in enumerate(y):
        if 0 <= c < 6:
            expected[i, c] = 1
    out = nn.one_hot(y, 6)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(nn.one_hot(y, 6, axis=0), expected.T)
    assert nn.one_hot(y, 3, dtype=jnp.int32).dtype == np.int32
    np.testing.assert_array_equal(fluxion.jit(lambda t: nn.one_hot(t, 6))(y), expected)
    np.testing.assert_array_equal(fluxion.vmap(lambda t: nn.one_hot(t, 6))(y), expected)
    np.testing.assert_array_equal(fluxion.jit(fluxion.vmap(lambda t: nn.one_hot(t, 6)))(y), expected)
    with pytest.raises(TypeError, match="num_classes"):
        nn.one_hot(y, 2.5)


def test_tutorial_one_hot_idiom():
    def one_hot(y, deep):
        return jnp.zeros(deep).at[y].set(1)

    batch_one_hot = fluxion.jit(lambda y: fluxion.vmap(one_hot, in_axes=[0, None])(y, 10))
    np.testing.assert_array_equal(batch_one_hot(jnp.array([1, 3])), np.eye(10, dtype=np.float32)[[1, 3]])


@pytest.mark.usefixtures("without_fusion_check")  # small programs are bit-identical to eager at default thresholds
def test_activations_under_jit_and_vmap():
    x = X.reshape(1, -1)
    for name in ("relu", "gelu", "softplus", "elu"):
        f = getattr(nn, name)
        if name == "gelu":  # jitted multiply-adds round once (as in JAX), eager ones twice
            np.testing.assert_allclose(fluxion.jit(f)(x), f(x), rtol=1e-6, atol=1e-6)  # (see test_activation_values)
        else:
            np.testing.assert_array_equal(fluxion.jit(f)(x), f(x))
        np.testing.assert_array_equal(fluxion.vmap(f)(x), f(x))
    np.testing.assert_allclose(fluxion.vmap(nn.softmax)(x), nn.softmax(x), rtol=1e-6)


# --------------------------------------------------------------------------------------------------------------
# Initializers
# --------------------------------------------------------------------------------------------------------------

def test_compute_fans_and_constant_initializers():
    from fluxion._src.nn.initializers import compute_fans
    assert compute_fans((3, 4)) == (3, 4)
    assert compute_fans((5, 5, 3, 8)) == (75, 200)  # 5x5 receptive field
    assert compute_fans((2, 3, 4), in_axis=0, out_axis=1, batch_axis=2) == (2, 3)
    with pytest.raises(ValueError, match="2D"):
        compute_fans((3,))
    key = random.PRNGKey(0)
    np.testing.assert_array_equal(initializers.zeros(key, (2, 3)), np.zeros((2, 3), np.float32))
    assert initializers.ones(key, (2,), jnp.bfloat16).dtype == jnp.bfloat16
    np.testing.assert_array_equal(initializers.constant(0.5)(key, (2,)), [0.5, 0.5])
    w = np.asarray(initializers.lecun_normal()(key, (300, 200)))
    assert abs(w.std() - np.sqrt(1 / 300)) < 0.05 * np.sqrt(1 / 300) and np.abs(w).max() < 2 / np.sqrt(300) / .87962566
    u = np.asarray(initializers.glorot_uniform()(key, (300, 200)))
    assert np.abs(u).max() <= np.sqrt(6 / 500)
    q = np.asarray(initializers.orthogonal()(key, (5, 3)))
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="mode"):
        initializers.variance_scaling(1.0, "fan_bad", "normal")(key, (2, 2))
    assert isinstance(initializers.he_normal(), initializers.Initializer)


@contextlib.contextmanager
def _both_layouts(partitionable: bool):
    jax = sys.modules["jax"]
    old_f, old_j = fluxion.config.jax_threefry_partitionable, jax.config.jax_threefry_partitionable
    fluxion.config.update("jax_threefry_partitionable", partitionable)
    jax.config.update("jax_threefry_partitionable", partitionable)
    try:
        yield
    finally:
        fluxion.config.update("jax_threefry_partitionable", old_f)
        jax.config.update("jax_threefry_partitionable", old_j)


INIT_CASES = [
    ("lecun_normal", (), (784, 128), "float32"), ("glorot_uniform", (), (3, 4), "float32"),
    ("glorot_normal", (), (5, 3, 2), "bfloat16"), ("he_normal", (), (3, 3, 4, 8), "float32"),
    ("he_uniform", (), (6, 4), "float16"), ("lecun_uniform", (), (3, 4), "bfloat16"),
    ("xavier_normal", (), (4, 6), "float32"), ("kaiming_uniform", (), (4, 6), "float32"),
    ("normal", (0.1,), (3, 4), "float32"), ("uniform", (0.5,), (3, 4), "bfloat16"),
    ("truncated_normal", (0.2,), (3, 4), "float32"),
    ("variance_scaling", (2.0, "fan_out", "uniform"), (4, 6, 3), "float32"),
    ("variance_scaling", (0.5, "fan_geo_avg", "normal"), (4, 6, 3), "float32"),
    ("variance_scaling", (1.0, "fan_avg", "truncated_normal", 0, 1, 2), (4, 6, 3), "float32"),
]


@pytest.mark.parametrize("partitionable", [True, False], ids=["partitionable", "original"])
def test_initializers_match_jax_bit_for_bit(partitionable):
    jax = pytest.importorskip("jax")
    with _both_layouts(partitionable):
        fk, jk = random.PRNGKey(3), jax.random.PRNGKey(3)
        # The two layouts share the scaling recipes, so each runs half of the cases (JAX compiles every one).
        for name, args, shape, dt in INIT_CASES[:2] + INIT_CASES[2 + int(partitionable)::2]:
            ours = np.asarray(getattr(initializers, name)(*args)(fk, shape, dt))
            theirs = np.asarray(getattr(jax.nn.initializers, name)(*args)(jk, shape, dt))
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
            np.testing.assert_array_equal(ours.astype(np.float32), theirs.astype(np.float32), err_msg=name)
        # QR differs in the last bits between LAPACK and NumPy: compare closely.
        for init in (lambda m: m.orthogonal(), lambda m: m.orthogonal(2.0, column_axis=0)):
            np.testing.assert_allclose(init(initializers)(fk, (2, 3, 4)), init(jax.nn.initializers)(jk, (2, 3, 4)),
                                       atol=1e-6)
        np.testing.assert_allclose(initializers.delta_orthogonal()(fk, (3, 3, 2, 4)),
                                   jax.nn.initializers.delta_orthogonal()(jk, (3, 3, 2, 4)), atol=1e-6)


def test_activations_match_jax():
    jax = pytest.importorskip("jax")
    names = sorted(REFERENCE)
    # One compiled JAX function for all activations (each separate call would compile on its own).
    theirs = jax.jit(lambda x: {n: (getattr(jax.nn, n)(x), jax.vmap(jax.grad(getattr(jax.nn, n)))(x))
                                for n in names})(X)
    for name in names:
        value, grad = theirs[name]
        # XLA's tanh/exp/log1p are polynomial approximations: agree to float32 rounding, not bit for bit.
        np.testing.assert_allclose(getattr(nn, name)(X), value, rtol=1e-6, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(fluxion.vmap(fluxion.grad(getattr(nn, name)))(X), grad, rtol=1e-5, atol=5e-6,
                                   err_msg=name)
    x = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    for name in ("softmax", "log_softmax", "logsumexp", "standardize"):
        np.testing.assert_allclose(getattr(nn, name)(x, axis=0), getattr(jax.nn, name)(x, axis=0), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    y = np.array([0, 2, 5, -1, 9])
    np.testing.assert_array_equal(nn.one_hot(y, 6, axis=0), jax.nn.one_hot(y, 6, axis=0))


# name -> call(nn module, x): activations whose intermediate results overflow to +-inf on huge finite inputs, which
# XLA computes silently; fluxion must not warn either, even under a user's "error" warning filter.
_HUGE_CASES = {
    "selu": lambda m, x: m.selu(x),
    "elu": lambda m, x: m.elu(x),
    "elu_huge_alpha": lambda m, x: m.elu(x, float(np.finfo(x.dtype).max)),
    "celu_tiny_alpha": lambda m, x: m.celu(x, 1e-3),
}


@pytest.mark.parametrize("name", sorted(_HUGE_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("size", [6, 1 << 17])  # op by op, and the large-operand (fused) eager path
def test_activations_on_huge_inputs_do_not_warn(name, dtype, size):
    import warnings
    jax = pytest.importorskip("jax")
    top = np.finfo(dtype).max
    x = np.resize(np.array([top, -top, top / 2, -1.0, 0.0, 1.0], dtype), size)
    call = _HUGE_CASES[name]
    want = np.asarray(call(jax.nn, x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (lambda a: call(nn, a), fluxion.jit(lambda a: call(nn, a))):
            got = np.asarray(f(jnp.asarray(x)))
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float16 else 1e-6)
        # Invalid operations give nan silently too, as in JAX (tests/core/test_float_warnings.py), while the
        # user's own NumPy code still reports them.
        assert np.isnan(np.asarray(jnp.asarray(np.array([np.inf], dtype)) * jnp.asarray(np.array([0.0], dtype))))
        with pytest.raises(RuntimeWarning, match="invalid"):
            np.array([np.inf], dtype) * np.array([0.0], dtype)


def test_library_programs_do_not_warn_about_recompiles():
    """Large eager activations run a library-internal `jit` program, one per shape: the user's many shapes must not
    trigger the retrace warning, which would name a function the user never jitted."""
    import warnings
    from fluxion._src.staged_call import FUSE_EAGER_MIN_ELEMENTS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(22):
            x = jnp.ones(FUSE_EAGER_MIN_ELEMENTS + k, jnp.float32)  # (a fluxion array: the fused eager path)
            np.testing.assert_array_equal(nn.elu(x), x)
    assert nn.elu.staged._compiles >= 22  # the library program did compile once per shape
    f = fluxion.jit(lambda x: x + 1)
    with pytest.warns(UserWarning, match="compiled 20 times"):  # a user's own jit still warns
        for k in range(20):
            f(np.ones(k + 1, np.float32))
