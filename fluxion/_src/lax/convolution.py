"""`conv_general_dilated` and its conveniences (`conv`, `conv_with_general_padding`, `conv_transpose`).

Semantics follow XLA's ConvWithGeneralPadding (https://openxla.org/xla/operation_semantics#conv_convolution):
`dimension_numbers` name which lhs/rhs/output dimensions are batch, feature and spatial; the lhs is dilated by
`lhs_dilation` (zeros inserted) and padded, the kernel is dilated by `rhs_dilation`, and windows step by
`window_strides`. `feature_group_count` G splits the input features (and the output features) into G independent
convolutions; `batch_group_count` B splits the lhs batch into B groups (group-major), each paired with a block of
output features.

The convolution is bilinear. Its transposes are convolutions again (the standard identities used by JAX's
`_conv_general_dilated_transpose_lhs/rhs`): the lhs cotangent convolves the output cotangent with the spatially
reversed kernel, strides and lhs dilation exchanging roles; the rhs cotangent convolves the lhs with the output
cotangent used as a kernel, the batch dimension becoming the contracted one.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from . import elementwise as ew
from . import structural as st
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Parameters: dimension numbers and padding
# --------------------------------------------------------------------------------------------------------------

class ConvDimensionNumbers(NamedTuple):
    """Which dimensions are which, as tuples of dimension indices.

    lhs_spec: (batch, feature, spatial...) of the lhs.
    rhs_spec: (output feature, input feature, spatial...) of the kernel.
    out_spec: (batch, feature, spatial...) of the output.
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers) -> tuple[tuple, tuple, tuple]:
    """Turns string specs like ('NHWC', 'HWIO', 'NHWC') into dimension-index permutations.

    Spatial dimensions are matched by letter and ordered as they appear in the kernel spec.

    Raises:
      TypeError: specs of different lengths, missing N/C/O/I letters, or mismatched spatial letters.
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if not (len(lhs_spec) == len(rhs_spec) == len(out_spec)):
        raise TypeError(f"conv dimension_numbers specs must have equal lengths, got {dimension_numbers}")
    for spec, letters, what in ((lhs_spec, "NC", "lhs"), (rhs_spec, "OI", "rhs"), (out_spec, "NC", "out")):
        if any(spec.count(c) != 1 for c in letters):
            raise TypeError(f"conv {what} spec {spec!r} must contain each of {letters!r} exactly once")
    rhs_spatial = [c for c in rhs_spec if c not in "OI"]
    for spec, what in ((lhs_spec, "lhs"), (out_spec, "out")):
        if sorted(c for c in spec if c not in "NC") != sorted(rhs_spatial):
            raise TypeError(f"conv {what} spec {spec!r} must have the same spatial dimensions as the rhs spec "
                            f"{rhs_spec!r}")
    lhs_perm = (lhs_spec.index("N"), lhs_spec.index("C")) + tuple(lhs_spec.index(c) for c in rhs_spatial)
    rhs_perm = (rhs_spec.index("O"), rhs_spec.index("I")) + tuple(rhs_spec.index(c) for c in rhs_spatial)
    out_perm = (out_spec.index("N"), out_spec.index("C")) + tuple(out_spec.index(c) for c in rhs_spatial)
    return lhs_perm, rhs_perm, out_perm


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Normalizes `dimension_numbers` (None, a ConvDimensionNumbers or three spec strings) for given shapes.

    None means (N, C, spatial...) for the lhs and output and (O, I, spatial...) for the kernel.

    Raises:
      TypeError: ranks differ, are below 2, or do not match the specs.
    """
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise TypeError(f"convolution requires lhs and rhs of equal rank, got shapes {tuple(lhs_shape)} and "
                        f"{tuple(rhs_shape)}")
    if nd < 2:
        raise TypeError(f"convolution requires operands of rank >= 2, got shape {tuple(lhs_shape)}")
    if dimension_numbers is None:
        iota = tuple(range(nd))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        dn = ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    elif len(dimension_numbers) == 3 and all(isinstance(s, str) for s in dimension_numbers):
        if any(len(s) != nd for s in dimension_numbers):
            raise TypeError(f"conv dimension_numbers {tuple(dimension_numbers)} must have length {nd} to match "
                            f"operands of shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}")
        dn = ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    else:
        raise TypeError("conv dimension_numbers must be None, a ConvDimensionNumbers or a tuple of three spec "
                        f"strings, got {dimension_numbers!r}")
    for spec in dn:
        if sorted(spec) != list(range(nd)):
            raise TypeError(f"conv dimension_numbers {dn} are not permutations of range({nd})")
    return dn


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding) -> list[tuple[int, int]]:
    """(low, high) padding per spatial dim for 'SAME', 'SAME_LOWER' or 'VALID' (explicit pairs pass through).

    'SAME' pads so the output has ceil(in / stride) elements, the extra element going to the high side;
    'SAME_LOWER' puts it on the low side.

    Raises:
      ValueError: an unknown padding string.
    """
    if not isinstance(padding, str):
        return [(int(lo), int(hi)) for lo, hi in padding]
    mode = padding.upper()
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    if mode not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"Unknown padding {padding!r}: expected 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        total = max((out - 1) * int(s) + int(w) - int(n), 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if mode == "SAME" else (big, small))
    return pads


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _ints(xs) -> tuple:
    return tuple(int(x) for x in xs)


def conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding, lhs_dilation,
                         rhs_dilation) -> list[tuple[int, int]]:
    """Padding of the transposed (input-gradient) convolution: used by reduce_window_sum's transpose too."""
    pads = []
    for n, k, s, m, (lo, _), ld, rd in zip(in_shape, window_dimensions, window_strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation):
        span = _dilate(k, rd)
        before = span - lo - 1
        pads.append((before, _dilate(n, ld) + span - 1 - _dilate(m, s) - before))
    return pads


# --------------------------------------------------------------------------------------------------------------
# Reshaping helpers (moving a dimension into/out of another)
# --------------------------------------------------------------------------------------------------------------

def _merge_axis_into(src: int, dst: int, x):
    """Merges axis `src` into axis `dst` as its major part; `dst` is indexed before the removal of `src`."""
    shape = core.get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    pos = perm.index(dst)
    perm.insert(pos, src)
    x = st.transpose(x, perm)
    new_shape = [shape[i] for i in perm]
    new_shape[pos:pos + 2] = [new_shape[pos] * new_shape[pos + 1]]
    return st.reshape(x, new_shape)


def _split_axis(axis: int, major: int, minor: int, x):
    """Splits axis `axis` of size major * minor into (major, minor) at positions (axis, axis + 1)."""
    shape = list(core.get_aval(x).shape)
    shape[axis:axis + 1] = [major, minor]
    return st.reshape(x, shape)


def _swap_first_two(spec: tuple) -> tuple:
    return (spec[1], spec[0]) + tuple(spec[2:])


# --------------------------------------------------------------------------------------------------------------
# conv_general_dilated and its conveniences
# --------------------------------------------------------------------------------------------------------------

conv_general_dilated_p = standard_primitive("conv_general_dilated", weak_type="all")
core.param_print_rules[conv_general_dilated_p] = lambda params: {**params, "out_sharding": None}  # (JAX's)


def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """General n-d convolution with dilations, padding and grouping (XLA's Conv).

    Args:
      lhs: input of rank n+2.
      rhs: kernel of rank n+2 (same dtype).
      window_strides: n strides.
      padding: 'SAME', 'SAME_LOWER', 'VALID' or n (low, high) pairs (negative values crop).
      lhs_dilation, rhs_dilation: n dilation factors each (default 1).
      dimension_numbers: None, a ConvDimensionNumbers, or specs like ('NHWC', 'HWIO', 'NHWC').
      feature_group_count, batch_group_count: grouping (see the module docstring).
      precision: accepted for compatibility (NumPy computes at full precision).
      preferred_element_type: the output dtype.

    Returns:
      The convolution, laid out per `dimension_numbers`' output spec.

    Raises:
      TypeError: mismatched ranks, dtypes, feature counts or parameter lengths.
      ValueError: string padding combined with lhs dilation (use explicit pairs or conv_transpose).
    """
    lhs, rhs = ew._lift_scalars(lhs, rhs)
    l_shape, r_shape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
    dn = conv_dimension_numbers(l_shape, r_shape, dimension_numbers)
    nsp = len(l_shape) - 2
    lhs_dilation = (1,) * nsp if lhs_dilation is None else _ints(lhs_dilation)
    rhs_dilation = (1,) * nsp if rhs_dilation is None else _ints(rhs_dilation)
    window_strides = _ints(window_strides)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("conv_general_dilated: string padding is not supported together with lhs_dilation; "
                             "give explicit (low, high) pairs or use conv_transpose")
        spans = [_dilate(r_shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dilation)]
        padding = padtype_to_pads([l_shape[d] for d in dn.lhs_spec[2:]], spans, window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    pet = dtypes.canonicalize_dtype(preferred_element_type) if preferred_element_type is not None else None
    params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dn, feature_group_count=int(feature_group_count),
                  batch_group_count=int(batch_group_count), precision=None, preferred_element_type=pet)
    # Validate here too: the eager path runs the NumPy implementation without abstract evaluation.
    _conv_general_dilated_abstract_eval(core.get_aval(lhs), core.get_aval(rhs), **params)
    return conv_general_dilated_p.bind(lhs, rhs, **params)


