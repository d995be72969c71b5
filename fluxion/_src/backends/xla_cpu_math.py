"""The constants of XLA's CPU float32 `exp`, `log` and `tanh`, shared by the two places that evaluate them.

`compiler.fusion.mathlib` evaluates them inside Numba kernels (`_expf`, `_logf`, `_tanhf`) and `eager.special`
emulates the same operations exactly in NumPy (`exp_f32`, `log_f32`, `tanh_f32`); both must use the same numbers to
give JAX's bits, so they live here, in plain Python floats (each exactly representable in float32 or rounded to it
by the user, as XLA rounds its own literals). Polynomials are listed highest degree first.

Sources: the Cephes Mathematical Library (S. L. Moshier), `expf.c` and `logf.c`, in the operation order of XLA's
CPU backend; Eigen's `generic_fast_tanh_float`, as XLA's CPU backend uses it, for tanh.
"""

from __future__ import annotations

# exp: x clamped to [EXP_LOW, EXP_HIGH], n = floor(x log2(e) + 1/2) capped at 127, r = x - n ln 2 with ln 2 split
# in two parts (LN2_HI exact in a few bits), e**r = 1 + r + r**2 P(r).
EXP_LOW = -104.0
EXP_HIGH = 89.0
LOG2_E = 1.44269504088896341
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
LN2_HI = 0.693359375
LN2_LO = -2.12194440e-4

# log: x = 2**e m with m in [SQRT_HALF, 2 SQRT_HALF), t = m - 1, log(m) = t - t**2/2 + t**3 LOG_POLY(t).
LOG_POLY = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
            -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1)
SQRT_HALF = 0.707106781186547524

# tanh: x P(x**2) / Q(x**2) on x clamped to +-TANH_CLAMP (where the quotient is exactly +-1), x itself where
# |x| < TANH_TINY.
TANH_NUM = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
            1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
TANH_DEN = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
TANH_CLAMP = 7.99881172180175781
TANH_TINY = 0.0004
