"""The Numba convolution and windowed-reduction kernels of the compiler (`convkernels`, used by the `conv` and
`windowed` lowerings): differential tests against the backend's NumPy implementations and JAX, every path (forward
and swapped weight-gradient forms, both im2col kernels, the NumPy fallback while kernels compile, pads absorbed by
window reductions), and jitted programs against eager execution and JAX."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import conv, convkernels, windowed
from fluxion._src.backends.compiler.fusion import runtime
from fluxion._src.backends.eager import convolution as eager_conv
from fluxion._src.backends.eager import windowed as eager_windowed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of, reference  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not compiler.enabled(), reason="jit compiler disabled (FLUXION_JIT_COMPILER=0)"),
    pytest.mark.skipif(not runtime.numba_installed(), reason="Numba is not installed"),
]

# Channels-last (N, *spatial, C) lhs, (*K, I, O) rhs and (N, *spatial, O) output, per number of spatial dimensions.
CHANNELS_LAST = {1: ((0, 2, 1), (2, 1, 0), (0, 2, 1)), 2: ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))}
# Channels-first lhs and output, (O, I, *K) rhs.
CHANNELS_FIRST = {1: ((0, 1, 2), (0, 1, 2), (0, 1, 2)), 2: ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))}


@pytest.fixture(scope="module", autouse=True)
def kernels_loaded():
    for k in convkernels.ALL:
        assert k.get(block=True) is not None, k.name


def _switch_off(monkeypatch):
    """Makes every kernel report 'not ready', so callers take their NumPy paths."""
    for k in convkernels.ALL:
        monkeypatch.setattr(k, "get", lambda block=False: None)


@pytest.fixture
def kernels_off(monkeypatch):
    _switch_off(monkeypatch)


def _random_conv(rng, nsp, dtype, channels_first):
    n, c, o = (int(v) for v in rng.integers(1, 5, 3))
    sp = tuple(int(v) for v in rng.integers(1, 9, nsp))
    ks = tuple(int(v) for v in rng.integers(1, 4, nsp))
    params = dict(window_strides=tuple(int(v) for v in rng.integers(1, 3, nsp)),
                  padding=tuple((int(lo), int(hi)) for lo, hi in rng.integers(-1, 3, (nsp, 2))),
                  lhs_dilation=tuple(int(v) for v in rng.integers(1, 3, nsp)),
                  rhs_dilation=tuple(int(v) for v in rng.integers(1, 3, nsp)))
    if channels_first:
        x = rng.standard_normal((n, c) + sp).astype(dtype)
        w = rng.standard_normal((o, c) + ks).astype(dtype)
        dn = CHANNELS_FIRST[nsp]
    else:
        x = rng.standard_normal((n,) + sp + (c,)).astype(dtype)
        w = rng.standard_normal(ks + (c, o)).astype(dtype)
        dn = CHANNELS_LAST[nsp]
    return x, w, dict(params, dimension_numbers=dn)


def _expected(x, w, params):
    return eager_conv.conv_general_dilated(x, w, **params)


def _tolerance(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("numpy_max_columns", [0, conv.NUMPY_MAX_COLUMNS, 10_000], ids=["kernels", "default", "numpy-forward"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_conv_matches_the_numpy_implementation(rng, monkeypatch, numpy_max_columns, dtype):
    monkeypatch.setattr(conv, "NUMPY_MAX_COLUMNS", numpy_max_columns)
    checked = swapped = 0
    for trial in range(120):
        nsp = 1 + trial % 2
        x, w, params = _random_conv(rng, nsp, dtype, channels_first=trial % 3 == 0)
        want = _expected(x, w, params)
        if want.size == 0:
            continue
        got = conv.conv(x, w, **params, out_shape=want.shape, general=None)
        assert got.dtype == want.dtype and got.flags.c_contiguous
        np.testing.assert_allclose(got, want, **_tolerance(dtype), err_msg=str(params))
        checked += 1
        k_taps = int(np.prod(w.shape[:nsp] if trial % 3 else w.shape[2:]))
        swapped += k_taps > int(np.prod(want.shape[1:1 + nsp] if trial % 3 else want.shape[2:]))
    assert checked > 80 and swapped > 5


def test_weight_gradient_form_on_sliced_and_transposed_views(rng):
    # The gradient of a channels-last convolution as JAX's transpose rule writes it, on non-contiguous operands.
    x = rng.standard_normal((6, 11, 10, 3)).astype(np.float32)[::2, :, ::-1]
    g = rng.standard_normal((3, 10, 5, 4)).astype(np.float32)[:, ::-1, ::-1]
    params = dict(window_strides=(1, 1), padding=((1, 0), (0, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 2),
                  dimension_numbers=((3, 0, 1, 2), (3, 0, 1, 2), (2, 3, 0, 1)))
    want = _expected(x, g, params)
    got = conv.conv(x, g, **params, out_shape=want.shape, general=None)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_fallback_while_kernels_compile_matches(rng, kernels_off):
    calls = []

    def general(a, b, params):
        calls.append(1)
        return _expected(a, b, params)

    for trial in range(60):
        x, w, params = _random_conv(rng, 1 + trial % 2, np.float32, channels_first=trial % 2 == 0)
        want = _expected(x, w, params)
        if want.size == 0:
            continue
        got = conv.conv(x, w, **params, out_shape=want.shape, general=lambda a, b: general(a, b, params))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert calls  # dilated convolutions go to the backend's implementation without the kernels


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((2, 0), (-1, 1))])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_jitted_values_and_gradients_match_jax(rng, padding, layout):
    jax = pytest.importorskip("jax")
    x = rng.standard_normal((3, 9, 8, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 5, 6)).astype(np.float32)
    if layout == "NCHW":
        x, w = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
    dn = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")

    lhs_dilation = (1, 1) if isinstance(padding, str) else (1, 2)  # string padding excludes lhs dilation

    def loss(lib, x, w):
        y = lib.lax.conv_general_dilated(x, w, (2, 1), padding, lhs_dilation=lhs_dilation, rhs_dilation=(2, 1),
                                         dimension_numbers=dn)
        return lib.numpy.sum(lib.numpy.tanh(y) ** 2)

    got = fluxion.jit(fluxion.value_and_grad(lambda x, w: loss(fluxion, x, w), argnums=(0, 1)))(x, w)
    want = jax.jit(jax.value_and_grad(lambda x, w: loss(jax, x, w), argnums=(0, 1)))(x, w)
    for g, v in zip(fluxion.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, "bfloat16", np.float16])
def test_compiled_cnn_gradients_match_the_interpreter(rng, dtype):
    # Forward, input-gradient and weight-gradient convolutions and the pooling transposes of a small CNN; half
    # precision is not taken by the kernels and must still match.
    dt = jnp.dtype(dtype)
    x = jnp.asarray(rng.standard_normal((4, 12, 12, 1)), dt)
    w1 = jnp.asarray(rng.standard_normal((3, 3, 1, 8)) * 0.3, dt)
    w2 = jnp.asarray(rng.standard_normal((3, 3, 8, 16)) * 0.1, dt)
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(w1, w2, x):
        h = jnp.maximum(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn), 0)
        h = lax.reduce_window(h, jnp.zeros((), dt), lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=dn)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "SAME")
        return jnp.sum(jnp.tanh(h) ** 2)

    fun = fluxion.value_and_grad(loss, argnums=(0, 1, 2))
    closed = closed_of(fun, w1, w2, x)
    exe = compiler.compile_closed(closed, optimize=True, fuse=False)
    got = list(exe(*[np.asarray(a) for a in (w1, w2, x)]))
    want = reference(closed, w1, w2, x)
    assert ("conv_patches" in exe.source) == (dt.itemsize > 2)
    tol = 2e-2 if dt.itemsize == 2 else 2e-5
    for g, v in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(v).dtype
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(v, np.float64), rtol=tol, atol=tol)


def test_gradients_match_finite_differences(rng):
    x = rng.standard_normal((2, 7, 6, 3))
    w = rng.standard_normal((2, 3, 3, 4))

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (1, 2)), rhs_dilation=(1, 2),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jnp.sin(y))

    with fluxion.enable_x64():
        gx, gw = fluxion.jit(fluxion.grad(loss, argnums=(0, 1)))(x, w)
        eps = 1e-6
        for arr, grad, idx in ((x, gx, (1, 3, 2, 0)), (w, gw, (1, 2, 0, 3)), (x, gx, (0, 0, 5, 2))):
            hi, lo = arr.copy(), arr.copy()
            hi[idx] += eps
            lo[idx] -= eps
            args_hi = (hi, w) if arr is x else (x, hi)
            args_lo = (lo, w) if arr is x else (x, lo)
            fd = (float(loss(*args_hi)) - float(loss(*args_lo))) / (2 * eps)
            np.testing.assert_allclose(float(np.asarray(grad)[idx]), fd, rtol=1e-6, atol=1e-8)


def test_flax_cnn_step_loss_matches_the_numpy_path(rng, monkeypatch):
    # The benchmark's CNN (smaller batch): the jitted loss and gradients with the kernels equal those of the
    # compiler's NumPy path and of eager execution.
    import fluxion.flax.linen as nn

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(8, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = nn.relu(nn.Conv(16, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            return nn.Dense(10)(x.reshape(x.shape[0], -1))

    model = CNN()
    x = jnp.asarray(rng.random((8, 28, 28, 1)), jnp.float32)
    y = jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 8)])
    params = model.init(fluxion.random.PRNGKey(0), x)

    def loss(p):
        return jnp.mean(-jnp.sum(y * fluxion.nn.log_softmax(model.apply(p, x)), axis=-1))

    _assert_kernels_match_eager_and_numpy(loss, params, monkeypatch)


def _assert_kernels_match_eager_and_numpy(loss, params, monkeypatch, has_aux=False):
    """The jitted value and gradients of `loss` with the kernels equal those of eager execution and of the
    compiler's NumPy path (every kernel switched off)."""
    vg = fluxion.value_and_grad(loss, has_aux=has_aux)
    with_kernels = fluxion.jit(vg)(params)
    eager = vg(params)
    fluxion.clear_caches()
    with monkeypatch.context() as m:
        _switch_off(m)
        numpy_path = fluxion.jit(vg)(params)
    fluxion.clear_caches()
    for other in (eager, numpy_path):
        for a, b in zip(fluxion.tree_util.tree_leaves(with_kernels), fluxion.tree_util.tree_leaves(other)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_flax_resnet_step_loss_matches_the_numpy_path(rng, monkeypatch):
    # The benchmark's ResNet-style blocks, smaller: an RGB stem (27 patch columns: the im2col kernel), 8-feature 3x3
    # convolutions (Winograd, forward and both gradients), BatchNorm in training mode (ReLU masks selected in fused
    # kernels feeding its column sums), a residual add and a global mean.
    import fluxion.flax.linen as nn

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.relu(nn.BatchNorm(use_running_average=False)(nn.Conv(8, (3, 3), use_bias=False)(x)))
            y = nn.BatchNorm(use_running_average=False)(nn.Conv(8, (3, 3), use_bias=False)(y))
            return nn.relu(x + y)

    class ResNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.BatchNorm(use_running_average=False)(nn.Conv(8, (3, 3), use_bias=False)(x)))
            return nn.Dense(10)(jnp.mean(Block()(x), axis=(1, 2)))

    model = ResNet()
    x = jnp.asarray(rng.standard_normal((4, 11, 9, 3)), jnp.float32)
    labels = rng.integers(0, 10, 4)
    y = jnp.asarray(np.eye(10, dtype=np.float32)[labels])
    variables = model.init(fluxion.random.PRNGKey(0), x)

    def loss(p):
        logits, updated = model.apply({"params": p, "batch_stats": variables["batch_stats"]}, x,
                                      mutable=["batch_stats"])
        return jnp.mean(-jnp.sum(y * fluxion.nn.log_softmax(logits), axis=-1)), updated

    _assert_kernels_match_eager_and_numpy(loss, variables["params"], monkeypatch, has_aux=True)