def conv(lhs, rhs, window_strides: Sequence[int], padding: str, precision=None, preferred_element_type=None):
    """Convolution of NCHW-style lhs with OIHW-style rhs (no dilation)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides: Sequence[int], padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """Convolution in NCHW/OIHW layout with explicit padding and dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k: int, s: int, padding: str) -> tuple[int, int]:
    # Padding of the fractionally strided convolution that makes conv_transpose the shape-inverse of a strided
    # 'SAME'/'VALID' convolution (the convention of JAX's conv_transpose).
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        raise ValueError(f"conv_transpose padding must be 'SAME', 'VALID' or (low, high) pairs, got {padding!r}")
    return lo, total - lo


def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """Transposed ("fractionally strided") convolution: the lhs is dilated by `strides`.

    Args:
      lhs, rhs: input and kernel of rank n+2.
      strides: n fractional strides (the lhs dilation).
      padding: 'SAME', 'VALID' or n (low, high) pairs. With `use_consistent_padding`, pairs are the padding of the
        forward convolution this one transposes (PyTorch's convention): each side gets
        dilated_kernel - 1 - pad.
      rhs_dilation: kernel dilation.
      dimension_numbers: as for conv_general_dilated; defaults to ('NHC','HIO','NHC'), ('NHWC','HWIO','NHWC'), ...
      transpose_kernel: flip the kernel spatially and swap its input/output feature dims (TensorFlow's
        Conv2DTranspose convention).

    Returns:
      The transposed convolution.
    """
    lhs, rhs = ew._lift_scalars(lhs, rhs)
    l_shape, r_shape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
    nd = len(l_shape)
    if nd < 2:
        raise TypeError(f"conv_transpose requires operands of rank >= 2, got shape {l_shape}")
    if dimension_numbers is None:
        sp = "HWDXYZ"[:nd - 2] if nd <= 8 else None
        if sp is None:
            raise TypeError("conv_transpose: give dimension_numbers for operands of rank > 8")
        dimension_numbers = ("N" + sp + "C", sp + "IO", "N" + sp + "C")
    dn = conv_dimension_numbers(l_shape, r_shape, dimension_numbers)
    nsp = nd - 2
    rhs_dilation = (1,) * nsp if rhs_dilation is None else _ints(rhs_dilation)
    spans = [_dilate(r_shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dilation)]
    strides = _ints(strides)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding.upper()) for k, s in zip(spans, strides)]
    elif use_consistent_padding:
        padding = [(k - 1 - int(lo), k - 1 - int(hi)) for k, (lo, hi) in zip(spans, padding)]
    if transpose_kernel:
        rhs = st.rev(rhs, dn.rhs_spec[2:])
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = st.transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, padding, lhs_dilation=strides, rhs_dilation=rhs_dilation,
                                dimension_numbers=dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_general_dilated_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                                        dimension_numbers, feature_group_count, batch_group_count, precision=None,
                                        preferred_element_type=None):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"conv_general_dilated requires operands of one dtype, got {lhs.dtype.name} and "
                        f"{rhs.dtype.name}")
    nsp = lhs.ndim - 2
    for name, v in (("window_strides", window_strides), ("padding", padding), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise TypeError(f"conv_general_dilated: {name} {tuple(v)} must have one entry per spatial dimension "
                            f"({nsp})")
    if any(s < 1 for s in window_strides) or any(d < 1 for d in lhs_dilation + rhs_dilation):
        raise TypeError("conv_general_dilated: strides and dilations must be positive")
    g, b = feature_group_count, batch_group_count
    if g < 1 or b < 1 or (g > 1 and b > 1):
        raise TypeError(f"conv_general_dilated: feature_group_count={g} and batch_group_count={b} must be >= 1 and "
                        "not both > 1")
    n, c = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    o, i = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    if c % g or c // g != i:
        raise TypeError(f"conv_general_dilated: lhs feature dimension ({c}) must equal feature_group_count ({g}) "
                        f"times the rhs input feature dimension ({i}); lhs shape {lhs.shape}, rhs shape {rhs.shape}")
    if o % g:
        raise TypeError(f"conv_general_dilated: rhs output feature dimension ({o}) must be a multiple of "
                        f"feature_group_count ({g})")
    if n % b or o % b:
        raise TypeError(f"conv_general_dilated: lhs batch ({n}) and rhs output features ({o}) must be multiples of "
                        f"batch_group_count ({b})")
    spatial = []
    for k in range(nsp):
        size = _dilate(lhs.shape[lhs_spec[2 + k]], lhs_dilation[k]) + padding[k][0] + padding[k][1]
        span = _dilate(rhs.shape[rhs_spec[2 + k]], rhs_dilation[k])
        spatial.append(max(0, (size - span) // window_strides[k] + 1) if size >= span else 0)
    canonical = [n // b, o] + spatial
    shape = [0] * lhs.ndim
    for pos, dim in enumerate(out_spec):
        shape[dim] = canonical[pos]
    dt = preferred_element_type if preferred_element_type is not None else lhs.dtype
    return ShapedArray(tuple(shape), dt)


abstract_eval_rules[conv_general_dilated_p] = _conv_general_dilated_abstract_eval


def _like_cotangent(x, ct):
    """`x` cast to the cotangent's dtype: with preferred_element_type the output (and its cotangent) may be wider
    than the operands, and the transposed convolution needs operands of one dtype."""
    ct_dtype = core.get_aval(ct).dtype
    return x if core.get_aval(x).dtype == ct_dtype else ew.convert_element_type(x, ct_dtype)


def _conv_general_dilated_transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                                        dimension_numbers, feature_group_count, batch_group_count, precision=None,
                                        preferred_element_type=None):
    """The lhs cotangent: the output cotangent convolved with the spatially reversed kernel."""
    lhs_shape, lhs_dtype = lhs.aval.shape, lhs.aval.dtype
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    r_shape = core.get_aval(rhs).shape
    ct_shape = core.get_aval(ct).shape
    rhs = _like_cotangent(rhs, ct)
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:
        # Move the group factor of the kernel's output features into its input features, so that after swapping
        # the two, each group's transposed kernel maps that group's output features back to its input features.
        o, i = rhs_spec[0], rhs_spec[1]
        rhs = _split_axis(o, groups, r_shape[o] // groups, rhs)
        rhs = _merge_axis_into(o, i + (i > o), rhs)
    pads = conv_vjp_lhs_padding([lhs_shape[d] for d in lhs_spec[2:]], [r_shape[d] for d in rhs_spec[2:]],
                                window_strides, [ct_shape[d] for d in out_spec[2:]], padding, lhs_dilation,
                                rhs_dilation)
    trans_dn = ConvDimensionNumbers(out_spec, _swap_first_two(rhs_spec), lhs_spec)
    out = conv_general_dilated_p.bind(
        ct, st.rev(rhs, rhs_spec[2:]), window_strides=tuple(lhs_dilation), padding=tuple(map(tuple, pads)),
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation), dimension_numbers=trans_dn,
        feature_group_count=groups, batch_group_count=1, precision=None, preferred_element_type=lhs_dtype)
    if batch_group_count > 1:
        # The features came out as (group, C); the groups belong to the lhs batch (group-major).
        out = _split_axis(lhs_spec[1], batch_group_count, lhs_shape[lhs_spec[1]], out)
        f, n = lhs_spec[1], lhs_spec[0]
        out = _merge_axis_into(f, n + (n > f), out)
    return out


def _conv_general_dilated_transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                                        dimension_numbers, feature_group_count, batch_group_count, precision=None,
                                        preferred_element_type=None):
    """The rhs cotangent: the lhs convolved with the output cotangent used as a kernel."""
    rhs_shape, rhs_dtype = rhs.aval.shape, rhs.aval.dtype
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    l_shape = core.get_aval(lhs).shape
    ct_shape = core.get_aval(ct).shape
    lhs = _like_cotangent(lhs, ct)
    pads = []
    for k in range(len(padding)):
        span = _dilate(rhs_shape[rhs_spec[2 + k]], rhs_dilation[k])
        in_dilated = _dilate(l_shape[lhs_spec[2 + k]], lhs_dilation[k])
        out_dilated = _dilate(ct_shape[out_spec[2 + k]], window_strides[k])
        lo = padding[k][0]
        pads.append((lo, out_dilated - in_dilated + span - lo - 1))
    # Feature groups of the forward conv become batch groups of this one and vice versa.
    trans_dn = ConvDimensionNumbers(_swap_first_two(lhs_spec), _swap_first_two(out_spec), _swap_first_two(rhs_spec))
    return conv_general_dilated_p.bind(
        lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads), lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides), dimension_numbers=trans_dn, feature_group_count=batch_group_count,
        batch_group_count=feature_group_count, precision=None, preferred_element_type=rhs_dtype)


