"""`fluxion.image`: resize and scale_and_translate against real JAX, derivatives, jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
from fluxion import image
from fluxion._src import test_util as tu

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 7, 3)).astype(np.float32)
SHAPES = [(9, 4, 3), (2, 11, 3), (5, 7, 3), (3, 3, 3)]
METHODS = ["nearest", "linear", "bilinear", "cubic", "lanczos3", "lanczos5"]


@pytest.mark.parametrize("method", METHODS)
def test_resize_matches_jax(method):
    jax = pytest.importorskip("jax")
    for shape in SHAPES:
        for antialias in (True, False):
            got = image.resize(X, shape, method, antialias=antialias)
            want = jax.image.resize(X, shape, method, antialias=antialias)
            assert got.shape == want.shape and got.dtype == want.dtype
            tu.assert_allclose(got, np.asarray(want), atol=2e-5, rtol=2e-5)


def test_scale_and_translate_matches_jax():
    jax = pytest.importorskip("jax")
    args = ((8, 6, 3), (0, 1), np.array([1.5, 0.8], np.float32), np.array([0.3, -1.0], np.float32))
    for method in ("linear", "cubic", "lanczos3"):
        got = image.scale_and_translate(X, *args, method)
        want = jax.image.scale_and_translate(X, *args, method)
        tu.assert_allclose(got, np.asarray(want), atol=2e-5, rtol=2e-5)


def test_linear_resize_reproduces_a_ramp_and_keeps_constants():
    ramp = np.tile(np.arange(4, dtype=np.float32), (2, 1))
    up = np.asarray(image.resize(ramp, (2, 8), "linear"))
    assert np.all(np.diff(up[0]) >= 0) and np.allclose(up[0], up[1])
    for method in ("linear", "cubic", "lanczos3"):
        tu.assert_allclose(image.resize(np.ones((4, 6), np.float32), (7, 3), method), np.ones((7, 3), np.float32),
                           atol=1e-5)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3"])
def test_derivatives_jit_and_vmap(method):
    f = lambda x: image.resize(x, (7, 3), method)
    with tu.enable_x64():
        tu.check_grads(f, (RNG.standard_normal((4, 5)),), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    tu.check_jit(f, (X[..., 0],), atol=1e-6)
    tu.check_batching(f, (X.transpose(2, 0, 1),), atol=1e-5)


def test_dtypes_and_errors():
    assert image.resize(np.arange(12).reshape(3, 4), (5, 2), "linear").dtype == np.float32
    assert image.resize(np.arange(12).reshape(3, 4), (5, 2), "nearest").dtype == fluxion.numpy.int32
    assert image.ResizeMethod.from_string("bicubic") is image.ResizeMethod.CUBIC
    with pytest.raises(ValueError, match="length equal to the number of dimensions"):
        image.resize(X, (5,), "linear")
    with pytest.raises(ValueError, match='Unknown resize method "foo"'):
        image.resize(X, (5, 2, 3), "foo")
    with pytest.raises(NotImplementedError):
        image.resize(X, (5, 2, 3), "area")
