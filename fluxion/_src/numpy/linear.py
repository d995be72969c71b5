"""Products: `dot`, `matmul`, `vdot`, `inner`, `outer`, `tensordot`, `einsum`, `kron`, `cross`."""

from __future__ import annotations

import functools
import string

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..lax import elementwise as ew
from ..lax import reductions as red
from ..lax import structural as st
from .util import check_out, asarray_arg, broadcast_shapes, promote_dtypes


def _out_sharding_arg(fn):
    """Adds JAX's `out_sharding=` keyword to a product: the result is typed and placed with that sharding (a
    PartitionSpec resolved against the current mesh, or a NamedSharding). In explicit sharding mode this is how a
    product contracting a dimension split on both operands names its result's sharding (without it, that product
    raises ShardingTypeError). Values are unchanged."""
    @functools.wraps(fn)
    def wrapped(*args, out_sharding=None, **kwargs):
        if out_sharding is None:
            return fn(*args, **kwargs)
        from ..placement import reshard
        from ..sharding import NamedSharding, as_sharding
        target = as_sharding(out_sharding, "out_sharding")
        with red.dot_out_sharding(tuple(target.spec) if isinstance(target, NamedSharding) else None):
            out = fn(*args, **kwargs)
        return reshard(out, target)
    return wrapped


def _prep(name, a, b):
    a, b = asarray_arg(a, name), asarray_arg(b, name)
    a, b = promote_dtypes(a, b)
    return a, b


def _pet(a, requested=None):
    """The preferred_element_type a product binds: the requested one, else (as jnp passes it, so jaxprs print
    `preferred_element_type=float32` like JAX's) the promoted operand dtype; None for bool, whose products the
    backend accumulates in int32. Either way the result dtype is the same, only the jaxpr's text differs."""
    if requested is not None:
        return requested
    dt = core.get_aval(a).dtype
    return None if dt == dtypes.bool_ else dt


