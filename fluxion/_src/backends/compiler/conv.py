"""A faster lowering of `conv_general_dilated` for the forms training programs use (a compiler lowering hint).

Every convolution, and both of its gradients (which JAX's transpose rules express as convolutions with permuted
dimension numbers, flipped kernels and lhs dilation), is in channels-last form

    out[b, p, o] = sum over taps k and features c of x[b, p * stride + k * rhs_dilation - pad, c] * w[k, c, o]

where x is the lhs-dilated input and reads outside it are zero. Ungrouped float32/float64 convolutions with one or
two spatial dimensions run on the Numba kernels of `convkernels`:

* *forward form* (no more kernel taps than output positions: forward and input-gradient convolutions): the
  patch matrix (positions, taps x features) of a few batch items at a time -- about `PATCH_ELEMENTS` elements, so
  that it stays in cache between the copy and the product -- is filled by the `im2col` kernel (which reads padding
  and lhs-dilation holes as zeros, so the input is never padded or dilated in memory) and multiplied by the kernel
  matrix with BLAS into the output rows. With few taps x features (a first layer on a 1-channel image) and no
  dilation, the NumPy path below is used instead: its 9 block copies and one product with 9 columns were measured
  faster (2.2-2.6 ms for the CNN's first layer, batch 128, one core) than both the chunked kernel path (3-12 ms)
  and a Numba direct convolution (12 ms). With 27 columns (a first layer on an RGB image) the kernel path is the
  faster one: 0.85 against 1.16 ms for the ResNet benchmark's 16x32x32x3 -> 32 layer.
  Stride-1 3x3 convolutions with enough features (the second layer of the CNN, and its input gradient, which is a
  convolution with the flipped kernel) use Winograd's F(2x2, 3x3) algorithm instead: 16 products of (tiles, C)
  by (C, O) replace the (positions, 9 C) by (9 C, O) product, 2.25 times fewer multiplications, between an input
  and an output transform run by Numba kernels.
* *weight-gradient form* (more taps than positions: the "kernel" is a whole output gradient): the roles are
  swapped, since out[(p, b), o] = sum over (c, k) of x[c, k * rhs_dilation + p * stride, b] * w[c, k, o] is the same
  kind of product with the lhs read as (C, *spatial, B) and the kernel as (C, *K, O) -- for the gradient of a
  convolution those are the layouts of the forward input and of the output gradient, channels-last, so no
  transposing copy happens. The patch matrix of a few lhs "features" (batch items of the forward pass) at a time
  is multiplied, transposed, into an accumulated result (for a first layer's weights too: measured 12 ms against
  16 ms for a Numba kernel accumulating the 9 x 32 result directly, batch 128 of 28x28, one loaded core). The
  3x3 weight gradient of a stride-1 convolution with enough features uses Winograd F(2x2, 3x3) too: 16 products
  (C, tiles) by (tiles, O) of the transformed input and output-gradient tiles, then G^T dU G.

Until the kernels are compiled (and for other forms: grouping, three spatial dimensions, other dtypes), undilated
convolutions use the NumPy patch-matrix path of `patch_conv`, and the rest the backend's general implementation.

Threads: the chunks of every kernel path are independent (a chunk's patch matrix or transformed tiles, its
products, its outputs), so they run on the chunk threads (`threads.run_chunks`, as many as the load allows), each
product on one BLAS thread; the weight gradients' per-chunk products are summed in chunk order once all are done.
The bits are those of the serial loop whatever the thread count.

Numerics: float32 products summed in float32 by BLAS, as the general implementation does, up to summation order;
Winograd's transforms round differently (measured on the CNN's second layer against a float64 result: largest
float32 error 1.7e-5 for outputs up to 81, against 4.8e-5 for the patch matrix product).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from . import convkernels, ir, threads
from .memory import FRESH

# Patch matrices are built and multiplied in chunks of about this many elements: big enough for BLAS to run at
# speed, small enough to stay in the L2 cache between the copy and the product.
PATCH_ELEMENTS = 1 << 17
# Every chunk gives the product at least this many rows.
MIN_ROWS = 256
# Up to this many taps x features per output row (forward form, undilated), the NumPy patch path is used.
NUMPY_MAX_COLUMNS = 16
# Stride-1 3x3 convolutions with at least this many input and output features use Winograd F(2x2, 3x3), in chunks of
# about this many 2x2 output tiles (measured on the CNN's second layer, batch 128 of 14x14x32 -> 64, one loaded
# core: 24.5 ms with 196-tile chunks, 35 ms with 784, against 48.8 ms for the patch matrix; its input gradient
# 23.7 against 55.7 ms).
WINOGRAD_MIN_FEATURES = 8
WINOGRAD_TILES = 256

# The NumPy path's chunking (measured, CPU time of the CNN's 14x14x32 -> 64 convolution: 9.1 ms with 2**19-element
# chunks, 14.2 ms unchunked).
NUMPY_PATCH_ELEMENTS = 1 << 19
NUMPY_MIN_ROWS = 512

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def supported(eqn) -> bool:
    """Whether `conv` computes `eqn` (the backend's implementation is used otherwise)."""
    p = eqn.params
    lhs, rhs = eqn.invars
    dt = lhs.aval.dtype
    pref = p.get("preferred_element_type")
    return (p["feature_group_count"] == 1 and p["batch_group_count"] == 1
            and dt in _FLOATS and rhs.aval.dtype == dt
            and (pref is None or np.dtype(pref) == dt)
            and ir.size(lhs) > 0 and ir.size(rhs) > 0 and ir.size(eqn.outvars[0]) > 0
            and (len(p["window_strides"]) in (1, 2)
                 or (all(d == 1 for d in p["lhs_dilation"]) and all(d == 1 for d in p["rhs_dilation"]))))


def _as_2d(a, nsp):
    """(N, *spatial, C) with one spatial axis -> (N, 1, S, C); two are kept."""
    return a[:, None] if nsp == 1 else a


def _out_size(size, k, stride, rdil, ldil, lo, hi):
    span = (k - 1) * rdil + 1
    full = (size - 1) * ldil + 1 + lo + hi
    return max(0, (full - span) // stride + 1) if full >= span else 0


def _run_chunks(count, make_body):
    """Runs the chunks of a kernel path on the chunk threads (`threads.run_chunks`), each product on one BLAS thread:
    the chunks' products are small, and the threads are better spent on whole chunks (see `threads`)."""
    threads.one_blas_thread()
    threads.run_chunks(count, make_body)


def _sum_in_order(parts):
    """parts[0] + parts[1] + ... summed in that order, whichever threads computed them (so the bits do not depend on
    the thread count): the accumulation the serial loop did."""
    acc = np.zeros(parts.shape[1:], parts.dtype)
    for p in parts:
        acc += p
    return acc


def kernel_conv(x, w, strides, padding, lhs_dilation, rhs_dilation):
    """The channels-last convolution of x (N, *sp, C) with w (*K, C, O) (one or two spatial dimensions) on the
    Numba kernels: (N, *out, O), or None when the kernels are not ready."""
    nsp = x.ndim - 2
    pad = lambda v: (1,) * (2 - nsp) + tuple(v)  # noqa: E731 -- lifts 1-D parameters to 2-D
    sh, sw = pad(strides)
    dh, dw = pad(rhs_dilation)
    lh, lw = pad(lhs_dilation)
    (ph, ph_hi), (pw, pw_hi) = ((0, 0),) * (2 - nsp) + tuple(tuple(q) for q in padding)
    x4 = _as_2d(x, nsp)
    w4 = w[None] if nsp == 1 else w
    n, hgt, wid, c = x4.shape
    kh, kw, _, o = w4.shape
    oh = _out_size(hgt, kh, sh, dh, lh, ph, ph_hi)
    ow = _out_size(wid, kw, sw, dw, lw, pw, pw_hi)
    positions, taps = oh * ow, kh * kw
    if taps <= positions:
        res = _forward(x4, w4, oh, ow, (sh, sw, dh, dw, lh, lw, ph, pw))
    else:
        # Swapped roles (see the module docstring): lhs (C, H, W, N), kernel (C, KH, KW, O); the result comes out
        # as (OH, OW, N, O).
        xs = np.ascontiguousarray(np.moveaxis(x4, (0, 3), (3, 0)))
        ws = np.ascontiguousarray(np.moveaxis(w4, 2, 0))
        res = _swapped(xs, ws, oh, ow, (dh, dw, sh, sw, lh, lw, ph, pw))
        if res is not None:
            res = np.moveaxis(res, 2, 0)
    if res is None:
        return None
    return res[:, 0] if nsp == 1 else res


# Winograd's transform matrix for the kernel (see `convkernels.WINOGRAD_INPUT`).
_WINOGRAD_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])


