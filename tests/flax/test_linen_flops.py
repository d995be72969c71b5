"""FLOP counting rules (fluxion/flax/linen/_flops.py) against XLA's cost analysis of the same JAX program.

Each case is built twice, with ``(jnp, lax, nn)`` of fluxion and of JAX, from programs whose jaxprs have
the same equations; fluxion's count must equal ``jax.jit(f).lower(...).cost_analysis()['flops']``.
"""

import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion import lax as flax_lax
from fluxion.flax.linen import _flops

jax = pytest.importorskip('jax')

_UNARY = ['abs', 'neg', 'sign', 'floor', 'ceil', 'round', 'is_finite', 'square', 'exp', 'log', 'log1p',
          'expm1', 'tanh', 'sqrt', 'rsqrt', 'cbrt', 'sin', 'cos', 'tan', 'atan', 'erf', 'logistic', 'exp2',
          'acos', 'asin', 'acosh', 'asinh', 'atanh', 'cosh', 'sinh', 'lgamma', 'digamma', 'erf_inv', 'erfc']
_BINARY = ['add', 'sub', 'mul', 'div', 'rem', 'max', 'min', 'pow', 'atan2', 'eq', 'ne', 'lt', 'le', 'gt',
           'ge', 'nextafter']


def _cases(jnp, lax, nn, jit):
    x = jnp.linspace(0.1, 0.9, 24, dtype=jnp.float32).reshape(4, 6)
    cases = {}
    for name in _UNARY:
        cases[name] = (getattr(lax, name), (x,))
    for name in _BINARY:
        cases[name] = (getattr(lax, name), (x, x))
    for dtype in ['float16', 'bfloat16', 'float64']:
        for name in ['cosh', 'lgamma', 'erf_inv', 'erfc', 'acos', 'logistic']:
            cases[f'{name}_{dtype}'] = (getattr(lax, name), (x.astype(getattr(jnp, dtype)),))
    for p in [0, 1, 2, 3, 5, 7, 8, -1, -2]:
        cases[f'integer_pow_{p}'] = (lambda a, p=p: lax.integer_pow(a, p), (x,))
    cases.update({
        'convert': (lambda a: a.astype(jnp.int32), (x,)),
        'convert_same_dtype': (lambda a: lax.convert_element_type(a, jnp.float32), (x,)),
        'bitcast': (lambda a: lax.bitcast_convert_type(a, jnp.int32), (x,)),
        'select_bool': (lambda p, a, b: lax.select(p, a, b), (x > 0.5, x, x * 2)),
        'select_n_int': (lambda p, a, b: lax.select_n(p, a, b), ((x > 0.5).astype(jnp.int32), x, x * 2)),
        'select_n_3': (lambda p, a, b: lax.select_n(p, a, b, a), ((x > 0.5).astype(jnp.int32), x, x * 2)),
        'clamp': (lambda a: lax.clamp(jnp.float32(0.2), a, jnp.float32(0.7)), (x,)),
        'where': (lambda a: jnp.where(a > 0.5, a, 0.0), (x,)),
        'sum_axis': (lambda a: a.sum(1), (x,)), 'sum_all': (jnp.sum, (x,)), 'max_axis0': (lambda a: a.max(0), (x,)),
        'prod': (lambda a: a.prod(1), (x,)), 'mean': (jnp.mean, (x,)),
        'any': (lambda a: (a > 0.5).any(1), (x,)), 'all': (lambda a: (a > 0.5).all(), (x,)),
        'argmax_float': (lambda a: jnp.argmax(a, 1), (x,)), 'argmin_int': (lambda a: jnp.argmin(a.astype(jnp.int32), 0), (x,)),
        'cumsum': (lambda a: jnp.cumsum(a, 1), (x,)), 'cumprod': (lambda a: jnp.cumprod(a, 0), (x,)),
        'cummax': (lambda a: lax.cummax(a, 1), (x,)), 'cumlogsumexp': (lambda a: lax.cumlogsumexp(a, 1), (x,)),
        'sort': (lambda a: jnp.sort(a, 1), (x,)),
        'matmul': (lambda a, b: a @ b, (jnp.ones((16, 9)), jnp.ones((9, 4)))),
        'batched_einsum': (lambda a, b: jnp.einsum('bij,bjk->bik', a, b), (jnp.ones((3, 5, 7)), jnp.ones((3, 7, 2)))),
        'matvec': (lambda a, b: a @ b, (jnp.ones((5, 7)), jnp.ones(7))),
        'tensordot': (lambda a, b: jnp.tensordot(a, b, axes=([1, 2], [0, 1])), (jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5)))),
        'scatter_add': (lambda a, i: a.at[i].add(1.), (x, jnp.array([0, 2]))),
        'scatter_set': (lambda a, i: a.at[i].set(1.), (x, jnp.array([0, 2]))),
        'gather_index': (lambda a, i: a[i], (x, jnp.array([0, 2]))),
        'take_fill': (lambda a, i: jnp.take(a, i, axis=0), (x, jnp.array([[0, 2, 1]]))),
        'take_clip': (lambda a, i: jnp.take(a, i, axis=0, mode='clip'), (x, jnp.array([[0, 2, 1]]))),
        'max_pool': (lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 3, 2, 1), (1, 2, 1, 1), 'SAME'),
                     (jnp.ones((1, 7, 8, 3)),)),
        'avg_pool': (lambda a: lax.reduce_window(a, 0., lax.add, (1, 3, 2, 1), (1, 1, 1, 1), 'VALID') / 6.,
                     (jnp.ones((1, 7, 8, 3)),)),
        'softmax': (nn.softmax, (x,)), 'log_softmax': (nn.log_softmax, (x,)), 'gelu': (nn.gelu, (x,)),
        'gelu_exact': (lambda a: nn.gelu(a, approximate=False), (x,)), 'relu': (nn.relu, (x,)),
        'relu6': (nn.relu6, (x,)), 'sigmoid': (nn.sigmoid, (x,)), 'silu': (nn.silu, (x,)),
        'leaky_relu': (nn.leaky_relu, (x,)), 'elu': (nn.elu, (x,)), 'softplus': (nn.softplus, (x,)),
        'one_hot': (lambda i: nn.one_hot(i, 5), (jnp.array([0, 3, 1]),)),
        'jit_call': (lambda a: jit(lambda b: b * 2. + 1)(a), (x,)),
        'concatenate_pad_free': (lambda a: jnp.concatenate([a, a], 1), (x,)),
        'clip': (lambda a: jnp.clip(a, 0.2, 0.7), (x,)),
        # Constant folding and identities (done by the lowering before XLA counts).
        'fold_constants': (lambda a: a / jnp.sqrt(lax.convert_element_type(4, jnp.float32)), (x,)),
        'fold_broadcast_constant': (lambda a: a * (lax.broadcast(2., (4, 6)) * 3.), (x,)),
        'identity_add_zero': (lambda a: a + 0., (x,)), 'identity_mul_one': (lambda a: 1. * a, (x,)),
        'identity_sub_zero': (lambda a: a - jnp.zeros((4, 1)), (x,)),
        'no_fold_div_one': (lambda a: a / 1., (x,)), 'no_fold_reduce_constant': (lambda a: a + lax.broadcast(1., (5, 6)).sum(0), (x,)),
        'no_fold_iota': (lambda a: a * (lax.iota(jnp.int32, 6) < 3), (x,)),
        'fft': (lambda a: jnp.fft.fft(a), (x,)), 'rfft2': (lambda a: jnp.fft.rfft2(a), (x,)),
        'bessel_i0e': (lambda a: lax.bessel_i0e(a), (x,)), 'bessel_i1e': (lambda a: lax.bessel_i1e(a), (x,)),
        'irfft': (lambda a: jnp.fft.irfft(a, n=9), (x,)), 'ifftn_3d': (lambda a: jnp.fft.ifftn(a), (jnp.ones((3, 4, 5)),)),
    })
    for pads in ['SAME', 'VALID', ((2, 1), (0, 3))]:
        for strides in [(1, 1), (2, 3)]:
            for dilation in [(1, 1), (2, 1)]:
                for groups in [1, 2]:
                    cases[f'conv_{pads}_{strides}_{dilation}_{groups}'] = (
                        lambda l, r, pads=pads, strides=strides, dilation=dilation, groups=groups:
                        lax.conv_general_dilated(l, r, strides, pads, rhs_dilation=dilation,
                                                 feature_group_count=groups),
                        (jnp.ones((2, 4, 9, 10)), jnp.ones((6, 4 // groups, 3, 2))))
    cases.update({
        'conv_lhs_dilation': (lambda l, r: lax.conv_general_dilated(l, r, (2, 3), ((2, 1), (0, 3)), lhs_dilation=(2, 1),
                                                                    rhs_dilation=(2, 1)),
                              (jnp.ones((2, 4, 9, 10)), jnp.ones((6, 4, 3, 2)))),
        'conv_nhwc': (lambda l, r: lax.conv_general_dilated(l, r, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC')),
                      (jnp.ones((2, 9, 10, 4)), jnp.ones((3, 3, 4, 5)))),
        'conv_batch_groups': (lambda l, r: lax.conv_general_dilated(l, r, (1, 1), 'VALID', batch_group_count=2),
                              (jnp.ones((4, 4, 9, 10)), jnp.ones((6, 4, 3, 2)))),
        'conv_1d': (lambda l, r: lax.conv_general_dilated(l, r, (1,), 'SAME'), (jnp.ones((2, 3, 12)), jnp.ones((5, 3, 4)))),
        'conv_transpose': (lambda l, r: lax.conv_transpose(l, r, (2, 2), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC')),
                           (jnp.ones((2, 5, 5, 3)), jnp.ones((3, 3, 3, 4)))),
    })
    return cases


def _xla_flops(fun, *args):
    cost = jax.jit(fun).lower(*args).cost_analysis()
    return int((cost or {}).get('flops', 0))


_CASE_NAMES = sorted(_cases(fjnp, flax_lax, fluxion.nn, fluxion.jit))


@pytest.mark.parametrize('name', _CASE_NAMES)
def test_count_equals_xla_cost_analysis(name):
    x64 = name.endswith('float64')
    old = (fluxion.config.jax_enable_x64, jax.config.jax_enable_x64)
    fluxion.config.update('jax_enable_x64', x64)
    jax.config.update('jax_enable_x64', x64)
    try:
        ours_fun, ours_args = _cases(fjnp, flax_lax, fluxion.nn, fluxion.jit)[name]
        theirs_fun, theirs_args = _cases(jax.numpy, jax.lax, jax.nn, jax.jit)[name]
        assert _flops.count_flops(ours_fun, *ours_args) == _xla_flops(theirs_fun, *theirs_args)
    finally:
        fluxion.config.update('jax_enable_x64', old[0])
        jax.config.update('jax_enable_x64', old[1])


def test_counts_by_hand():
    x = fjnp.ones((16, 9))
    w = fjnp.ones((9, 4))
    assert _flops.count_flops(lambda a, b: a @ b + 1., x, w) == 2 * 16 * 9 * 4 + 16 * 4
    assert _flops.count_flops(lambda a: fjnp.exp(a).sum(), x) == 16 * 9 - 1
    assert _flops.count_flops(lambda a: flax_lax.integer_pow(a, 5), x) == 3 * 16 * 9   # x^2, x^4, x^4*x
    # A cond counts its most expensive branch, a scan its body once.
    assert _flops.count_flops(lambda p, a: flax_lax.cond(p, lambda b: b * 2., lambda b: b * 2. + 1., a),
                              True, x) == 2 * 16 * 9 + 1 + 1   # branches, plus convert and clamp of p
    assert _flops.count_flops(lambda a: flax_lax.scan(lambda c, _: (c * 2., None), a, None, length=10)[0],
                              x) == 16 * 9


def test_every_primitive_has_a_rule():
    """A primitive added to fluxion needs a counting rule (or an entry in UNSUPPORTED naming why not)."""
    from fluxion._src import core

    names = {value.name for module in list(sys.modules.values())
             if getattr(module, '__name__', '').startswith('fluxion')
             for value in vars(module).values() if isinstance(value, core.Primitive)}
    assert names, 'no primitives found'
    missing = names - _flops.counted_primitives() - set(_flops.UNSUPPORTED)
    assert not missing


def test_unsupported_primitive_raises_with_its_reason():
    closed = fluxion.make_jaxpr(lambda a: fluxion.linearize(custom_vjp_double, a)[1](a))(fjnp.ones(3))
    with pytest.raises(NotImplementedError, match='custom_lin.*custom_vjp'):
        _flops.jaxpr_flops(closed)


@fluxion.custom_vjp
def custom_vjp_double(a):
    return a * 2.


custom_vjp_double.defvjp(lambda a: (a * 2., None), lambda _, g: (g * 2.,))


def test_counts_are_exact_integers_for_large_shapes():
    big = fluxion.ShapeDtypeStruct((4096, 4096), np.float32)
    assert _flops.count_flops(lambda a, b: a @ b, big, big) == 2 * 4096 ** 3
