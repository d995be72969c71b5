"""The `fft` primitive (`lax.fft`) and `fluxion.numpy.fft`.

* every `jnp.fft` function against NumPy's pocketfft (values, shapes, dtypes; `n`/`s`/`axes`/`norm` variants, more
  than three axes), eagerly and under `jit`;
* `lax.fft`'s four transforms: derivatives to second order against finite differences (float64), `vmap` against a
  Python loop, abstract evaluation against eager results, and its errors;
* values, gradients and the printed jaxpr parameters against real JAX where it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion._src import test_util as tu

RNG = np.random.default_rng(0)


def _real(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _complex(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# name, args, kwargs. NumPy is the reference (it computes in the input's precision since NumPy 2).
CASES = [
    ("fft", lambda: (_complex((3, 8)),), {}),
    ("fft", lambda: (_real((8,)),), {"n": 5}),
    ("fft", lambda: (np.arange(6),), {"norm": "ortho"}),
    ("ifft", lambda: (_complex((4, 6)),), {"n": 9, "axis": 0}),
    ("ifft", lambda: (_complex((7,)),), {"norm": "forward"}),
    ("rfft", lambda: (_real((3, 8)),), {}),
    ("rfft", lambda: (_real((8,)),), {"n": 11, "norm": "ortho"}),
    ("irfft", lambda: (_complex((3, 5)),), {}),
    ("irfft", lambda: (_complex((5,)),), {"n": 9, "norm": "forward"}),
    ("hfft", lambda: (_complex((5,)),), {}),
    ("hfft", lambda: (_complex((2, 4)),), {"n": 7, "norm": "ortho"}),
    ("ihfft", lambda: (_real((8,)),), {}),
    ("ihfft", lambda: (_real((2, 7)),), {"norm": "forward"}),
    ("fftn", lambda: (_complex((3, 4, 5)),), {}),
    ("fftn", lambda: (_complex((2, 3, 4, 5)),), {}),  # four axes: two primitives
    ("fftn", lambda: (_real((3, 4)),), {"s": (6, 2), "axes": (1, 0)}),
    ("ifftn", lambda: (_complex((3, 4, 5)),), {"axes": (0, 2), "norm": "ortho"}),
    ("rfftn", lambda: (_real((3, 4, 6)),), {}),
    ("rfftn", lambda: (_real((2, 3, 4, 5)),), {}),
    ("rfftn", lambda: (_real((4, 6)),), {"s": (3, 8), "axes": (0, 1)}),
    ("irfftn", lambda: (_complex((3, 4, 4)),), {}),
    ("irfftn", lambda: (_complex((2, 3, 4, 5)),), {"norm": "ortho"}),
    ("irfftn", lambda: (_complex((4, 5)),), {"s": (4, 9), "axes": (0, 1)}),
    ("fft2", lambda: (_complex((2, 4, 6)),), {}),
    ("ifft2", lambda: (_complex((4, 6)),), {"s": (3, 8), "norm": "forward"}),
    ("rfft2", lambda: (_real((2, 4, 6)),), {"axes": (0, 2)}),
    ("irfft2", lambda: (_complex((4, 4)),), {}),
]


def _ids():
    return [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("name,make_args,kwargs", CASES, ids=_ids())
def test_jnp_fft_matches_numpy(name, make_args, kwargs):
    args = make_args()
    want = getattr(np.fft, name)(*args, **kwargs)
    f = lambda *a: getattr(jnp.fft, name)(*a, **kwargs)
    got = f(*args)
    expected_dtype = np.float32 if np.isrealobj(want) else np.complex64
    assert got.dtype == expected_dtype and got.shape == want.shape
    tu.assert_allclose(got, want.astype(expected_dtype), atol=2e-5, rtol=2e-5)
    tu.check_jit(f, args, atol=2e-5, rtol=2e-5)
    tu.check_eval_shape(f, args)


def test_frequencies_and_shifts_match_numpy():
    tu.assert_allclose(jnp.fft.fftfreq(5, 0.1), np.fft.fftfreq(5, 0.1).astype(np.float32))
    tu.assert_allclose(jnp.fft.fftfreq(8), np.fft.fftfreq(8).astype(np.float32))
    tu.assert_allclose(jnp.fft.rfftfreq(7, 2.0), np.fft.rfftfreq(7, 2.0).astype(np.float32))
    assert jnp.fft.fftfreq(4, dtype=jnp.float16).dtype == np.float16
    x = np.arange(12).reshape(3, 4)
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))


@pytest.mark.parametrize("call,error", [
    (lambda: jnp.fft.fft(jnp.ones(4), n=0), ValueError),
    (lambda: jnp.fft.fft(jnp.ones(4), norm="bad"), ValueError),
    (lambda: jnp.fft.fft(jnp.ones(4), axis=3), ValueError),
    (lambda: jnp.fft.fftn(jnp.ones((2, 3)), axes=(0, 0)), ValueError),
    (lambda: jnp.fft.fft(True), ValueError),
    (lambda: jnp.fft.fft2(jnp.ones(3)), ValueError),
    (lambda: jnp.fft.rfft(jnp.ones(4, jnp.complex64)), TypeError),
    (lambda: jnp.fft.fft([1.0, 2.0]), TypeError),
    (lambda: lax.fft(jnp.ones(8), "rfft", (4,)), ValueError),
    (lambda: lax.fft(jnp.ones(8, jnp.complex64), "irfft", (8,)), ValueError),
    (lambda: lax.fft(jnp.ones(8), "rfft", (2, 2, 2, 1)), ValueError),
    (lambda: lax.fft(jnp.ones(8), "dct", (8,)), ValueError),
    (lambda: lax.fft(jnp.ones(8, jnp.complex64), "rfft", (8,)), TypeError),
])
def test_errors(call, error):
    with pytest.raises(error):
        call()


# lax.fft records: fft_type, operand maker (float64 / complex128 for the derivative checks), fft_lengths.
LAX_CASES = [
    ("fft", lambda: _complex((2, 6), np.complex128), (6,)),
    ("ifft", lambda: _complex((3, 4), np.complex128), (3, 4)),
    ("rfft", lambda: _real((2, 6), np.float64), (6,)),
    ("rfft", lambda: _real((3, 5), np.float64), (3, 5)),
    ("irfft", lambda: _complex((2, 4), np.complex128), (6,)),
    ("irfft", lambda: _complex((3, 3), np.complex128), (3, 5)),
    ("fft", lambda: _complex((2, 2, 3), np.complex128), (2, 2, 3)),
]


@pytest.mark.parametrize("fft_type,make,lengths", LAX_CASES, ids=[f"{t}-{n}" for t, _, n in LAX_CASES])
def test_lax_fft_derivatives_to_second_order(fft_type, make, lengths):
    x = make()
    f = lambda v: lax.fft(v, fft_type, lengths)
    with tu.enable_x64():
        tu.check_grads(f, (x,), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("fft_type,make,lengths", LAX_CASES, ids=[f"{t}-{n}" for t, _, n in LAX_CASES])
def test_lax_fft_batching_matches_a_loop(fft_type, make, lengths):
    x = make().astype(np.complex64 if np.iscomplexobj(make()) else np.float32)
    batched = np.stack([x, x * 2, x - 1], axis=1)  # batch axis 1, in front of the transformed axes
    f = lambda v: lax.fft(v, fft_type, lengths)
    tu.check_batching(f, (batched,), in_axes=1, atol=1e-5, rtol=1e-5)


def test_jnp_fft_composes_with_grad_and_vmap():
    x = _real((4, 8), np.float64)
    loss = lambda v: jnp.sum(jnp.abs(jnp.fft.rfft(v, n=10, norm="ortho")) ** 2)
    with tu.enable_x64():
        tu.check_grads(loss, (x,), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    tu.check_batching(lambda v: jnp.fft.fftn(v, axes=(0, 1)), (_complex((3, 4, 5)),), in_axes=2, atol=1e-5,
                      rtol=1e-5)


# --------------------------------------------------------------------------------------------------------------
# Real JAX as the oracle
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,make_args,kwargs", CASES, ids=_ids())
def test_values_and_gradients_match_jax(name, make_args, kwargs):
    jax = pytest.importorskip("jax")
    args = make_args()
    got = getattr(jnp.fft, name)(*args, **kwargs)
    want = getattr(jax.numpy.fft, name)(*args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    tu.assert_allclose(got, np.asarray(want), atol=2e-5, rtol=2e-5)
    if np.issubdtype(args[0].dtype, np.floating) or np.iscomplexobj(args[0]):
        # A real scalar loss whose gradient goes through every output.
        w = RNG.standard_normal(want.shape).astype(np.float32)

        def loss(m):
            return lambda v: m.numpy.sum(m.numpy.real(getattr(m.numpy.fft, name)(v, **kwargs)) * w
                                         + m.numpy.imag(getattr(m.numpy.fft, name)(v, **kwargs)) * w ** 2)
        g = fluxion.grad(loss(fluxion))(args[0])
        g_jax = jax.grad(loss(jax))(args[0])
        tu.assert_allclose(g, np.asarray(g_jax), atol=1e-4, rtol=1e-4)


def test_jaxpr_parameters_print_as_jax():
    x = np.ones(8, np.float32)
    text = str(fluxion.make_jaxpr(lambda v: lax.fft(v, "rfft", (8,)))(x))
    assert "fft[fft_lengths=(8,) fft_type=2]" in text
    assert lax.FftType.IRFFT == 3 and lax.FftType(1) is lax.FftType.IFFT
