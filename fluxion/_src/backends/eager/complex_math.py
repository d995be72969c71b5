"""Complex exp, expm1, sin, cos, tan, sinh, cosh, tanh, sign, rsqrt and division with XLA's results at infinite, NaN and signed-zero
parts (NumPy's ufuncs follow C99's Annex G there, which XLA does not).

Each function takes and returns a complex NumPy array and works on the real and imaginary parts:

- sin, cos: JAX's own lowering, sin(a + bi) = sin(a) cosh(b) + i cos(a) sinh(b) with cosh and sinh from expm1(b)
  and expm1(-b), and a zero real part (imaginary part for cos) kept exact where a == 0;
- exp: e^a cos(b) + i e^a sin(b), with an exact zero imaginary part where b == 0 (so exp(inf + 0j) is inf + 0j);
  expm1 likewise, its real part expm1(a) cos(b) - 2 sin(b/2)^2 (exactly 0 at 0);
- sinh, cosh: sinh(a) cos(b) + i cosh(a) sin(b) and cosh(a) cos(b) + i sinh(a) sin(b), with exact zeros where a
  zero part makes the product zero (a == 0 with b finite, b == 0);
- tanh: (tanh(a) (1 + tan(b)^2) + i tan(b) (1 - tanh(a)^2)) / (1 + tanh(a)^2 tan(b)^2), zero imaginary part where
  b == 0, and +-1 + 0j where a is infinite and b is not finite; tan(z) = -i tanh(iz);
- sign: z / |z| (0 at 0), NaN when either part is NaN;
- rsqrt: |z|^(-1/2) (cos(-arg(z)/2) + i sin(-arg(z)/2)) (so rsqrt(-1) has XLA's -4.4e-8 real part in float32),
  with inf + NaN i at 0 and, where a part is infinite, a zero whose signs XLA gives (real -0 only for a == -inf,
  imaginary part the opposite sign of b);
- division: Smith's algorithm (the larger part of the denominator divides the smaller), a ratio below the smallest
  normal flushed to zero as XLA's CPU code does, and where both parts come out NaN, the recovery of C99's Annex G
  (x / 0 is an infinity, infinite / finite an infinity, finite / infinite a zero).

These were checked part by part, signs of zeros included, against JAX 0.10's CPU results on a grid of special values
(0, -0, +-1, 2.5, -0.5, +-1e30, 3e38, +-inf, NaN per part, and all pairs for division). Remaining differences: XLA
flushes subnormal results to zero and contracts some products into fused multiply-adds, so results that are
subnormal, or that cancel to a few ulps of zero (1 - 2.5 * 0.4), can differ; values are otherwise within float
rounding of XLA's.
"""

from __future__ import annotations

import numpy as np

_QUIET = dict(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def _join(re, im, dtype):
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype)
    out.real = re
    out.imag = im
    return out


def _sinh_cosh(b):
    """sinh(b) and cosh(b) from expm1, which keeps sinh accurate near 0 (JAX's complex sin/cos do the same)."""
    two = b.dtype.type(2)
    e1, e2 = np.expm1(b), np.expm1(-b)
    return (e1 - e2) / two, (e1 + e2 + two) / two


def sin(x):
    a, b = x.real, x.imag
    with np.errstate(**_QUIET):
        snh, csh = _sinh_cosh(b)
        re, im = np.sin(a) * csh, np.cos(a) * snh
        # With a == 0, csh may be inf and 0 * inf would be NaN: the real part is exactly 0 (+0, as in JAX).
        return _join(np.where(a == 0, a.dtype.type(0), re), im, x.dtype)


def cos(x):
    a, b = x.real, x.imag
    with np.errstate(**_QUIET):
        snh, csh = _sinh_cosh(b)
        re, im = np.cos(a) * csh, -np.sin(a) * snh
        return _join(re, np.where(a == 0, a.dtype.type(0), im), x.dtype)


def exp(x):
    a, b = x.real, x.imag
    with np.errstate(**_QUIET):
        e = np.exp(a)
        return _join(e * np.cos(b), np.where(b == 0, a.dtype.type(0), e * np.sin(b)), x.dtype)


def expm1(x):
    # Real part expm1(a) cos(b) - 2 sin(b/2)^2 (= e^a cos(b) - 1 without cancellation near 0), exact 0 at 0.
    a, b = x.real, x.imag
    zero, two = a.dtype.type(0), a.dtype.type(2)
    with np.errstate(**_QUIET):
        s = np.sin(b / two)
        re = np.expm1(a) * np.cos(b) - two * s * s
        im = np.exp(a) * np.sin(b)
        return _join(np.where((a == 0) & (b == 0), zero, re), np.where(b == 0, zero, im), x.dtype)


