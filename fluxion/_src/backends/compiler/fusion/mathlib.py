"""Scalar helpers inlined into fused kernels (imported only by generated kernel modules; needs Numba).

Every float32 function here is branch-free (special cases are selected, not branched to) and calls no library, so
LLVM vectorizes loops that use it: 16 float32 lanes with AVX-512, 8 with AVX2. Polynomials are evaluated with fused
multiply-adds (`_fma`, one rounding each: a vector instruction on every x86-64 CPU with FMA). Accuracy, measured
against the exact function (float64 NumPy/SciPy) over the whole float32 range including subnormals, infinities,
NaN and -0.0 (`tests/compiler/test_mathlib.py`), in units in the last place:

* `_expf` (Cephes `expf.c`: range reduction by ln 2 split in two constants, a degree-6 polynomial; the scale 2**n
  applied as two exact power-of-two factors built by bit casts, so subnormal results and overflow come out right;
  n capped at 127, as XLA's, whose bits it has): 1 ulp, 4.6 ulp above 88.376. A fused selu over 1e6 float32 took
  0.21 ms on one core (0.28 ms with separate multiplies and adds).
* `_tanhf` (XLA's: Eigen's rational interpolant evaluated with fused multiply-adds, bit for bit JAX's): 3.9 ulp
  (just above |x| = 0.0004, where it stops returning x; as in JAX).
* `_logf` (XLA's: Cephes `logf.c`'s polynomial in XLA's operation order, bit for bit JAX's; subnormal inputs are
  zero, as in XLA): 1.1 ulp.
* `_log1pf` (Goldberg's formula over `_logf`, see the function): 2.3 ulp.
* `_expm1f` (the Taylor series of e**x - 1 to degree 10 on |x| < ln 2, `_expf(x) - 1` outside): 1.7 ulp.
* `_erfcf` (Cephes `ndtrf.c` erfcf, the recipe of XLA's CPU backend, with exp(-x**2) from the exactly split
  square): 4 ulp, except 11 ulp on 0.5 < x < 1 where 1 - erf(x) amplifies erf's error (as in XLA). JAX's exact
  GELU is x/2 erfc(-x/sqrt(2)).
* `_erff` (the rational interpolant of XLA's CPU backend and Eigen, so fused `erf` -- the exact GELU -- is what JAX
  computes up to the order of roundings): 5 ulp (near 3.83, where it saturates to 1).

`_fmax`/`_fmin` are LLVM's `maximum`/`minimum` (NaN-propagating, +0 > -0), which vectorize as reductions too.

Source of the constants: Cephes Math Library (S. L. Moshier), public domain: `expf.c`, `logf.c`, `ndtrf.c`; Eigen's
`generic_fast_tanh_float` (as XLA's CPU backend uses it) for `tanh`;
Eigen's `generic_fast_erf_float` as used by XLA for `erf`; the Taylor coefficients 1/k!.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as llvm_ir
from numba import get_num_threads, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...xla_cpu_math import (EXP_HIGH, EXP_LOW, EXP_POLY, LN2_HI, LN2_LO, LOG2_E, LOG_POLY, SQRT_HALF, TANH_CLAMP,
                             TANH_DEN, TANH_NUM, TANH_TINY)

# When any helper changes, bump `fusion.MATHLIB_VERSION`: it is written into every kernel's source, so kernels
# cached on disk against older helpers are never reused.


@intrinsic
def _i32_as_f32(typingctx, x):
    """Reinterprets the bits of an int32 as a float32 (LLVM `bitcast`, vectorizable)."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.FloatType())
    return sig, codegen


