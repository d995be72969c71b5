"""The vectorizable float32 functions of fused kernels (`fusion.mathlib`): accuracy in ulp against the exact
function over the whole float32 range, special values, and that loops calling them vectorize.

The reference is the float64 function (NumPy/SciPy), exact to far below a float32 ulp. Errors are measured in ulps
of the float32-rounded reference (at least the smallest subnormal)."""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")
sp = pytest.importorskip("scipy.special")

from fluxion._src.backends.compiler.fusion import mathlib  # noqa: E402

# One record per function: (helper, float64 reference, largest error in ulp allowed).
FUNCTIONS = {
    "exp": (mathlib._expf, np.exp, 5.0),  # XLA's: 1 ulp, up to 4.6 above 88.376 (where n stops at 127)
    "log": (mathlib._logf, lambda x: np.log(np.where(np.abs(x) < 2.0 ** -126, 0.0, x)), 1.1),  # XLA's: DAZ
    "log1p": (mathlib._log1pf, np.log1p, 3.0),
    "expm1": (mathlib._expm1f, np.expm1, 5.0),  # through _expf above ln 2
    "tanh": (mathlib._tanhf, np.tanh, 4.0),  # XLA's own approximation: 3.85 ulp just above |x| = 0.0004
    "erf": (mathlib._erff, sp.erf, 6.0),
    "erfc": (mathlib._erfcf, sp.erfc, 12.0),
    # XLA's 1 / (1 + exp(-x)): 0 where exp(-x) overflows (x < -log(FLT_MAX); the exact value is subnormal there)
    "logistic": (mathlib._logisticf, lambda x: np.where(-x > np.log(np.finfo(np.float32).max), 0.0, sp.expit(x)), 3.0),
}

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38,
                     1.17549435e-38, 1.0, -1.0, 0.5, -0.5, 0.6931472, -0.6931472, 88.72, 89.0, -103.97, -104.0, 3.8325,
                     -3.8325, 0.625, -0.625, 9.0, 10.05, -10.05, 10.1, -10.1, 3.4028235e38, -3.4028235e38], np.float32)


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    mags = (np.float32(10.0) ** rng.uniform(-45.5, 38.5, 200_000)).astype(np.float32)  # subnormals to the largest
    return np.concatenate([SPECIALS, mags, -mags, (rng.standard_normal(100_000) * 3).astype(np.float32),
                           rng.uniform(-1, 1, 100_000).astype(np.float32)])


def _vector_loop(fn):
    @numba.njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    return loop


@pytest.fixture(scope="module")
def inputs():
    return _inputs()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_helper_accuracy_in_ulp_and_special_values(name, inputs):
    fn, ref_fn, max_ulp = FUNCTIONS[name]
    got = np.empty_like(inputs)
    _vector_loop(fn)(inputs, got)
    with np.errstate(all="ignore"):
        ref = np.asarray(ref_fn(inputs.astype(np.float64)), np.float64)
        ref32 = ref.astype(np.float32)
    finite = np.isfinite(ref32) & (ref32 != 0)
    spacing = np.maximum(np.spacing(np.abs(ref32[finite])), np.spacing(np.float32(0))).astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - ref[finite]) / spacing
    worst = int(np.argmax(err))
    assert err[worst] <= max_ulp, (name, inputs[finite][worst], got[finite][worst], ref[finite][worst], err[worst])
    # Infinities, NaN and zeros (with their sign) exactly; a result rounding to zero may be the smallest subnormal.
    special = ~finite & (np.isnan(ref32) | np.isinf(ref32) | (np.abs(ref) < 2.0 ** -150))
    same = (np.isnan(got) & np.isnan(ref32)) | ((got == ref32) & (np.signbit(got) == np.signbit(ref32)))
    assert same[special].all(), (name, inputs[special][~same[special]], got[special][~same[special]])


@pytest.mark.parametrize("name", sorted(FUNCTIONS) + ["max", "min"])
def test_loops_calling_helpers_vectorize(name):
    if name in ("max", "min"):
        op = mathlib._fmax if name == "max" else mathlib._fmin

        @numba.njit(error_model="numpy")
        def loop(x, out):  # a reduction: LLVM must recognize the NaN-propagating maximum/minimum
            acc = x[0]
            for i in range(x.shape[0]):
                acc = op(acc, x[i])
            out[0] = acc
    else:
        loop = _vector_loop(FUNCTIONS[name][0])
    x = np.linspace(-3, 3, 1000).astype(np.float32)
    loop(x, np.empty_like(x))
    llvm = next(iter(loop.inspect_llvm().values()))
    assert " x float>" in llvm, f"the loop calling {name} was not vectorized"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_propagating_max_min_on_signed_zeros_and_nan(dtype):
    @numba.njit(error_model="numpy")
    def both(a, b):
        return mathlib._fmax(a, b), mathlib._fmin(a, b)

    vals = [dtype(v) for v in (np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5)]
    for a in vals:
        for b in vals:
            mx, mn = both(a, b)
            if a == 0 and b == 0:  # +0 > -0 (IEEE 754-2019 maximum/minimum, as XLA)
                want_mx = dtype(-0.0) if np.signbit(a) and np.signbit(b) else dtype(0.0)
                want_mn = dtype(-0.0) if np.signbit(a) or np.signbit(b) else dtype(0.0)
            else:
                want_mx, want_mn = np.maximum(a, b), np.minimum(a, b)
            for got, want in ((mx, want_mx), (mn, want_mn)):
                assert np.array_equal(got, want, equal_nan=True) and np.signbit(got) == np.signbit(want), (a, b)