def sinh(x):
    a, b = x.real, x.imag
    zero = a.dtype.type(0)
    with np.errstate(**_QUIET):
        re, im = np.sinh(a) * np.cos(b), np.cosh(a) * np.sin(b)
        return _join(np.where((a == 0) & np.isfinite(b), zero, re), np.where(b == 0, zero, im), x.dtype)


def cosh(x):
    a, b = x.real, x.imag
    zero = a.dtype.type(0)
    with np.errstate(**_QUIET):
        re, im = np.cosh(a) * np.cos(b), np.sinh(a) * np.sin(b)
        return _join(re, np.where(((a == 0) & np.isfinite(b)) | (b == 0), zero, im), x.dtype)


def tanh(x):
    a, b = x.real, x.imag
    one, zero = a.dtype.type(1), a.dtype.type(0)
    with np.errstate(**_QUIET):
        t, u = np.tanh(a), np.tan(b)
        d = one + t * t * u * u
        re = t * (one + u * u) / d
        im = np.where(b == 0, zero, u * (one - t * t) / d)
        edge = np.isinf(a) & ~np.isfinite(b)  # tan(b) is NaN, but the limit is +-1 + 0j
        return _join(np.where(edge, np.copysign(one, a), re), np.where(edge, zero, im), x.dtype)


def tan(x):
    # tan(z) = -i tanh(iz), and iz = -b + ai.
    r = tanh(_join(-x.imag, x.real, x.dtype))
    return _join(r.imag, -r.real, x.dtype)


def sign(x):
    a, b = x.real, x.imag
    with np.errstate(**_QUIET):
        m = np.hypot(a, b)
        m = np.where(np.isnan(a) | np.isnan(b), a.dtype.type(np.nan), m)
        zero = (a == 0) & (b == 0)
        return _join(np.where(zero, a, a / m), np.where(zero, b, b / m), x.dtype)


def rsqrt(x):
    a, b = x.real, x.imag
    dt = a.dtype.type
    with np.errstate(**_QUIET):
        # |z|^(-1/2) without forming |z|, which overflows for parts near the dtype's largest value.
        big, small = np.maximum(np.abs(a), np.abs(b)), np.minimum(np.abs(a), np.abs(b))
        q = small / big
        scale = dt(1) / np.sqrt(big) / np.sqrt(np.sqrt(dt(1) + q * q))
        half = dt(-0.5) * np.arctan2(b, a)
        re, im = scale * np.cos(half), scale * np.sin(half)
        inf = np.isinf(a) | np.isinf(b)
        re = np.where(inf, np.where(a == -np.inf, dt(-0.0), dt(0.0)), re)
        im = np.where(inf, np.copysign(dt(0.0), -b), im)
        zero = (a == 0) & (b == 0)
        return _join(np.where(zero, dt(np.inf), re), np.where(zero, dt(np.nan), im), x.dtype)


def _flush(r):
    """`r` with subnormal values replaced by zeros of their sign (XLA's CPU code runs flush-to-zero)."""
    return np.where(np.abs(r) < np.finfo(r.dtype).tiny, np.copysign(r.dtype.type(0), r), r)


def divide(x, y):
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    dtype = np.result_type(x, y)
    a, b = x.real.astype(dtype.type(0).real.dtype), x.imag.astype(dtype.type(0).real.dtype)
    c, d = y.real.astype(a.dtype), y.imag.astype(a.dtype)
    one, zero, inf = a.dtype.type(1), a.dtype.type(0), a.dtype.type(np.inf)
    with np.errstate(**_QUIET):
        wide = np.abs(c) >= np.abs(d)
        r1 = _flush(d / c)  # |c| >= |d|: divide through by c
        den1 = c + d * r1
        re1, im1 = (a + b * r1) / den1, (b - a * r1) / den1
        r2 = _flush(c / d)  # |c| < |d|: divide through by d
        den2 = d + c * r2
        re2, im2 = (a * r2 + b) / den2, (b * r2 - a) / den2
        re, im = np.where(wide, re1, re2), np.where(wide, im1, im2)
        lost = np.isnan(re) & np.isnan(im)
        if lost.any():
            # C99 Annex G's recovery of an infinite or zero result that the formula turned into NaN.
            by_zero = lost & (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
            inf_num = lost & (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
            inf_den = lost & (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
            s = np.copysign(inf, c)
            ai, bi = (np.copysign(np.where(np.isinf(v), one, zero), v) for v in (a, b))
            ci, di = (np.copysign(np.where(np.isinf(v), one, zero), v) for v in (c, d))
            re = np.where(by_zero, s * a, np.where(inf_num, inf * (ai * c + bi * d),
                                                   np.where(inf_den, zero * (a * ci + b * di), re)))
            im = np.where(by_zero, s * b, np.where(inf_num, inf * (bi * c - ai * d),
                                                   np.where(inf_den, zero * (b * ci - a * di), im)))
        return _join(re, im, dtype)
