"""FLOP counts of traced programs, counted the way XLA's cost analysis counts them.

Flax's ``tabulate(..., compute_flops=True)`` reports ``jax.jit(f).lower(...).cost_analysis()['flops']``:
XLA's ``HloCostAnalysis`` run on the HLO that JAX emits for ``f``. fluxion has no XLA, so
:func:`jaxpr_flops` walks the jaxpr of ``f`` (``fluxion.make_jaxpr``) and gives each equation the count
XLA gives the HLO that JAX lowers the same primitive to. The rules, per output element unless stated:

* ``dot_general``: ``2 * out_size * contracted size`` (one multiply-add per product term).
* ``conv_general_dilated``: ``2 * batch / batch_groups * out_features * in_features / feature_groups``
  times, per spatial dimension, the number of (output, kernel) position pairs that land on a real input
  element (not on padding nor on a hole of the lhs dilation) -- XLA's exact pair count, so padded borders
  and strides are counted as XLA counts them.
* Arithmetic, comparison, logical, bitwise, ``select_n`` (per select, plus one compare each when the
  predicate is an integer), ``clamp``, a dtype-changing ``convert_element_type``, ``bitcast_convert_type``,
  ``reduce_precision``, ``square``: 1. ``integer_pow``: one multiply per square and per set bit after the
  first, one more divide for a negative power. ``mul_add`` (a fused fluxion primitive; JAX emits a
  multiply and an add): 2.
* Transcendental functions (``exp``, ``log``, ``tanh``, ``sqrt``, ``rsqrt``, ``sin``, ``erf``, ``pow``,
  ...): 0 FLOPs (XLA counts them as transcendentals, not FLOPs).
* Functions that XLA expands into polynomial code (``logistic``, ``exp2``, ``cosh``, ``lgamma``,
  ``erf_inv``, ...): the size of that expansion, measured from XLA for float32 and float64; 16-bit
  floats add the converts to and from float32 where XLA upcasts.
* Reductions: ``(in_size - out_size)`` combines, times 9 (floating) or 7 (other dtypes) for
  ``argmax``/``argmin`` (their comparator); cumulative ops (``cumsum``, ``cummax``, ...) are reduce
  windows spanning the axis: ``out_size * (axis length - 1)`` (times 8 for ``cumlogsumexp``);
  ``reduce_window_*``: ``out_size * (window size - 1)``; ``sort``: ``n * ceil(log2 n)`` for ``n``
  elements; ``scatter-add/mul/min/max``: one per update element.
* ``threefry2x32``: ``25 * size + 11`` (XLA's count of JAX's threefry expansion).
* ``fft``: ``8 * prod(floor(log2(n)) for n in fft_lengths) * operand size`` (XLA's count).
* ``bessel_i0e``/``bessel_i1e``: 83 per element (XLA's float32 count). Not counted (0, unlike XLA): ``igamma``,
  ``igammac``, ``igamma_grad_a``, ``random_gamma_grad``, ``regularized_incomplete_beta``, ``zeta``, which XLA
  expands into loops whose counted cost depends on the operands' layout, and ``rng_bit_generator``.
* Host callbacks (``pure_callback``, ``io_callback``, ``debug_*``): 0 (XLA reports -1, unknown, for the program).
* Data movement (reshape, broadcast, transpose, slice, pad, concatenate, gather, dynamic slices,
  ``iota``, ``copy``, ``stop_gradient``, plain ``scatter``) and ``top_k``: 0.
* ``gather`` in ``FILL_OR_DROP`` mode: JAX adds an in-bounds mask (3 per index component, plus the
  ``and`` across the index vector) and a select of the fill value (one per output element).
* Control flow: a call (``jit``, ``checkpoint``, ``custom_jvp_call``, ``custom_vjp_call``, ``custom_vmap_call``)
  counts its body; ``cond`` its most expensive branch; ``while`` its condition and body once and ``scan`` its body once (XLA
  does not multiply a loop body by its trip count); ``custom_linear_solve`` its solve program.

Before XLA counts, the lowering folds constants, and so does this counter: an elementwise or
data-movement equation whose operands are all constants (literals, closed-over arrays, and results
of such folded equations -- but not ``iota``) costs nothing, and so do the identities ``x + 0``,
``x - 0``, ``x * 1``, ``x or False``, ``x and True`` and a ``select_n`` whose predicate is a constant
splat or whose cases are the same value. Reductions, contractions and ``x / 1`` are not folded (XLA
counts them too).

Measured against Flax 0.12's column (tests/flax/test_linen_summary.py): the forward counts are equal for
Dense, DenseGeneral, Conv (strides, dilations, groups, SAME/VALID/explicit/CIRCULAR padding),
ConvTranspose, Embed, the normalizations, attention, pooling and the tutorial models; the VJP counts
are equal for Dense, DenseGeneral, Conv, Embed and the tutorial models. Known differences, all outside
the rules above: where fluxion traces a different program than JAX for the same call the count
follows fluxion's program -- the backward passes of LayerNorm/GroupNorm/BatchNorm/attention (fluxion's
derivative rules of ``max`` and of broadcasting differ from JAX's; a few percent), ``padding='CAUSAL'``
and ``jnp.var`` (JAX adds one or a few scalar operations), PRNG key derivation and ``random.bits``;
LAPACK-backed linear algebra (``cholesky``, ``qr``, ``eigh``, ``svd``, ``schur``, ``hessenberg``,
``triangular_solve``, ``det``, ``slogdet``, ``solve``) and collectives (``psum``, ``all_gather``, ...) count 0; XLA's bookkeeping of
lowered loops (counter increments, trip-count compares) and of ``cond`` (predicate conversion) is
not counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import fluxion

__all__ = ['UNSUPPORTED', 'count_flops', 'counted_primitives', 'jaxpr_flops']


def _size(atom: Any) -> int:
    return int(np.prod(atom.aval.shape, dtype=np.int64))


def _out_size(eqn: Any) -> int:
    return _size(eqn.outvars[0])


def _is_floating(dtype: Any) -> bool:
    try:
        return np.issubdtype(np.dtype(dtype), np.inexact)
    except TypeError:
        return False


def _itemsize(atom: Any) -> int:
    try:
        return np.dtype(atom.aval.dtype).itemsize
    except TypeError:
        return 0


# One FLOP per output element.
_ELEMENTWISE = frozenset({
    'abs', 'add', 'sub', 'mul', 'div', 'rem', 'max', 'min', 'neg', 'sign', 'floor', 'ceil', 'round',
    'is_finite', 'square', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'and', 'or', 'xor', 'not', 'shift_left',
    'shift_right_arithmetic', 'shift_right_logical', 'population_count', 'clz', 'real', 'imag', 'conj',
    'complex', 'clamp', 'bitcast_convert_type', 'reduce_precision',
})

# Counted by XLA as transcendentals, not FLOPs.
_TRANSCENDENTAL = frozenset({
    'exp', 'log', 'log1p', 'expm1', 'tanh', 'sqrt', 'rsqrt', 'cbrt', 'sin', 'cos', 'tan', 'atan', 'erf',
    'pow', 'atan2',
})

# FLOPs per element of the code XLA expands these into, for float32 (and float64 unless overridden).
_EXPANDED = {
    'logistic': 3, 'exp2': 1, 'acos': 3, 'acosh': 7, 'asin': 5, 'asinh': 11, 'atanh': 6, 'cosh': 3,
    'sinh': 10, 'digamma': 73, 'erf_inv': 37, 'erfc': 62, 'lgamma': 53, 'nextafter': 24, 'polygamma': 260,
}
_EXPANDED_FLOAT64 = {'erf_inv': 100, 'erfc': 90}
# For 16-bit floats XLA computes these in float32: one convert per operand and one for the result.
_UPCAST_16BIT = frozenset({'cosh', 'sinh', 'digamma', 'erf_inv', 'erfc', 'lgamma', 'polygamma'})

_FREE = frozenset({
    'reshape', 'broadcast_in_dim', 'squeeze', 'transpose', 'slice', 'concatenate', 'pad', 'rev',
    'dynamic_slice', 'dynamic_update_slice', 'gather', 'iota', 'copy', 'stop_gradient', 'const', 'scatter',
    'top_k', 'name', 'optimization_barrier',
})

# No FLOPs by this counter's definition (documented above as differences from XLA).
_UNCOUNTED = frozenset({
    'cholesky', 'qr', 'eigh', 'svd', 'triangular_solve', 'det', 'slogdet', 'solve', 'schur', 'hessenberg', 'psum',
    'pmax', 'pmin',
    'psum_scatter', 'all_gather', 'all_to_all', 'ppermute', 'axis_index', 'reshard',
    # Host callbacks: XLA cannot see inside them (its cost analysis reports -1 for a program holding one).
    'pure_callback', 'io_callback', 'debug_callback', 'debug_print',
    # Not a JAX primitive (JAX spells the high half of a product in other operations).
    'mulhi',
    # XLA expands these into loops whose counted cost depends on the operands' layout in ways not modelled here.
    'igamma', 'igammac', 'igamma_grad_a', 'random_gamma_grad', 'regularized_incomplete_beta', 'zeta',
    # XLA expands its Philox rounds; that expansion is not modelled.
    'rng_bit_generator',
})

# Primitives that cannot be counted, with the reason given in the error.
UNSUPPORTED = {
    'custom_lin': 'it stands for the tangent map of a custom_vjp function, which is opaque Python code '
                  '(it appears only in linearized programs; count the VJP, which calls bwd, instead)',
}

_REDUCTIONS = frozenset({'reduce_sum', 'reduce_max', 'reduce_min', 'reduce_prod', 'reduce_and', 'reduce_or',
                         'reduce_xor'})
_CUMULATIVE = {'cumsum': 1, 'cumprod': 1, 'cummax': 1, 'cummin': 1, 'cumlogsumexp': 8}
_SCATTER_COMBINE = frozenset({'scatter-add', 'scatter-mul', 'scatter-min', 'scatter-max'})


def _expanded(eqn: Any) -> int:
    name = eqn.primitive.name
    per_element = _EXPANDED[name]
    itemsize = _itemsize(eqn.outvars[0])
    if itemsize == 8:
        per_element = _EXPANDED_FLOAT64.get(name, per_element)
    elif itemsize == 2 and name in _UPCAST_16BIT:
        per_element += len(eqn.invars) + 1
    return per_element * _out_size(eqn)


def _convert(eqn: Any) -> int:
    same = np.dtype(eqn.invars[0].aval.dtype) == np.dtype(eqn.params['new_dtype'])
    return 0 if same else _out_size(eqn)


def _integer_pow(eqn: Any) -> int:
    y = int(eqn.params['y'])
    magnitude = abs(y)
    if magnitude == 0:
        return 0
    multiplies = (magnitude.bit_length() - 1) + (magnitude.bit_count() - 1)
    return (multiplies + (1 if y < 0 else 0)) * _out_size(eqn)


def _select_n(eqn: Any) -> int:
    cases = len(eqn.invars) - 1
    predicate_is_bool = np.dtype(eqn.invars[0].aval.dtype) == np.bool_
    per_element = (cases - 1) * (1 if predicate_is_bool and cases == 2 else 2)
    return per_element * _out_size(eqn)


def _reduction(eqn: Any) -> int:
    return _size(eqn.invars[0]) - _out_size(eqn)


def _arg_reduction(eqn: Any) -> int:
    comparator = 9 if _is_floating(eqn.invars[0].aval.dtype) else 7
    return comparator * (_size(eqn.invars[0]) - _out_size(eqn))


def _cumulative(eqn: Any) -> int:
    length = eqn.invars[0].aval.shape[eqn.params['axis']]
    return _CUMULATIVE[eqn.primitive.name] * _out_size(eqn) * max(length - 1, 0)


def _reduce_window(eqn: Any) -> int:
    window = int(np.prod(eqn.params['window_dimensions'], dtype=np.int64))
    return _out_size(eqn) * max(window - 1, 0)


def _sort(eqn: Any) -> int:
    n = _size(eqn.invars[0])
    return n * math.ceil(math.log2(n)) if n > 1 else 0


def _scatter_combine(eqn: Any) -> int:
    return _size(eqn.invars[2])


def _threefry(eqn: Any) -> int:
    return 25 * _out_size(eqn) + 11


def _dot_general(eqn: Any) -> int:
    (lhs_contract, _), _ = eqn.params['dimension_numbers']
    lhs_shape = eqn.invars[0].aval.shape
    width = int(np.prod([lhs_shape[d] for d in lhs_contract], dtype=np.int64))
    return 2 * _out_size(eqn) * width


def _valid_pairs(in_size: int, kernel_size: int, out_size: int, stride: int, pad_low: int,
                 base_dilation: int, window_dilation: int) -> int:
    """(output, kernel) position pairs of one spatial dimension that read a real input element."""
    count = 0
    for k in range(kernel_size):
        for o in range(out_size):
            undilated = o * stride - pad_low + k * window_dilation
            if undilated % base_dilation:
                continue  # a hole of the lhs dilation
            if 0 <= undilated // base_dilation < in_size:
                count += 1
    return count


def _conv(eqn: Any) -> int:
    params = eqn.params
    lhs_spec, rhs_spec, out_spec = params['dimension_numbers']
    lhs, rhs, out = (eqn.invars[0].aval.shape, eqn.invars[1].aval.shape, eqn.outvars[0].aval.shape)
    pairs = 1
    for i in range(len(lhs_spec) - 2):
        pairs *= _valid_pairs(lhs[lhs_spec[2 + i]], rhs[rhs_spec[2 + i]], out[out_spec[2 + i]],
                              params['window_strides'][i], params['padding'][i][0],
                              params['lhs_dilation'][i], params['rhs_dilation'][i])
    in_features = lhs[lhs_spec[1]] // params['feature_group_count']
    batch = lhs[lhs_spec[0]] // params['batch_group_count']
    return 2 * in_features * out[out_spec[1]] * batch * pairs


def _cond(eqn: Any, consts: list) -> int:
    return max((_count(branch, None)[0] for branch in eqn.params['branches']), default=0)


def _while(eqn: Any, consts: list) -> int:
    return _count(eqn.params['cond_jaxpr'], None)[0] + _count(eqn.params['body_jaxpr'], None)[0]


def _scan(eqn: Any, consts: list) -> int:
    return _count(eqn.params['jaxpr'], None)[0]


# Calls are inlined by the lowering: constants flow into (and out of) their bodies.
_CALL_BODY = {'jit': 'jaxpr', 'checkpoint': 'jaxpr', 'custom_jvp_call': 'call_jaxpr',
              'custom_vjp_call': 'call_jaxpr', 'custom_vmap_call': 'call_jaxpr'}
def _fft(eqn) -> int:
    # XLA's count: 8 (a complex multiply-add, as two FMAs of two flops each) per operand element and per
    # floor(log2(n)) of each transformed length.
    log_factors = 1
    for n in eqn.params['fft_lengths']:
        log_factors *= max(int(n).bit_length() - 1, 0)
    return 8 * log_factors * int(np.prod(eqn.invars[0].aval.shape, dtype=np.int64))


# Special functions XLA expands into straight-line code: (flops per element, flops per call), measured from XLA's
# cost analysis for float32.
_SPECIAL_LOOPS = {'bessel_i0e': (83, 0), 'bessel_i1e': (83, 0)}


def _special_loop(eqn) -> int:
    per_element, per_call = _SPECIAL_LOOPS[eqn.primitive.name]
    return per_element * _out_size(eqn) + per_call


def _linear_solve(eqn: Any, consts: list) -> int:
    # The program runs the solve jaxpr (the matvec and transposed programs are only for derivative rules).
    return _count(eqn.params['jaxprs'][2], None)[0]


_LOOP_RULES = {'cond': _cond, 'while': _while, 'scan': _scan, 'custom_linear_solve': _linear_solve}

_RULES: dict[str, Callable[[Any], int]] = {
    **{name: _out_size for name in _ELEMENTWISE},
    **{name: (lambda eqn: 0) for name in _TRANSCENDENTAL | _FREE | _UNCOUNTED},
    **{name: _expanded for name in _EXPANDED},
    **{name: _reduction for name in _REDUCTIONS},
    **{name: _cumulative for name in _CUMULATIVE},
    **{name: _scatter_combine for name in _SCATTER_COMBINE},
    'convert_element_type': _convert,
    'integer_pow': _integer_pow,
    'select_n': _select_n,
    'mul_add': lambda eqn: 2 * _out_size(eqn),
    'argmax': _arg_reduction,
    'argmin': _arg_reduction,
    'reduce_window_sum': _reduce_window,
    'reduce_window_max': _reduce_window,
    'reduce_window_min': _reduce_window,
    'sort': _sort,
    'threefry2x32': _threefry,
    'dot_general': _dot_general,
    'conv_general_dilated': _conv,
    'fft': _fft,
    **{name: _special_loop for name in _SPECIAL_LOOPS},
}

# Equations the lowering evaluates at compile time when all their operands are constants.
_FOLDABLE = (_ELEMENTWISE | _TRANSCENDENTAL | frozenset(_EXPANDED) | frozenset({
    'convert_element_type', 'integer_pow', 'select_n', 'mul_add', 'broadcast_in_dim', 'reshape', 'squeeze',
    'transpose', 'slice', 'concatenate', 'pad', 'rev', 'copy', 'stop_gradient'}))


class _Const:
    """A value known at compile time; ``splat`` is its single repeated element when it has one."""

    __slots__ = ('splat',)

    def __init__(self, value: Any = None, splat: Any = None):
        if value is not None:
            flat = np.asarray(value).reshape(-1)
            splat = flat[0] if flat.size and bool(np.all(flat == flat[0])) else None
        self.splat = splat


_NOT_SPLAT = object()


def _splat(const: Any) -> Any:
    return _NOT_SPLAT if const is None or const.splat is None else const.splat


def _identity_operand(eqn: Any, consts: list) -> Any:
    """The operand index an identity equation returns unchanged (``x + 0`` -> x), or None."""
    name, splats = eqn.primitive.name, [_splat(c) for c in consts]

    def is_(i, value):
        return splats[i] is not _NOT_SPLAT and splats[i] == value

    if name == 'add' or (name == 'or' and eqn.outvars[0].aval.dtype == np.bool_):
        neutral = 0 if name == 'add' else False
        return 0 if is_(1, neutral) else 1 if is_(0, neutral) else None
    if name == 'sub':
        return 0 if is_(1, 0) else None
    if name == 'mul' or (name == 'and' and eqn.outvars[0].aval.dtype == np.bool_):
        neutral = 1 if name == 'mul' else True
        return 0 if is_(1, neutral) else 1 if is_(0, neutral) else None
    if name == 'select_n':
        cases = eqn.invars[1:]
        if splats[0] is not _NOT_SPLAT:
            return 1 + int(splats[0])
        if all(c is cases[0] for c in cases):
            return 1
    return None


def _atom_const(atom: Any, env: dict) -> Any:
    if hasattr(atom, 'val'):          # a Literal
        return _Const(atom.val)
    return env.get(atom)


def _count(jaxpr: Any, in_consts: Any) -> tuple[int, list]:
    """(FLOPs, constness of the outputs) of a (closed) jaxpr whose inputs have constness ``in_consts``."""
    inner = getattr(jaxpr, 'jaxpr', jaxpr)
    env: dict = {}
    for var, value in zip(getattr(inner, 'constvars', ()), getattr(jaxpr, 'consts', ())):
        env[var] = _Const(value)
    for var, const in zip(inner.invars, in_consts or ()):
        if const is not None:
            env[var] = const
    total = 0
    for eqn in inner.eqns:
        name = eqn.primitive.name
        consts = [_atom_const(a, env) for a in eqn.invars]
        if name in _CALL_BODY:
            flops, out_consts = _count(eqn.params[_CALL_BODY[name]], consts)
            total += flops
            env.update((v, c) for v, c in zip(eqn.outvars, out_consts) if c is not None)
            continue
        if name in _LOOP_RULES:
            total += _LOOP_RULES[name](eqn, consts)
            continue
        if name == 'const':
            env[eqn.outvars[0]] = _Const(getattr(eqn.params['value'], 'value', eqn.params['value']))
            continue
        rule = _RULES.get(name)
        if rule is None:
            reason = UNSUPPORTED.get(name, 'no counting rule is defined for it')
            raise NotImplementedError(f'FLOP count: cannot count primitive "{name}": {reason}.')
        if name in _FOLDABLE and consts and all(c is not None for c in consts):
            # Folded at compile time; data movement and dtype changes keep a splat.
            keeps_splat = name not in _ELEMENTWISE | _TRANSCENDENTAL | frozenset(_EXPANDED)
            splat = consts[0].splat if keeps_splat and len(consts) == 1 else None
            env.update((v, _Const(splat=splat)) for v in eqn.outvars)
            continue
        same = _identity_operand(eqn, consts)
        if same is not None:
            if consts[same] is not None:
                env[eqn.outvars[0]] = consts[same]
            continue
        total += int(rule(eqn))
        if name == 'gather' and consts[1] is None:
            total += _gather_fill_mask(eqn)
    out_consts = [_atom_const(a, env) for a in inner.outvars]
    return total, out_consts


def _gather_fill_mask(eqn: Any) -> int:
    if 'FILL_OR_DROP' not in str(eqn.params.get('mode')):
        return 0
    indices = eqn.invars[1].aval.shape
    vector = indices[-1] if indices else 1
    positions = int(np.prod(indices[:-1], dtype=np.int64)) if indices else 1
    return 3 * positions * vector + positions * (vector - 1) + _out_size(eqn)


def counted_primitives() -> frozenset:
    """The names of the primitives :func:`jaxpr_flops` has a rule for."""
    return frozenset(_RULES) | frozenset(_CALL_BODY) | frozenset(_LOOP_RULES) | {'const'}


def jaxpr_flops(jaxpr: Any) -> int:
    """The FLOPs of a (closed) jaxpr, by the rules in this module's docstring.

    Args:
        jaxpr: a ``ClosedJaxpr`` (as returned by ``fluxion.make_jaxpr``) or a ``Jaxpr``.

    Returns:
        The total count (an int >= 0).

    Raises:
        NotImplementedError: an equation's primitive has no rule; the message names it.
    """
    return _count(jaxpr, None)[0]


def count_flops(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """FLOPs of ``fun(*args, **kwargs)``: :func:`jaxpr_flops` of ``fluxion.make_jaxpr(fun)``.

    Arguments may be arrays or ``fluxion.ShapeDtypeStruct`` (nothing is computed).
    """
    return jaxpr_flops(fluxion.make_jaxpr(fun)(*args, **kwargs))