# --------------------------------------------------------------------------------------------------------------
# Windowed reductions
# --------------------------------------------------------------------------------------------------------------

_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum}
_EAGER = {"sum": eager_windowed.reduce_window_sum, "max": eager_windowed.reduce_window_max,
          "min": eager_windowed.reduce_window_min}


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("path", ["kernels", "numpy"])
def test_reduce_window_max_min_order_negative_zero_below_positive_zero(rng, kind, dtype, path, monkeypatch):
    """A -0/+0 tie gives +0 for max and -0 for min, as in XLA (and the eager path), on the kernels and the NumPy
    fallback, with explicit and absorbed padding."""
    if path == "numpy":
        _switch_off(monkeypatch)
    for trial in range(12):
        shape = (1, 5, 6, 3)
        x = rng.choice(np.array([0.0, -0.0, -1.0, 2.0, -0.0], dtype), size=shape)
        params = dict(window_dimensions=(1, 2, 3, 1), window_strides=(1, 1, 2, 1),
                      padding=((0, 0), (trial % 2, 1), (1, trial % 3), (0, 0)), window_dilation=(1, 1, 1 + trial % 2, 1))
        want = _EAGER[kind](x, base_dilation=(1,) * 4, **params)
        ident = eager_windowed.identity(kind, x.dtype)
        got = windowed.reduce_window(x, op=_UFUNCS[kind], identity=ident, out_shape=want.shape, **params)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16])
