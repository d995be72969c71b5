"""Large eager calls of `jnp.mean/var/std` and the `jax.nn` activations run their `jit` program (`fuse_eager` in
`_src/staged_call.py`), which the compiler fuses into one kernel.

Oracle: the same call run inline (the threshold raised out of reach), op by op on NumPy: the fused result must have
the same dtype, weak type and shape, and the same values to rounding (a fused kernel may sum in another order or
evaluate a transcendental function with other code than NumPy). JAX checks the values of a few of them. Inputs cover
float16/bfloat16/float32, integer means, transposed and strided views, axes, keepdims, masks
and ddof.
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src import staged_call
from fluxion._src.core import Array

nn = jax.nn
N = staged_call.FUSE_EAGER_MIN_ELEMENTS + 4465  # above the threshold, and not a multiple of a vector width


def _vec(dtype=np.float32, seed=0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(N).astype(dtype))


def _mat(dtype=np.float32, seed=1, shape=(300, 233)):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def _transposed():
    return _mat(shape=(233, 300)).T  # a non-contiguous view


def _strided():
    return Array(np.asarray(_mat(shape=(300, 466)))[:, ::2])


def _weak():
    return Array(np.asarray(_vec()), True)


def _ints():
    return jnp.asarray(np.random.default_rng(2).integers(-50, 50, (300, 233)).astype(np.int32))


# (name, function, input maker)
CASES = [
    ("mean_all", lambda x: jnp.mean(x), _vec),
    ("mean_axis0", lambda x: jnp.mean(x, 0), _mat),
    ("mean_axis1_keepdims", lambda x: x.mean(axis=1, keepdims=True), _mat),
    ("mean_transposed", lambda x: jnp.mean(x, 0), _transposed),
    ("mean_strided", lambda x: jnp.mean(x, 1), _strided),
    ("mean_int", lambda x: jnp.mean(x, 0), _ints),
    ("mean_where", lambda x: jnp.mean(x, 0, where=x > 0), _mat),
    ("mean_float16", lambda x: jnp.mean(x, 0), lambda: _mat(np.float16)),
    ("mean_bfloat16", lambda x: jnp.mean(x, 1), lambda: _mat(ml_dtypes.bfloat16)),
    ("var_axis0", lambda x: jnp.var(x, 0), _mat),
    ("var_ddof_tuple_axes", lambda x: jnp.var(x, (0, 1), ddof=1), _mat),
    ("std_axis0", lambda x: x.std(0), _mat),
    ("std_axis_neg_keepdims", lambda x: jnp.std(x, -1, keepdims=True), _transposed),
    ("std_int", lambda x: jnp.std(x), _ints),
    ("std_float16", lambda x: jnp.std(x, 0), lambda: _mat(np.float16)),
    ("standardize_expression", lambda x: (x - x.mean(0)) / x.std(0), _mat),
    ("silu", nn.silu, _vec),
    ("gelu", nn.gelu, _vec),
    ("gelu_bfloat16", nn.gelu, lambda: _vec(ml_dtypes.bfloat16)),
    ("gelu_exact", lambda x: nn.gelu(x, approximate=False), _vec),
    ("softmax", nn.softmax, _mat),
    ("softmax_axis0_strided", lambda x: nn.softmax(x, axis=0), _strided),
    ("log_softmax", nn.log_softmax, _mat),
    ("logsumexp", lambda x: nn.logsumexp(x, axis=1), _mat),
    ("logsumexp_sign", lambda x: nn.logsumexp(x, axis=0, b=x, return_sign=True), _mat),
    ("logmeanexp", lambda x: nn.logmeanexp(x, axis=1), _mat),
    ("standardize", nn.standardize, _mat),
    ("hard_tanh", nn.hard_tanh, _vec),
    ("hard_sigmoid", nn.hard_sigmoid, _vec),
    ("hard_silu", nn.hard_silu, _vec),
    ("leaky_relu", lambda x: nn.leaky_relu(x, 0.2), _vec),
    ("squareplus", nn.squareplus, _vec),
    ("sparse_plus", nn.sparse_plus, _vec),
    ("sparse_sigmoid", nn.sparse_sigmoid, _vec),
    ("glu", nn.glu, lambda: _mat(shape=(300, 234))),
    ("glu_float16", nn.glu, lambda: _mat(np.float16, shape=(300, 234))),
]

# The activations fused since the compiler's expm1/log1p became vectorizable (fluxion name, JAX name, extra kwargs):
# each runs on every float dtype and on contiguous, transposed and strided inputs below.
SWITCHED = [
    ("softplus", "softplus", {}), ("log_sigmoid", "log_sigmoid", {}), ("soft_sign", "soft_sign", {}),
    ("mish", "mish", {}), ("elu", "elu", {}), ("elu", "elu", {"alpha": 0.3}), ("celu", "celu", {}),
    ("celu", "celu", {"alpha": 2.5}), ("selu", "selu", {}),
]
_FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
_LAYOUTS = {
    "vector": lambda dt: _vec(dt) * 4,  # scaled: both branches and the exp/log tails are exercised
    "transposed": lambda dt: (_mat(dt, shape=(233, 300)) * 4).T,
    "strided": lambda dt: Array(np.asarray(_mat(dt, shape=(300, 466)) * 4)[:, ::2]),
}


def _switched_id(rec):
    return rec[0] + "".join(f"_{k}{v}" for k, v in rec[2].items())




def _in_x64(dtype, fn):
    """`fn` run with 64-bit types enabled when `dtype` is float64 (so the inputs and results stay float64)."""
    if np.dtype(dtype) != np.float64:
        return fn

    def run(*args):
        with jax.enable_x64():
            return fn(*args)
    return run


CASES += [(_switched_id(rec) + f"_{np.dtype(dt).name}_{layout}",
           _in_x64(dt, (lambda f, kw: lambda x: f(x, **kw))(getattr(nn, rec[0]), rec[2])),
           _in_x64(dt, (lambda mk, dt: lambda: mk(dt))(_LAYOUTS[layout], dt)))
          for rec in SWITCHED for dt in _FLOATS for layout in _LAYOUTS]


def _inline(monkeypatch, fn, x):
    with monkeypatch.context() as m:
        m.setattr(staged_call, "FUSE_EAGER_MIN_ELEMENTS", 1 << 62)
        return fn(x)


def _record_fusions(monkeypatch) -> list:
    """The answers of `_fuse_eagerly` (True: the call ran its jit program)."""
    answers = []
    original = staged_call._fuse_eagerly

    def recording(args, kwargs):
        answers.append(original(args, kwargs))
        return answers[-1]

    monkeypatch.setattr(staged_call, "_fuse_eagerly", recording)
    return answers


def _tolerance(dtype):
    return 2e-2 if np.dtype(dtype).itemsize == 2 else 2e-5


def _check_same(fused, inline) -> None:
    fl, ft = jax.tree_util.tree_flatten(fused)
    il, it = jax.tree_util.tree_flatten(inline)
    assert ft == it
    for a, b in zip(fl, il):
        assert (a.dtype, a.weak_type, a.shape) == (b.dtype, b.weak_type, b.shape)
        tol = _tolerance(a.dtype)
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_fused_matches_inline(monkeypatch, name, fn, make):
    x = make()
    answers = _record_fusions(monkeypatch)
    fused = [fn(x) for _ in range(2)][-1]
    assert any(answers), "the call never took the fused path"
    inline = _inline(monkeypatch, fn, x)
    _check_same(fused, inline)


def test_small_and_traced_calls_stay_inline(monkeypatch):
    answers = _record_fusions(monkeypatch)
    jnp.std(jnp.ones((10, 10)), 0)
    jnp.std(jnp.ones((0, 100000)), 0)
    nn.hard_silu(_weak())  # weakly typed: inline (see `_fuse_eagerly`)
    g = jax.grad(lambda x: jnp.sum(jnp.std(x, 0)))(_mat())
    jax.vmap(lambda x: jnp.std(x))(_mat())
    jax.jit(lambda x: jnp.std(x, 0))(_mat())
    assert not any(answers)
    want = _inline(monkeypatch, jax.grad(lambda x: jnp.sum(jnp.std(x, 0))), _mat())
    np.testing.assert_array_equal(np.asarray(g), np.asarray(want))


def test_nan_checks_keep_the_inline_path(monkeypatch):
    answers = _record_fusions(monkeypatch)
    x = jnp.asarray(np.full((300, 233), np.nan, np.float32))
    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            jnp.std(x, 0)
    assert not any(answers)


@pytest.mark.parametrize("name", ["mean_axis0", "std_axis0", "gelu", "softmax", "log_softmax", "logsumexp"])
def test_fused_matches_jax(name):
    real = pytest.importorskip("jax")
    real_jnp = pytest.importorskip("jax.numpy")
    fn, make = {c[0]: (c[1], c[2]) for c in CASES}[name]
    x = make()
    theirs = {"mean_axis0": lambda v: real_jnp.mean(v, 0), "std_axis0": lambda v: real_jnp.std(v, 0),
              "gelu": real.nn.gelu, "softmax": real.nn.softmax, "log_softmax": real.nn.log_softmax,
              "logsumexp": lambda v: real.nn.logsumexp(v, axis=1)}[name](np.asarray(x))
    np.testing.assert_allclose(np.asarray(fn(x)), np.asarray(theirs), rtol=2e-5, atol=2e-6)


def test_threads_share_the_fused_programs():
    xs = [_mat(seed=s) for s in range(4)]
    want = [np.std(np.asarray(x, np.float64), 0) for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(10):
                np.testing.assert_allclose(np.asarray(jnp.std(xs[i], 0)), want[i], rtol=2e-5)
        except Exception as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _jax_tolerance(dtype):
    return {2: 1e-2, 4: 3e-6, 8: 1e-12}[np.dtype(dtype).itemsize]


@pytest.mark.parametrize("dtype", _FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("size", [7, N], ids=["small", "large"])
@pytest.mark.parametrize("rec", SWITCHED, ids=_switched_id)
def test_switched_activations_match_jax(rec, size, dtype):
    """The switched activations against JAX: small (inline) and large (fused) calls, every float dtype, special
    values included (signed zeros, infinities, NaN, the largest and smallest normal numbers)."""
    real = pytest.importorskip("jax")
    name, their_name, kw = rec
    finfo = ml_dtypes.finfo(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, float(finfo.max), -float(finfo.max),
                        float(finfo.tiny), -float(finfo.tiny), 30.0, -30.0, 1e-3, -1e-3], np.float64)
    x = np.random.default_rng(3).standard_normal(size) * 6
    x[:len(special)] = special[:size]
    x = x.astype(dtype)
    with real.default_device(real.devices("cpu")[0]):
        real.config.update("jax_enable_x64", True)
        try:
            theirs = np.asarray(getattr(real.nn, their_name)(real.numpy.asarray(x), **kw))
        finally:
            real.config.update("jax_enable_x64", False)
    ours = _in_x64(dtype, lambda: getattr(nn, name)(jnp.asarray(x), **kw))()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    tol = _jax_tolerance(dtype)
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("rec", SWITCHED, ids=_switched_id)
def test_switched_activations_eager_matches_jit(rec):
    """The fused eager call and the same function under `jit` give the same values (both run the compiled program
    once it is in place; before that, both the NumPy path)."""
    name, _, kw = rec
    fn = getattr(nn, name)
    x = _vec(np.float32) * 4
    eager = np.asarray(fn(x, **kw))
    jitted = np.asarray(jax.jit(lambda v: fn(v, **kw))(x))
    np.testing.assert_allclose(eager, jitted, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("rec", SWITCHED, ids=_switched_id)
def test_switched_activations_broadcast_parameters(rec):
    """`alpha` given as an array broadcasts against `x` on both paths."""
    name, _, kw = rec
    if "alpha" not in kw:
        pytest.skip("no array parameter")
    fn = getattr(nn, name)
    x = _mat()
    alpha = jnp.asarray(np.linspace(0.5, 2.0, x.shape[1]).astype(np.float32))
    fused = fn(x, alpha)
    want = fn(np.asarray(x, np.float64), np.asarray(alpha, np.float64))
    np.testing.assert_allclose(np.asarray(fused, np.float64), np.asarray(want), rtol=2e-5, atol=2e-6)