@intrinsic
def _f32_as_i32(typingctx, x):
    """Reinterprets the bits of a float32 as an int32 (LLVM `bitcast`, vectorizable)."""
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.IntType(32))
    return sig, codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """`a * b + c` with a single rounding for three floats of one type (LLVM `llvm.fma`, vectorizable): the
    polynomials below, and the compiler's `mul_add` equations (XLA's contracted multiply-adds)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        t = args[0].type
        fn = builder.module.declare_intrinsic("llvm.fma", [t], llvm_ir.FunctionType(t, [t, t, t]))
        return builder.call(fn, args)
    return a(a, b, c), codegen


@njit(inline="always", error_model="numpy")
def _expf(x):
    x = min(max(x, np.float32(EXP_LOW)), np.float32(EXP_HIGH))  # NaN passes through min/max unchanged
    n = np.floor(x * np.float32(LOG2_E) + np.float32(0.5))  # float32: keeps the loop 8 lanes wide
    n = min(n, np.float32(127.0))  # as XLA: above 88.376, r grows past ln(2) / 2 instead of n reaching 128
    r = _fma(n, np.float32(-LN2_HI), x)
    r = _fma(n, np.float32(-LN2_LO), r)
    rr = r * r
    p = np.float32(EXP_POLY[0])
    p = _fma(p, r, np.float32(EXP_POLY[1]))
    p = _fma(p, r, np.float32(EXP_POLY[2]))
    p = _fma(p, r, np.float32(EXP_POLY[3]))
    p = _fma(p, r, np.float32(EXP_POLY[4]))
    p = _fma(p, r, np.float32(EXP_POLY[5]))
    p = _fma(p, rr, r) + np.float32(1.0)
    ni = np.int32(n)
    n1 = ni >> np.int32(1)
    n2 = ni - n1
    return (p * _i32_as_f32((n1 + np.int32(127)) << np.int32(23))) * _i32_as_f32((n2 + np.int32(127)) << np.int32(23))


# XLA's float32 tanh (Eigen's `generic_fast_tanh_float`, compiled with FMA): see `xla_cpu_math`.
@njit(inline="always", error_model="numpy")
def _tanhf(x):
    c = min(max(x, np.float32(-TANH_CLAMP)), np.float32(TANH_CLAMP))
    x2 = c * c
    p = _fma(x2, np.float32(TANH_NUM[0]), np.float32(TANH_NUM[1]))
    p = _fma(x2, p, np.float32(TANH_NUM[2]))
    p = _fma(x2, p, np.float32(TANH_NUM[3]))
    p = _fma(x2, p, np.float32(TANH_NUM[4]))
    p = _fma(x2, p, np.float32(TANH_NUM[5]))
    p = _fma(x2, p, np.float32(TANH_NUM[6]))
    q = _fma(x2, np.float32(TANH_DEN[0]), np.float32(TANH_DEN[1]))
    q = _fma(x2, q, np.float32(TANH_DEN[2]))
    q = _fma(x2, q, np.float32(TANH_DEN[3]))
    r = (c * p) / q
    return r if abs(x) >= np.float32(TANH_TINY) else x  # (NaN and -0.0 are returned as they are)


@njit(inline="always", error_model="numpy")
def _logf(x):
    # XLA's float32 log (Cephes logf's polynomial in XLA's operation order, so JAX's bits): x = 2**e m with m in
    # [sqrt(1/2), sqrt(2)), t = m - 1, log(m) = t - t**2/2 + t**3 P(t) with P in three interleaved Horner chains of
    # fused multiply-adds, ln 2 in two parts. Subnormal inputs count as zero (XLA's runtime flushes them). Special
    # values are selected at the end.
    special = not (x >= np.float32(1.17549435e-38)) or x == np.float32(np.inf)  # NaN, <= 0, subnormal, inf
    bits = _f32_as_i32(np.float32(1.0) if special else x)
    e = np.float32((bits >> np.int32(23)) - np.int32(126))
    m = _i32_as_f32((bits & np.int32(-2139095041)) | np.int32(0x3F000000))  # mask 0x807FFFFF: m in [0.5, 1)
    low = m < np.float32(SQRT_HALF)
    t = (m + m) - np.float32(1.0) if low else m - np.float32(1.0)
    e = e - np.float32(1.0) if low else e
    t2 = t * t
    t3 = t2 * t
    y = _fma(t, np.float32(LOG_POLY[0]), np.float32(LOG_POLY[1]))
    y1 = _fma(t, np.float32(LOG_POLY[3]), np.float32(LOG_POLY[4]))
    y2 = _fma(t, np.float32(LOG_POLY[6]), np.float32(LOG_POLY[7]))
    y = _fma(y, t, np.float32(LOG_POLY[2]))
    y1 = _fma(y1, t, np.float32(LOG_POLY[5]))
    y2 = _fma(y2, t, np.float32(LOG_POLY[8]))
    y = _fma(y, t3, y1)
    y = _fma(y, t3, y2)
    y = _fma(y, t3, e * np.float32(LN2_LO))
    t = _fma(np.float32(-0.5), t2, t)
    r = _fma(e, np.float32(LN2_HI), t + y)
    zero = abs(x) < np.float32(1.17549435e-38)  # +-0 and subnormals of either sign
    r = r if x >= np.float32(1.17549435e-38) else (np.float32(-np.inf) if zero else np.float32(np.nan))
    return x if x == np.float32(np.inf) else r  # (negatives and NaN give NaN)


@njit(inline="always", error_model="numpy")
def _log1pf(x):
    # Goldberg's formula (D. Goldberg, "What every computer scientist should know about floating-point
    # arithmetic", ACM Computing Surveys 23(1), 1991, theorem 4): with u = 1 + x rounded, log1p(x) is x when u == 1
    # and log(u) * (x / (u - 1)) otherwise -- the quotient undoes the rounding of 1 + x.
    u = np.float32(1.0) + x
    r = _logf(u) * (x / (u - np.float32(1.0)))
    r = r if u != np.float32(np.inf) else u  # x = inf (and x large enough for u to overflow: none in float32)
    return x if u == np.float32(1.0) else (r if u != np.float32(0.0) else np.float32(-np.inf))


@njit(inline="always", error_model="numpy")
def _expm1f(x):
    # |x| < ln 2: the Taylor series of e**x - 1 up to x**10 / 10! (the next term is below 2**-31 relative there),
    # as x + x**2 * P(x); elsewhere exp(x) - 1, where no cancellation loses accuracy. -0.0 is kept.
    p = np.float32(2.7557319223985893e-07)
    p = _fma(p, x, np.float32(2.7557319223985888e-06))
    p = _fma(p, x, np.float32(2.4801587301587302e-05))
    p = _fma(p, x, np.float32(1.9841269841269841e-04))
    p = _fma(p, x, np.float32(1.3888888888888889e-03))
    p = _fma(p, x, np.float32(8.3333333333333332e-03))
    p = _fma(p, x, np.float32(4.1666666666666664e-02))
    p = _fma(p, x, np.float32(1.6666666666666666e-01))
    p = _fma(p, x, np.float32(0.5))
    small = _fma(x * x, p, x)
    small = small if x != np.float32(0.0) else x
    big = _expf(x) - np.float32(1.0)
    return small if abs(x) < np.float32(0.693147180559945) else big


@njit(inline="always", error_model="numpy")
def _erff(x):
    # The rational interpolant XLA's CPU backend (from Eigen) evaluates for float32 erf: x P(x**2) / Q(x**2) with
    # an odd degree-9 numerator and an even degree-12 denominator, +-1 from |x| >= 3.8325 (where erf rounds to 1).
    z = x * x
    p = np.float32(0.00022905065861350646)
    p = _fma(p, z, np.float32(0.0034082910107109506))
    p = _fma(p, z, np.float32(0.050955695062380861))
    p = _fma(p, z, np.float32(0.18520832239976145))
    p = _fma(p, z, np.float32(1.128379143519084))
    q = np.float32(-1.1791602954361697e-7)
    q = _fma(q, z, np.float32(0.000023547966471313185))
    q = _fma(q, z, np.float32(0.0010179625278914885))
    q = _fma(q, z, np.float32(0.014070470171167667))
    q = _fma(q, z, np.float32(0.11098505178285362))
    q = _fma(q, z, np.float32(0.49746925110067538))
    q = _fma(q, z, np.float32(1.0))
    r = (x * p) / q
    one = np.float32(1.0) if x > np.float32(0.0) else np.float32(-1.0)
    return one if abs(x) >= np.float32(3.832506856900711) else r


@njit(inline="always", error_model="numpy")
def _erfcf(x):
    # Cephes erfcf (as XLA's CPU backend evaluates float32 erfc): 1 - erf(x) for |x| < 1, else
    # exp(-x**2) / |x| * P(1/x**2) (one polynomial below |x| = 2, another above), reflected as 2 - erfc(|x|) for
    # negative x. exp(-x**2) is computed from x**2 = hi + lo split exactly by a fused multiply-add (exp(-hi) (1 - lo)),
    # so the rounding of x**2 -- up to 80 ulp of the result near x = 9 -- is not amplified. Beyond |x| = 10.1 the
    # result is 0 (or 2), below the smallest subnormal.
    ax = abs(x)
    hi = x * x
    lo = _fma(x, x, -hi)
    e = _expf(-hi)
    z = _fma(-lo, e, e)
    q = np.float32(1.0) / ax
    y = q * q
    p = np.float32(2.326819970068386e-2)
    p = _fma(p, y, np.float32(-1.387039388740657e-1))
    p = _fma(p, y, np.float32(3.687424674597105e-1))
    p = _fma(p, y, np.float32(-5.824733027278666e-1))
    p = _fma(p, y, np.float32(6.210004621745983e-1))
    p = _fma(p, y, np.float32(-4.944515323274145e-1))
    p = _fma(p, y, np.float32(3.404879937665872e-1))
    p = _fma(p, y, np.float32(-2.741127028184656e-1))
    p = _fma(p, y, np.float32(5.638259427386472e-1))
    r = np.float32(-1.047766399936249e+1)
    r = _fma(r, y, np.float32(1.297719955372516e+1))
    r = _fma(r, y, np.float32(-7.495518717768503e+0))
    r = _fma(r, y, np.float32(2.921019019210786e+0))
    r = _fma(r, y, np.float32(-1.015265279202700e+0))
    r = _fma(r, y, np.float32(4.218463358204948e-1))
    r = _fma(r, y, np.float32(-2.820767439740514e-1))
    r = _fma(r, y, np.float32(5.641895067754075e-1))
    tail = z * (q * (p if ax < np.float32(2.0) else r))
    tail = tail if ax < np.float32(10.1) else np.float32(0.0)
    tail = np.float32(2.0) - tail if x < np.float32(0.0) else tail
    out = np.float32(1.0) - _erff(x) if ax < np.float32(1.0) else tail
    return out if x == x else x


@njit(inline="always", error_model="numpy")
def _logisticf(x):
    # XLA's expansion, 1 / (1 + exp(-x)), with XLA's exp: the same bits as JAX (exp(-x) = inf for x < -88.7, where
    # the exact result is subnormal and XLA flushes it to zero anyway).
    return np.float32(1.0) / (np.float32(1.0) + _expf(-x))


@njit(inline="always", error_model="numpy")
def _logistic(x):
    return 1.0 / (1.0 + math.exp(-x))


def _ieee_minmax(name: str):
    """A Numba intrinsic calling LLVM's `name` (`llvm.maximum`/`llvm.minimum`) on two floats of one type."""
    @intrinsic
    def minmax(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, signature, args):
            t = args[0].type
            fn = builder.module.declare_intrinsic(name, [t], llvm_ir.FunctionType(t, [t, t]))
            return builder.call(fn, args)
        return a(a, b), codegen
    return minmax