def _winograd(x, w, oh, ow, ph, pw):
    """The stride-1 undilated 3x3 convolution of x (N, H, W, C) with w (3, 3, C, O) by Winograd F(2x2, 3x3), low
    padding (ph, pw), output (N, oh, ow, O); None while the kernels are not ready."""
    fin, fout = convkernels.winograd_input.get(), convkernels.winograd_output.get()
    if fin is None or fout is None:
        return None
    n, _, _, c = x.shape
    o = w.shape[-1]
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    # The transformed kernel G w G^T, computed in float64 (its entries are exact halves of sums of weights).
    u = np.einsum("ik,klco,jl->ijco", _WINOGRAD_G, w.astype(np.float64), _WINOGRAD_G)
    u = np.ascontiguousarray(u.reshape(16, c, o).astype(x.dtype))
    res = np.empty((n, oh, ow, o), x.dtype)

    def finish(k, start, nb, vs, ms):
        np.matmul(vs, u, out=ms)
        fout(ms, res, start, nb, th, tw)
    _winograd_chunks(x, fin, o, th, tw, ph, pw, finish)
    return res


def _winograd_chunk_size(n, th, tw):
    """Images per Winograd chunk: about `WINOGRAD_TILES` tiles of 2x2 outputs, at least one image."""
    return max(1, min(n, WINOGRAD_TILES // (th * tw)))


def _winograd_chunks(x, fin, o, th, tw, ph, pw, finish):
    """Transforms the input tiles of x (N, H, W, C) chunk by chunk on the chunk threads, and calls
    `finish(k, start, nb, v, m)` for chunk k (images start .. start + nb - 1) with v (16, nb * tiles, C) the
    transformed tiles and m (16, nb * tiles, o) a scratch buffer of that chunk's thread."""
    n, _, _, c = x.shape
    tiles = th * tw
    chunk = _winograd_chunk_size(n, th, tw)

    def make_body():
        # Flat buffers, so that a last, shorter chunk is a contiguous prefix too.
        v = np.empty(16 * chunk * tiles * c, x.dtype)
        m = np.empty(16 * chunk * tiles * o, x.dtype)

        def body(k):
            start = k * chunk
            nb = min(chunk, n - start)
            vs = v[:16 * nb * tiles * c].reshape(16, nb * tiles, c)
            ms = m[:16 * nb * tiles * o].reshape(16, nb * tiles, o)
            fin(x, vs, start, nb, th, tw, ph, pw)
            finish(k, start, nb, vs, ms)
        return body
    _run_chunks(-(-n // chunk), make_body)


def _winograd_weight_gradient(x, g, ph, pw):
    """The gradient (3, 3, C, O) of the stride-1 3x3 convolution of x (N, H, W, C) (low padding (ph, pw)) with
    respect to its kernel, given the output gradient g (N, OH, OW, O), by Winograd F(2x2, 3x3) (see
    `convkernels.WINOGRAD_GRAD_OUTPUT`); None while the kernels are not ready."""
    fin, fgrad = convkernels.winograd_input.get(), convkernels.winograd_grad_output.get()
    if fin is None or fgrad is None:
        return None
    n, _, _, c = x.shape
    _, oh, ow, o = g.shape
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    g = np.ascontiguousarray(g)
    parts = np.empty((-(-n // _winograd_chunk_size(n, th, tw)), 16, c, o), x.dtype)

    def finish(k, start, nb, vs, ys):
        fgrad(g, ys, start, nb, th, tw)
        np.matmul(vs.transpose(0, 2, 1), ys, out=parts[k])
    _winograd_chunks(x, fin, o, th, tw, ph, pw, finish)
    du = _sum_in_order(parts)
    # w's gradient G^T dU G, in float64 as the forward transform.
    dw = np.einsum("ik,ijco,jl->klco", _WINOGRAD_G, du.reshape(4, 4, c, o).astype(np.float64), _WINOGRAD_G)
    return np.ascontiguousarray(dw.astype(x.dtype))


def _forward(x, w, oh, ow, params):
    n, _, _, c = x.shape
    kh, kw, _, o = w.shape
    taps = kh * kw
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w)
    if taps * c <= NUMPY_MAX_COLUMNS and all(v == 1 for v in params[2:6]):
        return None  # the NumPy patch path (see the module docstring)
    if (kh, kw) == (3, 3) and params[:6] == (1, 1, 1, 1, 1, 1) and min(c, o) >= WINOGRAD_MIN_FEATURES:
        res = _winograd(x, w, oh, ow, params[6], params[7])
        if res is not None:
            return res
    res = np.empty((n, oh, ow, o), x.dtype)
    fn = convkernels.im2col(c)
    if fn is None:
        return None
    positions = oh * ow
    cols = taps * c
    chunk = max(1, min(n, max(PATCH_ELEMENTS // (positions * cols), -(-MIN_ROWS // positions))))
    wmat = w.reshape(cols, o)
    out = res.reshape(n * positions, o)

    def make_body():
        buf = np.empty((chunk * positions, cols), x.dtype)

        def body(k):
            start = k * chunk
            nb = min(chunk, n - start)
            patches = buf[:nb * positions]
            fn(x, patches, start, nb, oh, ow, kh, kw, *params)
            np.dot(patches, wmat, out=out[start * positions:(start + nb) * positions])
        return body
    _run_chunks(-(-n // chunk), make_body)
    return res


def _swapped(x, w, kh, kw, params):
    """The swapped-role product: lhs x (C, H, W, B) read with the original kernel's extent (OH, OW) as positions
    and the original output's (kh, kw) as taps, kernel w (C, OH, OW, O); returns (kh, kw, B, O)."""
    c, _, _, b = x.shape
    _, oh, ow, o = w.shape
    positions, taps = oh * ow, kh * kw
    if (kh, kw) == (3, 3) and params[:6] == (1, 1, 1, 1, 1, 1) and min(b, o) >= WINOGRAD_MIN_FEATURES:
        res = _winograd_weight_gradient(x, w, params[6], params[7])
        if res is not None:
            return res
    fn = convkernels.im2col(b)
    if fn is None:
        return None
    cols = taps * b
    chunk = max(1, min(c, max(PATCH_ELEMENTS // (positions * cols), -(-MIN_ROWS // positions))))
    gmat = w.reshape(c * positions, o)
    chunks = -(-c // chunk)
    parts = np.empty((chunks, cols, o), x.dtype)

    def make_body():
        buf = np.empty((chunk * positions, cols), x.dtype)

        def body(k):
            start = k * chunk
            nb = min(chunk, c - start)
            patches = buf[:nb * positions]
            fn(x, patches, start, nb, oh, ow, kh, kw, *params)
            np.dot(patches.T, gmat[start * positions:(start + nb) * positions], out=parts[k])
        return body
    _run_chunks(chunks, make_body)
    acc = _sum_in_order(parts)
    return acc.reshape(kh, kw, b, o)


def patch_conv(x, w, strides, padding):
    """The NumPy path for undilated convolutions: x (N, *sp, C), w (*K, C, O) -> (N, *out, O).

    The patch matrix (N, *out_positions, *taps, C) is filled by copying strided blocks of the padded input: one
    block per tap when there are fewer taps than output positions, one block per output position otherwise; each
    copy moves runs of C contiguous features."""
    nsp = x.ndim - 2
    n, c = x.shape[0], x.shape[-1]
    ksp = w.shape[:nsp]
    o = w.shape[-1]
    # Zero padding (negative padding crops).
    if any(lo or hi for lo, hi in padding):
        crop = tuple(slice(max(-lo, 0), x.shape[1 + k] - max(-hi, 0)) for k, (lo, hi) in enumerate(padding))
        x = x[(slice(None),) + crop]
        pads = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
        xp = np.zeros((n,) + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[1:-1], pads)) + (c,), x.dtype)
        xp[(slice(None),) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[1:-1], pads))] = x
        x = xp
    out_sp = tuple(max(0, (s - k) // st + 1) for s, k, st in zip(x.shape[1:-1], ksp, strides))
    positions = int(np.prod(out_sp, dtype=np.int64))
    taps = int(np.prod(ksp, dtype=np.int64))
    wmat = np.ascontiguousarray(w).reshape(taps * c, o)
    res = np.empty((n, positions, o), np.result_type(x.dtype, w.dtype))
    chunk = max(1, min(n, max(NUMPY_PATCH_ELEMENTS // max(positions * taps * c, 1),
                              -(-NUMPY_MIN_ROWS // positions))))
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        xs = x[start:stop]
        patches = np.empty((stop - start,) + out_sp + ksp + (c,), x.dtype)
        if taps <= positions:
            for tap in itertools.product(*(range(k) for k in ksp)):
                src = tuple(slice(t, t + st * (m - 1) + 1, st) for t, st, m in zip(tap, strides, out_sp))
                patches[(slice(None),) + (slice(None),) * nsp + tap] = xs[(slice(None),) + src]
        else:
            for pos in itertools.product(*(range(m) for m in out_sp)):
                src = tuple(slice(q * st, q * st + k) for q, st, k in zip(pos, strides, ksp))
                patches[(slice(None),) + pos] = xs[(slice(None),) + src]
        np.matmul(patches.reshape((stop - start) * positions, taps * c), wmat,
                  out=res[start:stop].reshape((stop - start) * positions, o))
    return res.reshape((n,) + out_sp + (o,))


def conv(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, out_shape,
         general=None):
    """The convolution of `lhs` with `rhs` (see the module docstring); `out_shape` is the result's shape and
    `general(lhs, rhs)` the backend's implementation for the cases the fast paths do not take."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nsp = len(lhs_spec) - 2
    x = np.transpose(lhs, (lhs_spec[0],) + tuple(lhs_spec[2:]) + (lhs_spec[1],))     # (N, *sp, C)
    w = np.transpose(rhs, tuple(rhs_spec[2:]) + (rhs_spec[1], rhs_spec[0]))          # (*K, C, O)
    res = None
    if nsp in (1, 2):
        res = kernel_conv(x, w, window_strides, padding, lhs_dilation, rhs_dilation)
    if res is None:
        if any(d != 1 for d in lhs_dilation) or any(d != 1 for d in rhs_dilation):
            return general(lhs, rhs)
        res = patch_conv(x, w, window_strides, padding)
    res = np.moveaxis(res, -1, 1)  # canonical (N, O, *out)
    out = np.ascontiguousarray(np.transpose(res, np.argsort(out_spec)))
    assert out.shape == tuple(out_shape), (out.shape, out_shape)
    return out


def lower_conv(g, eqn, ins, outs, fallback):
    if not supported(eqn):
        return fallback(g, eqn, ins, outs)
    p = eqn.params
    general = g.bind(functools.partial(eqn.primitive.impl, **p), "conv_general")
    fn = g.bind(conv, "conv_patches")
    dn = g.bind(tuple(tuple(s) for s in p["dimension_numbers"]), "conv_dims")
    g.line(f"{outs[0]} = {fn}({ins[0]}, {ins[1]}, window_strides={tuple(p['window_strides'])!r}, "
           f"padding={tuple(tuple(x) for x in p['padding'])!r}, lhs_dilation={tuple(p['lhs_dilation'])!r}, "
           f"rhs_dilation={tuple(p['rhs_dilation'])!r}, dimension_numbers={dn}, "
           f"out_shape={eqn.outvars[0].aval.shape!r}, general={general})")
    return [FRESH]