def test_reduce_window_kernel_matches_the_numpy_implementation(rng, kind, dtype):
    checked = 0
    for trial in range(60):
        nd = int(rng.integers(1, 6))
        shape = tuple(int(v) for v in rng.integers(1, 7, nd))
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        if trial % 5 == 0 and np.dtype(dtype).kind == "f":
            x.reshape(-1)[rng.integers(0, x.size)] = np.nan
        if trial % 4 == 1:
            x = np.swapaxes(x, 0, -1)  # a transposed view
        params = dict(window_dimensions=tuple(int(v) for v in rng.integers(1, 4, nd)),
                      window_strides=tuple(int(v) for v in rng.integers(1, 3, nd)),
                      padding=tuple((int(lo), int(hi)) for lo, hi in rng.integers(0, 2, (nd, 2))),
                      base_dilation=(1,) * nd, window_dilation=tuple(int(v) for v in rng.integers(1, 3, nd)))
        if trial % 2:  # a plain last (channel) axis: the padded-table kernel's form
            for key, plain in (("window_dimensions", 1), ("window_strides", 1), ("padding", (0, 0)),
                               ("window_dilation", 1)):
                params[key] = params[key][:-1] + (plain,)
        want = _EAGER[kind](x, **params)
        if want.size == 0:
            continue
        ident = eager_windowed.identity(kind, x.dtype)
        got = windowed.reduce_window(x, op=_UFUNCS[kind], identity=ident, out_shape=want.shape,
                                     **{k: v for k, v in params.items() if k != "base_dilation"})
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        if kind == "sum" and np.dtype(dtype).kind == "f":
            # float16 (the NumPy path) sums in another order than the eager pairwise sum: operands ~10, eps ~1e-2
            np.testing.assert_allclose(got, want, rtol=1e-2 if dtype == np.float16 else 1e-5,
                                       atol=0.1 if dtype == np.float16 else 1e-4)
        else:
            np.testing.assert_array_equal(got, want)
        checked += 1
    assert checked > 30