@_out_sharding_arg
def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's `dot`: a scalar product, the inner product of vectors, the matrix product of 2-d arrays, and in general
    the sum over `a`'s last axis and `b`'s second-to-last (last for 1-d `b`).

    Args:
        a, b: array-likes, promoted to one dtype with JAX's rules.
        precision: passed to `lax.dot_general` (accepted; CPU products are computed at full precision).
        preferred_element_type: the accumulation/result dtype (default: the promoted operand dtype).

    Returns:
        An array of shape `a.shape[:-1] + b.shape[:-2] + b.shape[-1:]` (the contracted axes removed).

    Raises:
        TypeError: if the contracted dimensions differ in size (raised by `lax.dot_general`, as in JAX).

    >>> import fluxion.numpy as jnp
    >>> jnp.dot(jnp.array([1, 2]), jnp.array([3, 4]))
    Array(11, dtype=int32)
    >>> jnp.dot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
    Array([3, 7], dtype=int32)
    """
    a, b = _prep("dot", a, b)
    preferred_element_type = _pet(a, preferred_element_type)
    an, bn = core.get_aval(a).ndim, core.get_aval(b).ndim
    if an == 0 or bn == 0:
        return ew.mul(a, b) if core.get_aval(a).shape == core.get_aval(b).shape else (
            ew.mul(a, b))
    contract_b = 0 if bn == 1 else bn - 2
    return red.dot_general(a, b, (((an - 1,), (contract_b,)), ((), ())), precision, preferred_element_type)


@_out_sharding_arg
def matmul(a, b, *, precision=None, preferred_element_type=None):
    """The matrix product `a @ b`, batched and broadcast over leading dimensions (NumPy's `matmul`).

    Args:
        a, b: array-likes of at least 1 dimension; a 1-d `a` is a row vector, a 1-d `b` a column vector (the added
            dimension is removed from the result).
        precision: passed to `lax.dot_general` (accepted; CPU products are computed at full precision).
        preferred_element_type: the accumulation/result dtype (default: the promoted operand dtype).

    Returns:
        An array of shape `broadcast(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])`.

    Raises:
        ValueError: for scalar operands, or if the contracted dimensions differ.

    >>> import fluxion.numpy as jnp
    >>> jnp.matmul(jnp.array([[1, 2], [3, 4]]), jnp.array([[5], [6]]))
    Array([[17],
           [39]], dtype=int32)
    >>> jnp.matmul(jnp.ones((3, 2, 4)), jnp.ones(4)).shape
    (3, 2)
    """
    a, b = _prep("matmul", a, b)
    preferred_element_type = _pet(a, preferred_element_type)
    ashape, bshape = core.get_aval(a).shape, core.get_aval(b).shape
    if not ashape or not bshape:
        raise ValueError(f"matmul: operands must not be scalars, got shapes {ashape} and {bshape}")
    a_vec, b_vec = len(ashape) == 1, len(bshape) == 1
    if a_vec:
        a = st.reshape(a, (1,) + ashape)
    if b_vec:
        b = st.reshape(b, bshape + (1,))
    ashape, bshape = core.get_aval(a).shape, core.get_aval(b).shape
    if ashape[-1] != bshape[-2]:
        raise TypeError(f"matmul: contracting dimensions differ: shapes {ashape} and {bshape} "
                         f"({ashape[-1]} != {bshape[-2]})")
    batch = broadcast_shapes(ashape[:-2], bshape[:-2])
    nb = len(batch)
    if len(ashape) == 2 and len(bshape) == 2:
        out = red.dot_general(a, b, (((1,), (0,)), ((), ())), precision, preferred_element_type)
    elif len(bshape) == 2 and not b_vec or len(bshape) == 2:
        # (..., m, k) @ (k, n): fold the batch into the free dims of a.
        out = red.dot_general(a, b, (((len(ashape) - 1,), (0,)), ((), ())), precision, preferred_element_type)
        out = st.broadcast_in_dim(out, batch + out.shape[-2:], tuple(range(nb - (len(ashape) - 2), nb + 2))) \
            if core.get_aval(out).shape[:-2] != batch else out
    else:
        from .util import broadcast_to_shape
        a = broadcast_to_shape(a, batch + ashape[-2:])
        b = broadcast_to_shape(b, batch + bshape[-2:])
        bd = tuple(range(nb))
        out = red.dot_general(a, b, (((nb + 1,), (nb,)), (bd, bd)), precision, preferred_element_type)
    if a_vec:
        out = st.squeeze(out, (core.get_aval(out).ndim - 2,))
    if b_vec:
        out = st.squeeze(out, (core.get_aval(out).ndim - 1,))
    return out


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of `a` and `b` flattened to vectors, conjugating `a` if it is complex.

    Args:
        a, b: array-likes of equal size (any shapes), promoted to one dtype.
        precision: passed to `lax.dot_general` (accepted; CPU products are computed at full precision).
        preferred_element_type: the accumulation/result dtype (default: the promoted operand dtype).

    Returns:
        A 0-d array.

    Raises:
        TypeError: if the sizes differ.

    >>> import fluxion.numpy as jnp
    >>> jnp.vdot(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 0], [0, 1]]))
    Array(5, dtype=int32)
    >>> jnp.vdot(jnp.array([1j, 2]), jnp.array([1j, 1]))
    Array(3.+0.j, dtype=complex64)
    """
    a, b = _prep("vdot", a, b)
    if dtypes.is_complex(core.get_aval(a).dtype):
        a = ew.conj(a)
    return dot(st.reshape(a, (core.get_aval(a).size,)), st.reshape(b, (core.get_aval(b).size,)),
               precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """The Array API's vector dot product along `axis`: `sum(conj(x1) * x2, axis)`, broadcasting the other axes.

    Args:
        x1, x2: array-likes, broadcast together and promoted to one dtype.
        axis: the axis of the vectors (of the broadcast shape).
        precision, preferred_element_type: accepted for JAX compatibility and ignored (the product is summed with
            `sum`'s dtype rules).

    Returns:
        An array of the broadcast shape without `axis`.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.vecdot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
    Array([3, 7], dtype=int32)
    """
    x1, x2 = _prep("vecdot", x1, x2)
    if dtypes.is_complex(core.get_aval(x1).dtype):
        x1 = ew.conj(x1)
    from .reductions import sum as _sum
    from .ufuncs import multiply
    prod = multiply(x1, x2)
    # The result keeps the promoted input dtype (as JAX; a plain sum would widen small integers).
    return _sum(prod, axis=axis, dtype=core.get_aval(prod).dtype)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """The inner product over the last axes of `a` and `b` (for scalars: the plain product).

    Args:
        a, b: array-likes whose last dimensions have equal size, promoted to one dtype.
        precision: passed to `lax.dot_general` (accepted; CPU products are computed at full precision).
        preferred_element_type: the accumulation/result dtype (default: the promoted operand dtype).

    Returns:
        An array of shape `a.shape[:-1] + b.shape[:-1]`.

    Raises:
        TypeError: if the contracted dimensions differ in size (raised by `lax.dot_general`, as in JAX).

    >>> import fluxion.numpy as jnp
    >>> jnp.inner(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 0], [1, 1]]))
    Array([[1, 3],
           [3, 7]], dtype=int32)
    """
    a, b = _prep("inner", a, b)
    preferred_element_type = _pet(a, preferred_element_type)
    an, bn = core.get_aval(a).ndim, core.get_aval(b).ndim
    if an == 0 or bn == 0:
        from .ufuncs import multiply
        return multiply(a, b)
    return red.dot_general(a, b, (((an - 1,), (bn - 1,)), ((), ())), precision, preferred_element_type)


def outer(a, b, out=None):
    """The outer product of `a` and `b`, both flattened to vectors: `out[i, j] = a[i] * b[j]`.

    Args:
        a, b: array-likes of any shapes (flattened), promoted to one dtype.
        out: must be None (NotImplementedError otherwise, as in JAX).

    Returns:
        An array of shape `(a.size, b.size)`.

    >>> import fluxion.numpy as jnp
    >>> jnp.outer(jnp.array([1, 2]), jnp.array([1, 10, 100]))
    Array([[  1,  10, 100],
           [  2,  20, 200]], dtype=int32)
    """
    check_out(out, "outer")
    a, b = _prep("outer", a, b)
    a = st.reshape(a, (core.get_aval(a).size,))
    b = st.reshape(b, (core.get_aval(b).size,))
    n, m = core.get_aval(a).size, core.get_aval(b).size
    return ew.mul(st.broadcast_in_dim(a, (n, m), (0,)), st.broadcast_in_dim(b, (n, m), (1,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sums products of `a` and `b` over the given axis pairs.

    Args:
        a, b: array-likes, promoted to one dtype.
        axes: an int N (the last N axes of `a` with the first N of `b`), or a pair of axis sequences (or ints)
            listing the axes of `a` and of `b` to contract.
        precision: passed to `lax.dot_general` (accepted; CPU products are computed at full precision).
        preferred_element_type: the accumulation/result dtype (default: the promoted operand dtype).

    Returns:
        An array of `a`'s free axes followed by `b`'s free axes.

    Raises:
        TypeError: if the contracted dimensions differ in size (raised by `lax.dot_general`, as in JAX).

    >>> import fluxion.numpy as jnp
    >>> a = jnp.arange(6).reshape(2, 3)
    >>> jnp.tensordot(a, jnp.ones((3, 2), dtype=jnp.int32), axes=1)
    Array([[ 3,  3],
           [12, 12]], dtype=int32)
    >>> jnp.tensordot(a, a, axes=([0, 1], [0, 1]))
    Array(55, dtype=int32)
    """
    a, b = _prep("tensordot", a, b)
    preferred_element_type = _pet(a, preferred_element_type)
    an, bn = core.get_aval(a).ndim, core.get_aval(b).ndim
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ca, cb = tuple(range(an - n, an)), tuple(range(n))
    else:
        ax_a, ax_b = axes
        ca = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
        cb = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
        ca = tuple(x % an for x in ca)
        cb = tuple(x % bn for x in cb)
    return red.dot_general(a, b, ((ca, cb), ((), ())), precision, preferred_element_type)


@_out_sharding_arg
def einsum(subscripts, *operands, optimize="optimal", precision=None, preferred_element_type=None,
           _dot_general=None):
    """Einstein summation, evaluated as a sequence of pairwise `dot_general` contractions (left to right).

    Supports explicit (`'ij,jk->ik'`) and implicit (`'ij,jk'`) output, ellipses, repeated indices within an
    operand (diagonals) and indices summed out of a single operand.
    """
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the string subscripts form is supported")
    ops = [asarray_arg(o, "einsum") for o in operands]
    ops = promote_dtypes(*ops)
    if ops:
        preferred_element_type = _pet(ops[0], preferred_element_type)
    subs = subscripts.replace(" ", "")
    if "->" in subs:
        lhs, out = subs.split("->")
    else:
        lhs, out = subs, None
    in_specs = lhs.split(",")
    if len(in_specs) != len(ops):
        raise ValueError(f"einsum: {len(in_specs)} operand specs for {len(ops)} operands")
    # Expand ellipses into fresh letters.
    used = set(subs)
    free_letters = [c for c in string.ascii_letters if c not in used]
    max_ell = 0
    for spec, op in zip(in_specs, ops):
        if "..." in spec:
            max_ell = max(max_ell, core.get_aval(op).ndim - (len(spec) - 3))
    ell = "".join(free_letters[:max_ell])
    specs = []
    for spec, op in zip(in_specs, ops):
        if "..." in spec:
            n = core.get_aval(op).ndim - (len(spec) - 3)
            spec = spec.replace("...", ell[max_ell - n:])
        specs.append(spec)
    if out is None:
        counts = {}
        for s in specs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    sizes: dict = {}
    for spec, op in zip(specs, ops):
        for c, d in zip(spec, core.get_aval(op).shape):
            if c in sizes and sizes[c] != d and 1 not in (d, sizes[c]):
                raise ValueError(f"einsum: size of label '{c}' differs between operands ({sizes[c]} vs {d})")
            sizes[c] = d if c not in sizes or sizes[c] == 1 else sizes[c]
    ops = [_broadcast_ones(op, spec, sizes) for op, spec in zip(ops, specs)]
    ops_specs = [_einsum_reduce_single(op, spec, out, specs, i) for i, (op, spec) in enumerate(zip(ops, specs))]
    cur, cur_spec = ops_specs[0]
    for i in range(1, len(ops_specs)):
        nxt, nspec = ops_specs[i]
        rest = "".join(s for _, s in ops_specs[i + 1:]) + out
        cur, cur_spec = _contract_pair(cur, cur_spec, nxt, nspec, rest, preferred_element_type)
    # Sum letters not in the output, then permute.
    drop = tuple(i for i, c in enumerate(cur_spec) if c not in out)
    if drop:
        cur = red.reduce_sum(cur, drop)
        cur_spec = "".join(c for c in cur_spec if c in out)
    perm = tuple(cur_spec.index(c) for c in out)
    return st.transpose(cur, perm)


def _broadcast_ones(op, spec, sizes):
    shape = core.get_aval(op).shape
    target = tuple(sizes[c] for c in spec)
    if shape == target:
        return op
    return st.broadcast_in_dim(op, target, tuple(range(len(shape))))


def _einsum_reduce_single(op, spec, out, all_specs, i):
    # Take diagonals for repeated letters.
    while len(set(spec)) != len(spec):
        for c in spec:
            if spec.count(c) > 1:
                a = spec.index(c)
                b = spec.index(c, a + 1)
                from .shape import diagonal
                op = diagonal(op, 0, a, b)
                spec = spec[:a] + spec[a + 1:b] + spec[b + 1:] + c
                break
    others = "".join(s for j, s in enumerate(all_specs) if j != i) + out
    drop = tuple(k for k, c in enumerate(spec) if c not in others)
    if drop:
        op = red.reduce_sum(op, drop)
        spec = "".join(c for c in spec if c in others)
    return op, spec


def _contract_pair(a, sa, b, sb, rest, pet):
    batch = [c for c in sa if c in sb and c in rest]
    contract = [c for c in sa if c in sb and c not in rest]
    dn = ((tuple(sa.index(c) for c in contract), tuple(sb.index(c) for c in contract)),
          (tuple(sa.index(c) for c in batch), tuple(sb.index(c) for c in batch)))
    out = red.dot_general(a, b, dn, None, pet)
    spec = "".join(batch) + "".join(c for c in sa if c not in batch and c not in contract) + \
        "".join(c for c in sb if c not in batch and c not in contract)
    return out, spec


@staged_as_call("kron")
def kron(a, b):
    """The Kronecker product of `a` and `b`: block `(i, j)` of the result is `a[i, j] * b` (any ranks; the smaller rank
    is padded with leading size-1 axes).

    Args:
        a, b: array-likes, promoted to one dtype.

    Returns:
        An array of shape `a.shape * b.shape` (elementwise, after padding).

    >>> import fluxion.numpy as jnp
    >>> jnp.kron(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 1]]))
    Array([[1, 1, 2, 2],
           [3, 3, 4, 4]], dtype=int32)
    """
    a, b = _prep("kron", a, b)
    an, bn = core.get_aval(a).ndim, core.get_aval(b).ndim
    nd = max(an, bn)
    a = st.reshape(a, (1,) * (nd - an) + core.get_aval(a).shape)
    b = st.reshape(b, (1,) * (nd - bn) + core.get_aval(b).shape)
    sa, sb = core.get_aval(a).shape, core.get_aval(b).shape
    shape = tuple(x for pair in zip(sa, sb) for x in pair)
    ab = ew.mul(st.broadcast_in_dim(a, shape, tuple(range(0, 2 * nd, 2))),
                st.broadcast_in_dim(b, shape, tuple(range(1, 2 * nd, 2))))
    return st.reshape(ab, tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 2- or 3-vectors stored along an axis of `a` and `b`, broadcast over the other axes.

    Args:
        a, b: array-likes whose vector axes have size 2 or 3, promoted to one dtype. A 2-vector is read as a
            3-vector with a zero third component; when both are 2-vectors the result is the scalar z-component.
        axisa, axisb: the vector axes of `a` and `b`.
        axisc: the vector axis of the result.
        axis: if given, overrides all three.

    Returns:
        An array of the broadcast shape with the 3-vectors along `axisc` (for two 2-vectors: the broadcast
        shape without a vector axis).

    Raises:
        ValueError: if a vector axis has a size other than 2 or 3, or the other axes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))
    Array([0., 0., 1.], dtype=float32)
    """
    from .shape import moveaxis, stack
    from .util import broadcast_to_shape
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _prep("cross", a, b)
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    na, nb = core.get_aval(a).shape[-1:], core.get_aval(b).shape[-1:]
    if na not in ((2,), (3,)) or nb not in ((2,), (3,)):
        raise ValueError(f"cross: the vector axes must have size 2 or 3, got {core.get_aval(a).shape} (axisa="
                         f"{axisa}) and {core.get_aval(b).shape} (axisb={axisb})")
    a0, a1 = (st.index_in_dim(a, i, -1, False) for i in range(2))
    b0, b1 = (st.index_in_dim(b, i, -1, False) for i in range(2))
    shape = broadcast_shapes(core.get_aval(a0).shape, core.get_aval(b0).shape)
    if na == nb == (2,):
        a0, a1, b0, b1 = (broadcast_to_shape(x, shape) for x in (a0, a1, b0, b1))
        return ew.sub(ew.mul(a0, b1), ew.mul(a1, b0))
    # A 2-vector's missing third component is zero.
    a2 = st.index_in_dim(a, 2, -1, False) if na == (3,) else st.full(core.get_aval(a0).shape, 0, core.get_aval(a0).dtype)
    b2 = st.index_in_dim(b, 2, -1, False) if nb == (3,) else st.full(core.get_aval(b0).shape, 0, core.get_aval(b0).dtype)
    a0, a1, a2, b0, b1, b2 = (broadcast_to_shape(x, shape) for x in (a0, a1, a2, b0, b1, b2))
    c = stack([ew.sub(ew.mul(a1, b2), ew.mul(a2, b1)), ew.sub(ew.mul(a2, b0), ew.mul(a0, b2)),
               ew.sub(ew.mul(a0, b1), ew.mul(a1, b0))], -1)
    return moveaxis(c, -1, axisc)
