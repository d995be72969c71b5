"""Tests of `conv_general_dilated` and its conveniences (fluxion/_src/lax/convolution.py).

Oracles: a direct loop convolution in float64 written from XLA's definition (dilate, pad, slide the window, group
features/batches), finite differences for derivatives, a Python loop for `vmap`, eager execution for `jit`, and real
`jax.lax` (values, gradients, `conv_transpose`, `conv_dimension_numbers`) where it is installed.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import fluxion
from fluxion._src import test_util as tu
from fluxion._src.lax import convolution as lc

f32, i32, bf16 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(ml_dtypes.bfloat16)


def conv_reference(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dn, fgc=1, bgc=1):
    """The convolution by loops over output positions, in float64 (explicit (lo, hi) padding only)."""
    x = np.transpose(np.asarray(lhs), dn.lhs_spec).astype(np.float64)
    w = np.transpose(np.asarray(rhs), dn.rhs_spec).astype(np.float64)
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    dilated = np.zeros((n, c) + tuple((s - 1) * d + 1 if s else 0 for s, d in zip(x.shape[2:], lhs_dilation)))
    dilated[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dilation)] = x
    for k, (lo, hi) in enumerate(padding):
        ax = 2 + k
        if lo < 0:
            dilated = np.take(dilated, range(-lo, dilated.shape[ax]), axis=ax)
        if hi < 0:
            dilated = np.take(dilated, range(0, dilated.shape[ax] + hi), axis=ax)
        widths = [(0, 0)] * dilated.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        dilated = np.pad(dilated, widths)
    spans = [(k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dilation)]
    out_sp = [max(0, (s - sp) // st + 1) if s >= sp else 0
              for s, sp, st in zip(dilated.shape[2:], spans, window_strides)]
    nb = n // bgc
    out = np.zeros([nb, o] + out_sp)
    for b in range(nb):
        for oc in range(o):
            gf, gb = oc // (o // fgc), oc // (o // bgc)
            src = gb * nb + b
            for pos in np.ndindex(*out_sp):
                window = dilated[(src, slice(gf * i, (gf + 1) * i)) + tuple(
                    slice(p * st, p * st + sp, r) for p, st, sp, r in zip(pos, window_strides, spans, rhs_dilation))]
                out[(b, oc) + pos] = np.sum(window * w[oc])
    return np.transpose(out, np.argsort(dn.out_spec))


@dataclasses.dataclass(frozen=True)
class ConvCase:
    name: str
    lhs_shape: tuple
    rhs_shape: tuple
    strides: tuple
    padding: object
    lhs_dilation: tuple | None = None
    rhs_dilation: tuple | None = None
    dn: object = None
    fgc: int = 1
    bgc: int = 1

    def kwargs(self):
        return dict(window_strides=self.strides, padding=self.padding, lhs_dilation=self.lhs_dilation,
                    rhs_dilation=self.rhs_dilation, dimension_numbers=self.dn, feature_group_count=self.fgc,
                    batch_group_count=self.bgc)

    def fn(self, **extra):
        return lambda l, r: lc.conv_general_dilated(l, r, **self.kwargs(), **extra)

    def args(self, rng, dtype=f32):
        return [tu.rand_like(rng, self.lhs_shape, dtype), tu.rand_like(rng, self.rhs_shape, dtype)]

    def reference(self, lhs, rhs):
        dn = lc.conv_dimension_numbers(lhs.shape, rhs.shape, self.dn)
        nsp = lhs.ndim - 2
        ld = self.lhs_dilation or (1,) * nsp
        rd = self.rhs_dilation or (1,) * nsp
        pads = self.padding
        if isinstance(pads, str):
            spans = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(dn.rhs_spec[2:], rd)]
            pads = lc.padtype_to_pads([lhs.shape[d] for d in dn.lhs_spec[2:]], spans, self.strides, pads)
        return conv_reference(lhs, rhs, self.strides, pads, ld, rd, dn, self.fgc, self.bgc)


CASES = [
    ConvCase("valid_nchw", (2, 3, 6, 5), (4, 3, 3, 2), (1, 1), "VALID"),
    ConvCase("same_strided", (2, 3, 7, 6), (4, 3, 3, 2), (2, 1), "SAME"),
    ConvCase("same_lower_1d", (2, 2, 7), (3, 2, 4), (2,), "SAME_LOWER"),
    ConvCase("explicit_dilated", (2, 2, 7, 6), (3, 2, 3, 2), (2, 3), ((1, 2), (0, -1)), lhs_dilation=(2, 1),
             rhs_dilation=(1, 2)),
    ConvCase("feature_groups", (2, 6, 5, 6), (4, 3, 3, 2), (1, 2), "SAME", fgc=2),
    ConvCase("batch_groups", (4, 3, 6, 5), (6, 3, 3, 2), (1, 1), ((1, 1), (2, 0)), bgc=2),
    ConvCase("nhwc_hwio", (2, 6, 5, 3), (3, 2, 3, 4), (1, 1), "SAME", dn=("NHWC", "HWIO", "NHWC")),
    ConvCase("mixed_specs_rhs_dil", (2, 7, 3), (3, 3, 4), (2,), "SAME", rhs_dilation=(2,), dn=("NWC", "WIO", "NCW")),
    ConvCase("depthwise_3d", (2, 4, 5, 4, 3), (2, 3, 2, 1, 6), (1, 2, 1), "VALID", dn=("NDHWC", "DHWIO", "NCDHW"),
             fgc=3),
    ConvCase("empty_output", (2, 3, 2, 2), (4, 3, 3, 3), (1, 1), "VALID"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [f32, i32, bf16], ids=lambda d: d.name)
def test_values_match_loop_reference(case, dtype, rng):
    lhs, rhs = case.args(rng, dtype)
    got = case.fn()(lhs, rhs)
    assert np.asarray(got).dtype == dtype
    want = case.reference(lhs, rhs)
    tol = {f32: 1e-4, i32: 0, bf16: 5e-2}[dtype]
    tu.assert_allclose(got, want.astype(dtype), atol=tol, rtol=tol, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_preferred_element_type_jit_and_eval_shape(case, rng):
    lhs, rhs = case.args(rng, bf16)
    got = case.fn(preferred_element_type=np.float32)(lhs, rhs)
    assert np.asarray(got).dtype == f32
    tu.assert_allclose(got, case.reference(lhs, rhs).astype(np.float32), atol=1e-3, rtol=1e-3)
    args = case.args(rng)
    tu.check_jit(case.fn(), args, atol=1e-5, rtol=1e-5)
    tu.check_eval_shape(case.fn(), args)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_grads_first_and_second_order(case, rng):
    tu.check_grads(case.fn(), case.args(rng), order=2, rng=rng, atol=2e-2, rtol=2e-2, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("axes", [(0, 0), (1, None), (None, 2), (-1, 0)], ids=str)
def test_vmap_matches_loop(case, axes, rng):
    examples = [case.args(rng) for _ in range(2)]
    args = tu.stack_examples(examples, axes)
    tu.check_batching(case.fn(), args, in_axes=axes, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jit_of_grad_matches_eager(case, rng):
    # Under jit the transposed convolutions also pass abstract evaluation.
    g = fluxion.grad(lambda l, r: (case.fn()(l, r) ** 2).sum(), argnums=(0, 1))
    tu.check_jit(g, case.args(rng), atol=1e-4, rtol=1e-4)


def test_grads_with_preferred_element_type(rng):
    case = CASES[4]
    lhs, rhs = case.args(rng, bf16)
    g = fluxion.grad(lambda l, r: case.fn(preferred_element_type=np.float32)(l, r).sum(), argnums=(0, 1))
    eager = g(lhs, rhs)
    assert [np.asarray(x).dtype for x in eager] == [bf16, bf16]
    tu.check_jit(g, [lhs, rhs], atol=5e-2, rtol=5e-2)
    want = fluxion.grad(lambda l, r: case.fn()(l, r).sum(), argnums=(0, 1))(lhs.astype(f32), rhs.astype(f32))
    tu.assert_allclose(tuple(np.asarray(x).astype(f32) for x in eager), want, atol=0.1, rtol=5e-2)


def test_vmap_of_grad(rng):
    case = CASES[4]
    examples = [case.args(rng) for _ in range(2)]
    args = tu.stack_examples(examples, (0, 0))
    g = fluxion.grad(lambda l, r: (case.fn()(l, r) ** 2).sum(), argnums=(0, 1))
    tu.check_batching(g, args, in_axes=(0, 0), atol=1e-3, rtol=1e-4)


def test_against_jax_values_and_grads(rng):
    jax = pytest.importorskip("jax")
    for case in CASES:
        lhs, rhs = case.args(rng)
        want = jax.lax.conv_general_dilated(lhs, rhs, **case.kwargs())
        tu.assert_allclose(case.fn()(lhs, rhs), np.asarray(want), atol=1e-4, rtol=1e-4, err_msg=case.name)
        loss_j = lambda l, r: (jax.lax.conv_general_dilated(l, r, **case.kwargs()) ** 2).sum()
        loss_m = lambda l, r: (case.fn()(l, r) ** 2).sum()
        gj = jax.grad(loss_j, argnums=(0, 1))(lhs, rhs)
        gm = fluxion.grad(loss_m, argnums=(0, 1))(lhs, rhs)
        tu.assert_allclose(gm, tuple(np.asarray(g) for g in gj), atol=1e-3, rtol=1e-4, err_msg=case.name)


def test_conv_and_conv_with_general_padding(rng):
    lhs = tu.rand_like(rng, (2, 3, 6, 5), f32)
    rhs = tu.rand_like(rng, (4, 3, 3, 2), f32)
    dn = lc.conv_dimension_numbers(lhs.shape, rhs.shape, None)
    pads = lc.padtype_to_pads((6, 5), (3, 2), (2, 1), "SAME")
    tu.assert_allclose(lc.conv(lhs, rhs, (2, 1), "SAME"),
                       conv_reference(lhs, rhs, (2, 1), pads, (1, 1), (1, 1), dn).astype(f32), atol=1e-4, rtol=1e-4)
    tu.assert_allclose(lc.conv_with_general_padding(lhs, rhs, (1, 2), ((0, 1), (2, 2)), (2, 1), (1, 2)),
                       conv_reference(lhs, rhs, (1, 2), ((0, 1), (2, 2)), (2, 1), (1, 2), dn).astype(f32),
                       atol=1e-4, rtol=1e-4)


def test_padtype_to_pads_hand_values():
    assert lc.padtype_to_pads((5, 5), (3, 3), (2, 2), "SAME") == [(1, 1), (1, 1)]
    assert lc.padtype_to_pads((6,), (3,), (2,), "SAME") == [(0, 1)]
    assert lc.padtype_to_pads((6,), (3,), (2,), "SAME_LOWER") == [(1, 0)]
    assert lc.padtype_to_pads((6, 4), (3, 3), (1, 1), "VALID") == [(0, 0), (0, 0)]
    assert lc.padtype_to_pads((4,), (1,), (1,), "same") == [(0, 0)]
    with pytest.raises(ValueError, match="Unknown padding"):
        lc.padtype_to_pads((4,), (1,), (1,), "FULL")


def test_dimension_numbers_from_specs():
    dn = lc.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), ("NHWC", "HWIO", "NHWC"))
    assert dn == lc.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    # Spatial dims are matched by letter, in the kernel spec's order.
    assert lc.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), ("NWHC", "HWIO", "NHWC")).lhs_spec == (0, 3, 2, 1)
    assert lc.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), ("NCHW", "OIWH", "NWHC")) == \
        lc.ConvDimensionNumbers((0, 1, 3, 2), (0, 1, 2, 3), (0, 3, 1, 2))
    assert lc.conv_dimension_numbers((1, 2, 3), (4, 5, 6), None) == lc.ConvDimensionNumbers(*((0, 1, 2),) * 3)
    with pytest.raises(TypeError, match="exactly once"):
        lc.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), ("NHWW", "HWIO", "NHWC"))
    with pytest.raises(TypeError, match="same spatial dimensions"):
        lc.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), ("NHDC", "HWIO", "NHWC"))
    with pytest.raises(TypeError, match="length 4"):
        lc.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), ("NHC", "HIO", "NHC"))


def test_dimension_numbers_against_jax():
    jax = pytest.importorskip("jax")
    for specs in [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"), ("NWHC", "IOHW", "CNHW"),
                  ("NDHWC", "DHWIO", "NCDHW")]:
        shape = tuple(range(2, 2 + len(specs[0])))
        got = lc.conv_dimension_numbers(shape, shape, specs)
        want = jax.lax.conv_dimension_numbers(shape, shape, specs)
        assert tuple(got) == tuple(tuple(s) for s in want), specs


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 2),), ((0, 0),)], ids=str)
@pytest.mark.parametrize("strides,rhs_dil,transpose_kernel", [((1,), None, False), ((2,), None, True),
                                                                ((3,), (2,), False)], ids=str)
def test_conv_transpose_against_jax(padding, strides, rhs_dil, transpose_kernel, rng):
    jax = pytest.importorskip("jax")
    lhs = tu.rand_like(rng, (2, 5, 3), f32)
    rhs = tu.rand_like(rng, (3, 3, 4) if not transpose_kernel else (3, 4, 3), f32)
    kw = dict(strides=strides, padding=padding, rhs_dilation=rhs_dil, transpose_kernel=transpose_kernel)
    got = lc.conv_transpose(lhs, rhs, **kw)
    want = jax.lax.conv_transpose(lhs, rhs, **kw)
    tu.assert_allclose(got, np.asarray(want), atol=1e-4, rtol=1e-4)
    if not isinstance(padding, str):
        got = lc.conv_transpose(lhs, rhs, use_consistent_padding=True, **kw)
        want = jax.lax.conv_transpose(lhs, rhs, use_consistent_padding=True, **kw)
        tu.assert_allclose(got, np.asarray(want), atol=1e-4, rtol=1e-4)


def test_conv_transpose_2d_nhwc_against_jax(rng):
    jax = pytest.importorskip("jax")
    lhs = tu.rand_like(rng, (2, 4, 5, 3), f32)
    rhs = tu.rand_like(rng, (3, 2, 3, 4), f32)
    got = lc.conv_transpose(lhs, rhs, (2, 2), "SAME")
    tu.assert_allclose(got, np.asarray(jax.lax.conv_transpose(lhs, rhs, (2, 2), "SAME")), atol=1e-4, rtol=1e-4)
    tu.check_grads(lambda l, r: lc.conv_transpose(l, r, (2, 2), "SAME"), [lhs, rhs], order=1, rng=rng,
                   atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("lhs_shape,rhs_shape,kwargs,exc,match", [
    ((2, 4, 5, 5), (3, 3, 2, 2), {}, TypeError, "feature dimension"),
    ((2, 4, 5, 5), (3, 2, 2, 2), dict(feature_group_count=2), TypeError, "multiple of feature_group_count"),
    ((3, 4, 5, 5), (4, 4, 2, 2), dict(batch_group_count=2), TypeError, "batch_group_count"),
    ((2, 4, 5, 5), (4, 2, 2, 2), dict(feature_group_count=2, batch_group_count=2), TypeError, "not both"),
    ((2, 4, 5, 5), (4, 4, 2, 2), dict(lhs_dilation=(2, 2), padding="SAME"), ValueError, "string padding"),
    ((2, 4, 5, 5), (4, 4, 2), {}, TypeError, "equal rank"),
    ((2, 4, 5, 5), (4, 4, 2, 2), dict(window_strides=(1,)), TypeError, "window_strides"),
])
def test_errors(lhs_shape, rhs_shape, kwargs, exc, match):
    kw = dict(window_strides=(1, 1), padding="VALID")
    kw.update(kwargs)
    with pytest.raises(exc, match=match):
        lc.conv_general_dilated(np.zeros(lhs_shape, np.float32), np.zeros(rhs_shape, np.float32), **kw)


def test_dtype_mismatch_error():
    with pytest.raises(TypeError, match="one dtype"):
        lc.conv_general_dilated(np.zeros((1, 1, 3), np.float32), np.zeros((1, 1, 2), np.int32), (1,), "VALID")


def test_mnist_sized_cnn_step_gradients(rng):
    # Batch 128 of 28x28 images, 32 then 64 channels (the Flax MNIST example's convolutions): the jitted
    # forward+backward (compiled convolution kernels) gives the eager gradients. Speed is measured by benchmarks/.
    x = tu.rand_like(rng, (128, 28, 28, 1), f32)
    w1 = tu.rand_like(rng, (3, 3, 1, 32), f32) * 0.1
    w2 = tu.rand_like(rng, (3, 3, 32, 64), f32) * 0.1
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(w1, w2, x):
        h = lc.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
        h = lc.conv_general_dilated(h[:, ::2, ::2], w2, (1, 1), "SAME", dimension_numbers=dn)
        return (h ** 2).mean()

    step = fluxion.jit(fluxion.grad(loss, argnums=(0, 1)))
    g1, g2 = step(w1, w2, x)
    e1, e2 = fluxion.grad(loss, argnums=(0, 1))(w1, w2, x)
    tu.assert_allclose(g1, e1, rtol=2e-4, atol=1e-6)
    tu.assert_allclose(g2, e2, rtol=2e-4, atol=1e-6)
    assert np.asarray(g2).shape == (3, 3, 32, 64) and np.all(np.isfinite(np.asarray(g1)))