def test_reduce_window_kernel_sums_in_tap_order_like_the_numpy_lowering(rng, monkeypatch):
    x = rng.standard_normal((3, 9, 8, 5)).astype(np.float32)
    params = dict(op=np.add, identity=np.float32(0), window_dimensions=(1, 3, 2, 1), window_strides=(1, 2, 1, 1),
                  padding=((0, 0), (1, 1), (0, 1), (0, 0)), window_dilation=(1, 1, 2, 1), out_shape=(3, 5, 7, 5))
    with monkeypatch.context() as m:
        _switch_off(m)
        numpy_taps = windowed.reduce_window(x, **params)
    np.testing.assert_array_equal(windowed.reduce_window(x, **params), numpy_taps)


def _pad_then_window(value, kind, extra_reader):
    fn = {"sum": lax.add, "max": lax.max, "min": lax.min}[kind]
    init = {"sum": 0.0, "max": -np.inf, "min": np.inf}[kind]

    def f(x):
        p = lax.pad(x, jnp.float32(value), ((0, 0, 0), (1, 2, 1), (2, 0, 2), (0, 0, 0)))
        y = lax.reduce_window(p, init, fn, (1, 2, 3, 1), (1, 1, 2, 1), ((0, 0), (1, 0), (0, 2), (0, 0)))
        return (y, p * 2.0) if extra_reader else (y,)
    return f