ad.defbilinear(conv_general_dilated_p, _conv_general_dilated_transpose_lhs, _conv_general_dilated_transpose_rhs)


def _conv_general_dilated_batch_rule(vals, dims, *, dimension_numbers, feature_group_count, batch_group_count,
                                     **params):
    """Folds the vmapped dimension into the batch, the output features or the feature groups."""
    lhs, rhs = vals
    d_lhs, d_rhs = dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    G, B = feature_group_count, batch_group_count
    # Logical (per-example) sizes, needed to split merged dims even for an empty batch.
    n_lhs = core.get_aval(lhs).shape[lhs_spec[0] + (d_lhs is not None and d_lhs <= lhs_spec[0])]
    n_out = core.get_aval(rhs).shape[rhs_spec[0] + (d_rhs is not None and d_rhs <= rhs_spec[0])]
    kw = dict(params, dimension_numbers=dimension_numbers)

    if size == 0:
        # An empty batch: nothing to fold; build the (empty) result from the per-example output type.
        l_aval = core.get_aval(lhs) if d_lhs is None else _drop_axis(core.get_aval(lhs), d_lhs)
        r_aval = core.get_aval(rhs) if d_rhs is None else _drop_axis(core.get_aval(rhs), d_rhs)
        out_aval = _conv_general_dilated_abstract_eval(l_aval, r_aval, feature_group_count=G, batch_group_count=B, **kw)
        return st.full((0,) + out_aval.shape, 0, out_aval.dtype), 0

    def bind(l, r, g, b):
        return conv_general_dilated_p.bind(l, r, feature_group_count=g, batch_group_count=b, **kw)

    if d_lhs is not None and d_rhs is not None:
        lhs = batching.moveaxis(lhs, d_lhs, 0, size)
        rhs = batching.moveaxis(rhs, d_rhs, 0, size)
        if B > 1:
            # More batch groups: lhs batch (S, B, N/B) and kernel output features (S, B, O/B).
            lhs = _merge_axis_into(0, lhs_spec[0] + 1, lhs)
            rhs = _merge_axis_into(0, rhs_spec[0] + 1, rhs)
            out = bind(lhs, rhs, G, size * B)
        else:
            # More feature groups: lhs features (S, G, C/G) and kernel output features (S, G, O/G).
            lhs = _merge_axis_into(0, lhs_spec[1] + 1, lhs)
            rhs = _merge_axis_into(0, rhs_spec[0] + 1, rhs)
            out = bind(lhs, rhs, size * G, B)
        return _split_axis(out_spec[1], size, n_out, out), out_spec[1]

    if d_lhs is not None:
        lhs = batching.moveaxis(lhs, d_lhs, 0, size)
        n = lhs_spec[0] + 1
        if B > 1:
            # Keep the batch groups outermost: lhs batch (B, S, N/B).
            lhs = _split_axis(n, B, n_lhs // B, lhs)
            lhs = _merge_axis_into(0, n + 1, lhs)
            lhs = _merge_axis_into(n - 1, n, lhs)
        else:
            lhs = _merge_axis_into(0, n, lhs)
        out = bind(lhs, rhs, G, B)
        return _split_axis(out_spec[0], size, n_lhs // B, out), out_spec[0]

    rhs = batching.moveaxis(rhs, d_rhs, 0, size)
    o = rhs_spec[0] + 1
    groups = max(G, B)
    if groups > 1:
        # Keep the groups outermost: kernel output features (groups, S, O/groups).
        rhs = _split_axis(o, groups, n_out // groups, rhs)
        rhs = _merge_axis_into(0, o + 1, rhs)
        rhs = _merge_axis_into(o - 1, o, rhs)
        out = bind(lhs, rhs, G, B)
        f = out_spec[1]
        out = _split_axis(f, groups, size * n_out // groups, out)  # (groups, S * O/groups)
        out = _split_axis(f + 1, size, n_out // groups, out)      # (groups, S, O/groups)
        out = _merge_axis_into(f, f + 2, out)      # (S, groups * O/groups)
        return out, f
    rhs = _merge_axis_into(0, o, rhs)
    out = bind(lhs, rhs, G, B)
    return _split_axis(out_spec[1], size, n_out, out), out_spec[1]


def _drop_axis(aval: ShapedArray, axis: int) -> ShapedArray:
    return ShapedArray(aval.shape[:axis] + aval.shape[axis + 1:], aval.dtype)


batching.primitive_batchers[conv_general_dilated_p] = _conv_general_dilated_batch_rule