# Maximum and minimum as XLA (and IEEE 754-2019 `maximum`/`minimum`) define them: NaN if either operand is NaN,
# and +0 > -0 -- which is exactly what LLVM's `llvm.maximum`/`llvm.minimum` compute. Written with branches instead,
# a max or min reduction does not vectorize (LLVM recognizes the intrinsics as a reduction): measured on one core, a
# row-wise max over (33, 1500) float32 took 116 us with branches, 19 us with the intrinsic.
_fmax = _ieee_minmax("llvm.maximum")
_fmin = _ieee_minmax("llvm.minimum")


@intrinsic
def _num_threads(typingctx):
    """The calling thread's Numba thread count (`numba.get_num_threads()`, which `compiler.threads.enter` sets),
    read through the threading layer's `get_num_threads` symbol, the one Numba's parallel regions call. Numba's own
    `get_num_threads` compiles a ctypes pointer into the kernel, which Numba then refuses to cache on disk."""
    get_num_threads()  # starts the threading layer, which registers the symbol with LLVM

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(cgutils.intp_t, []),
                                            "get_num_threads")
        return builder.call(fn, [])
    return types.intp(), codegen


@njit(error_model="numpy")
def _select(c, t, f):
    """`t if c else f` with both operands evaluated by the caller. A conditional expression whose operands are array
    loads ran as a branch per element: `where(mask, g, 0)` fused with a column sum (ReLU's gradient feeding
    BatchNorm's) took 2.0 ms over a random 16384x32 float32 mask, 0.28 ms through this function, which LLVM inlines
    into the vectorized loop as a `select` (Numba's own `inline="always"` keeps the branch: 1.6 ms)."""
    return t if c else f


def fma_loop(a, b, c, out):
    """`out[i] = fma(a[i], b[i], c[i])` over flat arrays: the eager `mul_add` kernel (`backends.eager.kernels.fma`
    compiles it with Numba for float32/float64)."""
    for i in range(out.size):
        out[i] = _fma(a[i], b[i], c[i])


def tanhf_loop(x, out):
    """`out[i] = _tanhf(x[i])` over flat float32 arrays: the eager float32 `tanh` kernel (`kernels.unary`)."""
    for i in range(out.size):
        out[i] = _tanhf(x[i])


def expf_loop(x, out):
    """`out[i] = _expf(x[i])` over flat float32 arrays: the eager float32 `exp` kernel (`kernels.unary`)."""
    for i in range(out.size):
        out[i] = _expf(x[i])


def logf_loop(x, out):
    """`out[i] = _logf(x[i])` over flat float32 arrays: the eager float32 `log` kernel (`kernels.unary`)."""
    for i in range(out.size):
        out[i] = _logf(x[i])