@pytest.mark.parametrize("kind,value,extra_reader,absorbed", [
    ("sum", 0.0, False, True), ("max", -np.inf, False, True), ("min", np.inf, False, True),
    ("sum", 1.0, False, False), ("sum", 0.0, True, False)])
@pytest.mark.parametrize("loaded", [True, False], ids=["kernels", "numpy"])
def test_pad_read_by_window_reductions_is_absorbed(rng, monkeypatch, kind, value, extra_reader, absorbed, loaded):
    if not loaded:
        _switch_off(monkeypatch)
    x = rng.standard_normal((2, 5, 4, 3)).astype(np.float32)
    f = _pad_then_window(value, kind, extra_reader)
    closed = closed_of(f, x)
    exe = compiler.compile_closed(closed, optimize=True, fuse=False)
    assert ("absorbed=" in exe.source) == absorbed
    got = list(exe(x))
    for g, v in zip(got, reference(closed, x)):
        np.testing.assert_allclose(g, v, rtol=1e-6, atol=1e-6)


def test_average_pool_gradient_reads_the_unpadded_cotangent(rng):
    # JAX's transpose of a window sum is pad(interior) + a stride-1 window sum: the pad is never materialized.
    x = rng.standard_normal((3, 8, 6, 4)).astype(np.float32)

    def loss(x):
        y = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(jnp.sin(y))

    closed = closed_of(fluxion.grad(loss), x)
    exe = compiler.compile_closed(closed, optimize=True, fuse=False)
    assert "absorbed=" in exe.source
    np.testing.assert_allclose(exe(x)[0], reference(closed, x)[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fluxion.jit(fluxion.grad(loss))(x), fluxion.grad(loss)(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("tiles", [conv.WINOGRAD_TILES, 5], ids=["default-chunks", "short-last-chunks"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd_matches_the_numpy_implementation(rng, monkeypatch, dtype, tiles):
    monkeypatch.setattr(conv, "WINOGRAD_TILES", tiles)
    calls = []
    real = conv._winograd
    monkeypatch.setattr(conv, "_winograd", lambda *a: calls.append(1) or real(*a))
    checked = 0
    for trial in range(40):
        n, c, o = int(rng.integers(1, 6)), int(rng.integers(8, 20)), int(rng.integers(8, 20))
        h, w_ = (int(v) for v in rng.integers(1, 10, 2))
        pads = tuple((int(lo), int(hi)) for lo, hi in rng.integers(-1, 3, (2, 2)))
        channels_first = trial % 4 == 0
        x = rng.standard_normal((n, c, h, w_) if channels_first else (n, h, w_, c)).astype(dtype)
        w = rng.standard_normal((o, c, 3, 3) if channels_first else (3, 3, c, o)).astype(dtype)
        params = dict(window_strides=(1, 1), padding=pads, lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                      dimension_numbers=CHANNELS_FIRST[2] if channels_first else CHANNELS_LAST[2])
        want = _expected(x, w, params)
        if want.size == 0:
            continue
        got = conv.conv(x, w, **params, out_shape=want.shape, general=None)
        # Winograd's transforms round differently: compare on the scale of the output.
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=0, atol=(2e-6 if dtype == np.float32 else 1e-14) * scale * c,
                                   err_msg=str(params))
        checked += 1
    assert checked > 10 and len(calls) > 10  # tiny outputs (fewer positions than taps) take the swapped form


def test_winograd_error_is_that_of_the_patch_matrix(rng, monkeypatch):
    # Against a float64 result, float32 Winograd and the float32 patch matrix err by the same order.
    x = rng.standard_normal((4, 14, 14, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 32, 64)).astype(np.float32)
    params = dict(window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                  dimension_numbers=CHANNELS_LAST[2])
    exact = _expected(x.astype(np.float64), w.astype(np.float64), params)
    wino = conv.conv(x, w, **params, out_shape=exact.shape, general=None)
    monkeypatch.setattr(conv, "WINOGRAD_MIN_FEATURES", 10 ** 9)
    patches = conv.conv(x, w, **params, out_shape=exact.shape, general=None)
    err_w, err_p = np.abs(wino - exact).max(), np.abs(patches - exact).max()
    assert err_w < 4 * err_p + 1e-6, (err_w, err_p)


@pytest.mark.parametrize("tiles", [conv.WINOGRAD_TILES, 5], ids=["default-chunks", "short-last-chunks"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd_weight_gradient_matches_the_numpy_implementation(rng, monkeypatch, dtype, tiles):
    # The weight-gradient convolution as JAX's transpose rule writes it for a stride-1 3x3 NHWC convolution.
    monkeypatch.setattr(conv, "WINOGRAD_TILES", tiles)
    calls = []
    real = conv._winograd_weight_gradient
    monkeypatch.setattr(conv, "_winograd_weight_gradient", lambda *a: calls.append(1) or real(*a))
    checked = 0
    for _ in range(30):
        n, c, o = int(rng.integers(1, 6)), int(rng.integers(8, 20)), int(rng.integers(8, 20))
        h, w_ = (int(v) for v in rng.integers(3, 10, 2))
        (plo, phi), (qlo, qhi) = ((int(lo), int(hi)) for lo, hi in rng.integers(-1, 3, (2, 2)))
        oh, ow = h + plo + phi - 2, w_ + qlo + qhi - 2
        if oh * ow <= 9:  # not more output positions than taps: the forward form, not this one
            continue
        x = rng.standard_normal((n, h, w_, c)).astype(dtype)
        g = rng.standard_normal((n, oh, ow, o)).astype(dtype)
        params = dict(window_strides=(1, 1), padding=((plo, phi), (qlo, qhi)), lhs_dilation=(1, 1),
                      rhs_dilation=(1, 1), dimension_numbers=((3, 0, 1, 2), (3, 0, 1, 2), (2, 3, 0, 1)))
        want = _expected(x, g, params)
        assert want.shape == (3, 3, c, o)
        got = conv.conv(x, g, **params, out_shape=want.shape, general=None)
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=0, atol=(1e-6 if dtype == np.float32 else 1e-14) * scale * n * 4,
                                   err_msg=str(params))
        checked += 1
    assert checked > 10 and len(calls) == checked


def test_kernels_load_on_the_background_thread(monkeypatch):
    # Without `fluxion_jit_sync_kernels`, the first request submits the load and answers None (the caller runs its
    # NumPy path); once the background thread is done, the compiled kernel is returned.
    monkeypatch.setattr(runtime, "sync_kernels", lambda: False)
    k = convkernels.Kernel("reduce_window_again", convkernels.REDUCE_WINDOW)
    assert k.get() is None
    assert runtime.wait_for_kernels(timeout=600)
    fn = k.get()
    assert fn is not None
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    out = np.empty((1, 1, 3, 4), np.float32)
    fn(x, out, 0, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)  # a window sum over the second axis
    np.testing.assert_array_equal(out, x.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("groups", [dict(feature_group_count=2), dict(batch_group_count=2)])
def test_grouped_convolutions_take_the_general_implementation_under_jit(rng, groups):
    jax = pytest.importorskip("jax")
    x = rng.standard_normal((4, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2 if "feature_group_count" in groups else 4, 6)).astype(np.float32)

    def f(lib, x, w):
        return lib.lax.conv_general_dilated(x, w, (1, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            **groups)

    closed = closed_of(lambda x, w: f(fluxion, x, w), x, w)
    exe = compiler.compile_closed(closed, optimize=True, fuse=False)
    assert "conv_patches" not in exe.source
    got = fluxion.jit(lambda x, w: f(fluxion, x, w))(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(f(jax, x, w)), rtol=1e-5, atol=1e-5)
