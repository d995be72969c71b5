"""What the compiler knows about `dot_general`: the roles of its operands' dimensions and the forms it takes.

A `dot_general` equation names, per operand, its *batch* dimensions (paired between the operands, leading the
result), its *contracted* dimensions (paired, summed over) and, implicitly, its *free* dimensions (the rest, in
order: the lhs's, then the rhs's, after the batch dimensions in the result). Every consumer works from that
analysis (`Contraction`):

* the NumPy path (`lowering`) calls `matmul`/`dot` when the product is a plain (batched) matrix or vector product
  (`matmul_form`), and runs other batched products as one `matmul` over views of the operands (`batched_product`,
  `batched_matmul`) instead of the backend's copies into contiguous (batch, m, k) and (batch, k, n) arrays;
  batched products of small matrices run their matrices on the chunk threads (`stacked_matmul`);
* loop kernels (`fusion.loops`) compute each result element with an explicit loop over the contracted indices
  (`operand_indices`), and expand products contracting a single element inline (`contracted_size` 1);
* the fused tier (`fusion.rewrite`) turns large dot products of two vectors into a fused sum (`is_vector_dot`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...lax.reductions import dot_general_p


class Contraction:
    """The dimension roles of one `dot_general` equation.

    Attributes:
      lhs_contract, rhs_contract: contracted dimensions of each operand (paired by position).
      lhs_batch, rhs_batch: batch dimensions of each operand (paired by position).
      lhs_free, rhs_free: the remaining dimensions of each operand, in order.
    """

    __slots__ = ("lhs_batch", "lhs_contract", "lhs_free", "rhs_batch", "rhs_contract", "rhs_free")

    def __init__(self, eqn):
        lhs, rhs = eqn.invars
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        self.lhs_contract, self.rhs_contract = tuple(lc), tuple(rc)
        self.lhs_batch, self.rhs_batch = tuple(lb), tuple(rb)
        self.lhs_free = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
        self.rhs_free = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]


def is_dot_general(eqn) -> bool:
    return eqn.primitive is dot_general_p


def computes_in_operand_dtype(eqn) -> bool:
    """Whether both operands and the result share one dtype (no `preferred_element_type` widening)."""
    lhs, rhs = eqn.invars
    dt = eqn.outvars[0].aval.dtype
    pref = eqn.params.get("preferred_element_type")
    return lhs.aval.dtype == rhs.aval.dtype == dt and (pref is None or np.dtype(pref) == dt)


def contracted_size(eqn) -> int:
    """How many products each result element sums (the product of the contracted extents)."""
    c = Contraction(eqn)
    return math.prod(eqn.invars[0].aval.shape[d] for d in c.lhs_contract)


def operand_indices(eqn, idx: Sequence[str], kidx: Sequence[str]) -> tuple[list, list]:
    """Index expressions of the operand elements multiplied into result element `idx`.

    Args:
      eqn: a `dot_general` equation.
      idx: one index expression per result dimension (batch dimensions, then lhs free, then rhs free).
      kidx: one index expression per contracted dimension pair.

    Returns:
      (lhs indices, rhs indices), one expression per operand dimension.
    """
    lhs, rhs = eqn.invars
    c = Contraction(eqn)
    li, ri = [None] * lhs.aval.ndim, [None] * rhs.aval.ndim
    pos = 0
    for a, b in zip(c.lhs_batch, c.rhs_batch):
        li[a] = ri[b] = idx[pos]
        pos += 1
    for a in c.lhs_free:
        li[a] = idx[pos]
        pos += 1
    for b in c.rhs_free:
        ri[b] = idx[pos]
        pos += 1
    for k, (a, b) in enumerate(zip(c.lhs_contract, c.rhs_contract)):
        li[a] = ri[b] = kidx[k]
    return li, ri


def matmul_form(eqn) -> str | None:
    """A NumPy expression template for `dot_general` when it is a plain (batched) matrix product, else None.

    The template uses `{a}`/`{b}` for the operands and the functions `dot`, `matmul` and `swap` (the last two axes
    swapped). It is only returned for float32/float64 operands of one dtype whose result dtype is that dtype, where
    `matmul` is what the backend implementation computes.
    """
    lhs, rhs = eqn.invars
    la, ra = lhs.aval, rhs.aval
    if la.dtype not in (np.float32, np.float64) or not computes_in_operand_dtype(eqn):
        return None
    c = Contraction(eqn)
    nb = len(c.lhs_batch)
    if (c.lhs_batch != tuple(range(nb)) or c.rhs_batch != tuple(range(nb)) or len(c.lhs_contract) != 1
            or len(c.rhs_contract) != 1):
        return None
    lfree, rfree = len(c.lhs_free), len(c.rhs_free)
    if lfree > 1 or rfree > 1:
        return None
    (l_c,), (r_c,) = c.lhs_contract, c.rhs_contract
    if nb == 0 and la.ndim == 1 and ra.ndim == 1:
        return "dot({a}, {b})"
    if lfree == 1 and rfree == 1:
        a = "{a}" if l_c == nb + 1 else "swap({a})"
        b = "{b}" if r_c == nb else "swap({b})"
        return f"matmul({a}, {b})"
    if lfree == 1 and rfree == 0:  # (..., m, k) x (..., k) -> (..., m)
        a = "{a}" if l_c == nb + 1 else "swap({a})"
        return f"matmul({a}, {{b}}[..., None])[..., 0]" if nb else f"matmul({a}, {{b}})"
    if lfree == 0 and rfree == 1:  # (..., k) x (..., k, n) -> (..., n)
        b = "{b}" if r_c == nb else "swap({b})"
        return f"matmul({{a}}[..., None, :], {b})[..., 0, :]" if nb else f"matmul({{a}}, {b})"
    return None


def swap(x):
    """`x` with its last two axes swapped (the `swap` of `matmul_form`'s templates)."""
    return np.swapaxes(x, -1, -2)


def is_vector_dot(eqn) -> bool:
    """Whether `eqn` is a dot product of two float32/float64 vectors (contracting their only axis) in their dtype."""
    if eqn.primitive is not dot_general_p:
        return False
    x, y = eqn.invars
    c = Contraction(eqn)
    return (x.aval.ndim == 1 and y.aval.ndim == 1 and c.lhs_contract == (0,) and c.rhs_contract == (0,)
            and not c.lhs_batch and not c.rhs_batch and computes_in_operand_dtype(eqn)
            and x.aval.dtype in (np.float32, np.float64))


class BatchedProduct:
    """How a batched `dot_general` runs as one `np.matmul` over views of its operands (see `batched_product`).

    Attributes:
      lhs_perm, rhs_perm: the operand transposes putting dimensions in (batch..., free, contracted) and
        (batch..., contracted, free) order.
      lhs_shape, rhs_shape: those transposes reshaped to (batch..., m, k) and (batch..., k, n), the free and
        contracted dimensions each merged into one.
      out_shape: the result's shape (batch..., lhs free..., rhs free...), a view of matmul's (batch..., m, n).
      stacked: whether the matrices run on the chunk threads (`stacked_matmul`, `threads.stacked_blas`).
    """

    __slots__ = ("lhs_perm", "lhs_shape", "out_shape", "rhs_perm", "rhs_shape", "stacked")

    def __init__(self, eqn):
        lhs, rhs = eqn.invars
        ls, rs = lhs.aval.shape, rhs.aval.shape
        c = Contraction(eqn)
        batch = tuple(ls[d] for d in c.lhs_batch)
        m = math.prod(ls[d] for d in c.lhs_free)
        n = math.prod(rs[d] for d in c.rhs_free)
        k = math.prod(ls[d] for d in c.lhs_contract)
        self.lhs_perm = (*c.lhs_batch, *c.lhs_free, *c.lhs_contract)
        self.rhs_perm = (*c.rhs_batch, *c.rhs_contract, *c.rhs_free)
        self.lhs_shape = (*batch, m, k)
        self.rhs_shape = (*batch, k, n)
        self.out_shape = tuple(eqn.outvars[0].aval.shape)
        from . import threads  # imported here: threads -> fusion -> loops -> this module
        self.stacked = threads.stacked_blas(eqn)

    def __repr__(self) -> str:
        return (f"BatchedProduct(lhs {self.lhs_perm} -> {self.lhs_shape}, rhs {self.rhs_perm} -> {self.rhs_shape}, "
                f"out {self.out_shape})")


def batched_product(eqn) -> BatchedProduct | None:
    """The plan for running a batched float32/float64 `dot_general` as `batched_matmul`, or None.

    Only products with batch dimensions whose operands and result share one float32/float64 dtype qualify (those
    without batch dimensions go through `np.tensordot`, which already hands strided layouts to BLAS). The backend
    implementation copies both operands into (batch, m, k) and (batch, k, n) C-contiguous arrays; `batched_matmul`
    computes the same products from views wherever the layout allows, which BLAS reads through its transpose flags
    and leading dimensions.
    """
    lhs, rhs = eqn.invars
    if lhs.aval.dtype not in (np.float32, np.float64) or not computes_in_operand_dtype(eqn):
        return None
    c = Contraction(eqn)
    if not c.lhs_batch:
        return None
    return BatchedProduct(eqn)


def blas_ready(x: np.ndarray) -> bool:
    """Whether NumPy's `matmul` hands each matrix of `x` (its last two axes) to BLAS as is: one of the two axes
    has unit stride and the other a stride of whole elements at least as long as the unit-stride axis. Other
    layouts make `matmul` fall back to its slow loop without BLAS, so `batched_matmul` copies them first."""
    r, c = x.shape[-2:]
    sr, sc = x.strides[-2:]
    size = x.itemsize
    return (sc == size and sr % size == 0 and sr >= size * c) or (sr == size and sc % size == 0 and sc >= size * r)


def batched_matmul(lhs, rhs, plan: BatchedProduct) -> np.ndarray:
    """`dot_general` of `lhs` and `rhs` by `plan` (from `batched_product`): one `np.matmul` over the batch.

    The transposes and reshapes are views where NumPy can express them as such (it copies otherwise); an operand
    whose matrices BLAS cannot read in place is made contiguous, as the backend implementation does always.
    Returns a C-contiguous array of `plan.out_shape`.
    """
    a = np.transpose(lhs, plan.lhs_perm).reshape(plan.lhs_shape)
    b = np.transpose(rhs, plan.rhs_perm).reshape(plan.rhs_shape)
    if not blas_ready(a):
        a = np.ascontiguousarray(a)
    if not blas_ready(b):
        b = np.ascontiguousarray(b)
    return (stacked_matmul(a, b) if plan.stacked else np.matmul(a, b)).reshape(plan.out_shape)


def stacked_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)` for stacks of matrices with the same leading (batch) dimensions, the stack split along its
    first axis between the chunk threads (`threads.run_chunks`), each matrix product on one BLAS thread.

    NumPy multiplies a stack one matrix at a time, so each matrix's product is the same BLAS call whichever thread
    makes it: the bits do not depend on the thread count. Generated code calls this for batched products whose
    matrices are below `threads.BLAS_MIN_WORK` multiply-adds and whose total is above it (`threads.stacked_blas`:
    the transformer's attention products, 32 x 4 matrices of 128 x 64 x 128): OpenBLAS would split each of those between its threads at a cost that a
    matrix of that size does not repay (see `threads`), and whole matrices per thread keep both cores busy.
    Other stacks (no batch dimension, broadcast batch dimensions, one leading matrix) go to `np.matmul` as is.
    """
    if a.ndim < 3 or a.shape[:-2] != b.shape[:-2] or a.shape[0] < 2:
        return np.matmul(a, b)
    from . import threads
    threads.one_blas_thread()
    if threads.current() <= 1:
        return np.matmul(a, b)   # the same per-matrix BLAS calls, without a Python call per matrix
    out = np.empty(a.shape[:-1] + b.shape[-1:], np.result_type(a.dtype, b.dtype))

    def make_body():
        def body(i):
            np.matmul(a[i], b[i], out=out[i])
        return body
    threads.run_chunks(a.shape[0], make_body)
    return out
