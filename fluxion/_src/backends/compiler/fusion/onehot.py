"""A scatter kernel for one-hot encodings: `convert(eq(arange(K)[None, :], labels[:, None]))`.

The generic kernel compares every output element (a loop of K per row that LLVM does not vectorize well: 160 us for
60,000 x 10 on one core of the benchmark machine). When one side of the comparison is a constant equal to
`arange(K)` along the last axis and the other side varies only along the first, each row holds at most one 1 (at
column `label`, if 0 <= label < K): the kernel zero-fills a chunk of rows (a vectorized fill) and then writes one
element per row (44 us on one core). This is the loop PyTorch's `one_hot` runs; JAX users write it as the
vmapped comparison above, or `jax.nn.one_hot`.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ....core import ClosedJaxpr, Literal
from ....lax.elementwise import convert_element_type_p, eq_p
from ....lax.structural import broadcast_in_dim_p, iota_p, reshape_p
from .. import ir
from .kernel import SMALL_EXTENT, KernelSpec
from .scalar import np_type, numba_type

# Rows per chunk (the unit of the zero fill and of the parallel loop).
CHUNKS = 16


# Equations whose results `_static_value` computes at compile time (with the backend's own implementations, as
# constant folding does): what an `arange` becomes on its way to a comparison.
_STATIC = frozenset({iota_p, reshape_p, broadcast_in_dim_p})


def _static_value(x, producers: dict, consts: dict):
    """The value of `x` if it is known at compile time (a constant, an iota, or reshapes/broadcasts of one)."""
    if type(x) is Literal:
        return None
    if x in consts:
        return np.asarray(consts[x])
    e = producers.get(x)
    if e is None or e.primitive not in _STATIC or e.primitive.impl is None:
        return None
    vals = [_static_value(v, producers, consts) for v in e.invars]
    if any(v is None for v in vals):
        return None
    return np.asarray(e.primitive.impl(*vals, **e.params))


def _label_source(x, producers: dict, n: int):
    """The array of labels `x` broadcasts along the second axis: a variable with n elements whose non-unit axes
    all map to the first axis of the domain, or None."""
    b = producers.get(x) if type(x) is not Literal else None
    if b is None or b.primitive is not broadcast_in_dim_p or type(b.invars[0]) is Literal:
        return None
    src = b.invars[0]
    varying = [d for k, d in enumerate(b.params["broadcast_dimensions"]) if src.aval.shape[k] != 1]
    if varying != [0] or int(np.prod(src.aval.shape)) != n or src.aval.dtype.kind not in "iu":
        return None
    return src


def match(closed: ClosedJaxpr, members: list, needed: set, domain: tuple, parallel: bool,
          version: int) -> KernelSpec | None:
    """A one-hot kernel for the group `members` of `closed`'s equations, or None if it is not that pattern.

    The group must compute exactly `eq(a, b)` (optionally converted to another dtype) over a 2-D domain (N, K), with
    `a` known at compile time and equal to `arange(K)` along axis 1 (a constant or an iota, possibly reshaped and
    broadcast) and `b` a broadcast along axis 1 of N integer labels (either operand order), and only the final
    value needed outside the group.
    """
    if len(domain) != 2:
        return None
    eqns = closed.jaxpr.eqns
    group = [eqns[i] for i in members]
    prims = [e.primitive for e in group]
    if prims.count(eq_p) != 1 or any(p not in (eq_p, convert_element_type_p, broadcast_in_dim_p, iota_p)
                                     for p in prims):
        return None
    eq = group[prims.index(eq_p)]
    last = group[-1]
    if last is not eq and not (last.primitive is convert_element_type_p and last.invars[0] is eq.outvars[0]):
        return None
    if set(needed) != {last.outvars[0]}:
        return None
    producers = ir.producers(closed.jaxpr)
    consts = {v: getattr(c, "_value", c) for v, c in zip(closed.jaxpr.constvars, closed.consts)}
    n, k = domain
    for a, b in (eq.invars, eq.invars[::-1]):
        labels = _label_source(b, producers, n)
        if labels is None:
            continue
        value = _static_value(a, producers, consts)
        if value is not None and value.shape == (n, k) and value.dtype.kind in "iu" and \
                np.array_equal(value, np.broadcast_to(np.arange(k), (n, k))):
            break
    else:
        return None
    out = last.outvars[0]
    spec = KernelSpec()
    spec.parallel = parallel
    spec.inputs = [(labels, tuple(labels.aval.shape), (n,))]
    spec.outputs = [(out, (n, k))]
    one = "True" if out.aval.dtype == np.bool_ else f"{np_type(out.aval.dtype)}(1)"
    zero = "False" if out.aval.dtype == np.bool_ else f"{np_type(out.aval.dtype)}(0)"
    loop = "numba.prange" if parallel else "range"
    # The number of rows comes from the arguments (one compiled kernel serves them all); so does the number of
    # classes unless it is small enough to be a constant (`kernel.SMALL_EXTENT`).
    body = [
        "n = out0.shape[0]",
        f"k = {k}" if k <= SMALL_EXTENT else "k = out0.shape[1]",
        f"rows = (n + {CHUNKS - 1}) // {CHUNKS}",
        f"for c in {loop}({CHUNKS}):",
        "    lo = min(c * rows, n)",
        "    hi = min(lo + rows, n)",
        "    flat = out0[lo:hi].reshape((hi - lo) * k)",
        "    for j in range(flat.shape[0]):",
        f"        flat[j] = {zero}",
        "    for i in range(lo, hi):",
        "        label = in0[i]",
        "        if label >= 0 and label < k:",
        f"            out0[i, label] = {one}",
    ]
    header = [
        "# Generated by fluxion's compiler (fusion, one-hot scatter). Do not edit: the file name is the hash of this.",
        f"# helpers version {version}",
        "import numba",
        "import numpy as np",
        "from numba import types",
        "",
        f"SIGNATURE = types.void(types.Array({numba_type(labels.aval.dtype)}, 1, 'C', readonly=True), "
        f"types.Array({numba_type(out.aval.dtype)}, 2, 'C'))",
        "",
        "",
        f"@numba.njit(SIGNATURE, parallel={parallel}, cache=True, error_model='numpy', nogil=True)",
        "def kernel(in0, out0):",
    ]
    spec.source = "\n".join(header + ["    " + ln for ln in body]) + "\n"
    spec.digest = hashlib.sha256(spec.source.encode()).hexdigest()[:24]
    return spec
