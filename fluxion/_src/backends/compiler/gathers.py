"""Numba source for XLA's general `gather`, `scatter` and `scatter-add`, for the whole-step tier (`wholestep`).

A training step that picks one entry per row -- the log-probability of the action taken, `take_along_axis(logp,
actions[:, None], axis=1)`, as in a policy-gradient loss -- has a `gather` in its forward pass and a `scatter-add`
(the gather's transpose) in its gradient. The backend computes both with one index array per operand dimension and
NumPy's advanced indexing (`backends.eager.indexing`); inside one native function they become plain loops, written
here for the equation's static shapes and dimension numbers.

Each function loops over its result (gather) or its updates (scatters) in C order and computes, per element, the
operand index XLA's definition gives: the start index read from `indices` (whose last axis is the index vector, as
fluxion's `gather_p`/`scatter_p` always have it) for the dimensions in `start_index_map` /
`scatter_dims_to_operand_dims`, plus the window offset for window dimensions, or the batch position for batching
dimensions. Out-of-bounds starts follow the backend (see `fluxion._src.lax.indexing.GatherScatterMode`): CLIP (and,
for gather, PROMISE_IN_BOUNDS) clamps the start so the window is in bounds; otherwise a gather fills the window with
`fill_value` (the dtype's default when None) and a scatter drops it. Scatter-add accumulates in the updates' C order,
the order of the backend's `np.add.at`, so results are identical bit for bit (and so are the scatter's, where the
last of several updates to one element wins, as in NumPy's assignment).
"""

from __future__ import annotations

import numpy as np

from ..eager.indexing import _mode_name, default_fill_value
from .fusion.scalar import literal_source


def _index(names: list) -> str:
    """An index expression for a 0-d (`()`), 1-d (`i,`) or n-d array."""
    return "()" if not names else ", ".join(names) + ("," if len(names) == 1 else "")


def _starts(batch: list, k: int, limit: int, clamp: bool, lines: list, pad: str) -> str:
    """Appends the statements reading start index `k` (clamped to [0, limit] with `clamp`); returns its name."""
    name = f"s{k}"
    read = f"np.int64(indices[{_index(batch + [str(k)])}])"
    lines.append(f"{pad}{name} = {'min(max(' + read + ', 0), ' + str(max(limit, 0)) + ')' if clamp else read}")
    return name


def _loops(var: str, shape: tuple, lines: list) -> str:
    """Appends loops `for {var}0 in range(...)`, ... over `shape` (C order); returns the body's indentation."""
    pad = "    "
    for i, n in enumerate(shape):
        lines.append(f"{pad}for {var}{i} in range({n}):")
        pad += "    "
    return pad


def _operand_index(rank: int, starts: dict, batching: dict, window: dict) -> list:
    """Per operand dimension, the index expression: its start index (`starts`: name per dimension), plus its window
    offset (`window`: loop variable per dimension), or its batch position (`batching`); 0 where none applies."""
    idx = []
    for d in range(rank):
        terms = [t[d] for t in (starts, batching, window) if d in t]
        idx.append(" + ".join(terms) or "0")
    return idx


def gather_function(eqn, name: str) -> str:
    """Source of `name(operand, indices, out)`, filling `out` (the result's shape, C-contiguous) with the gather
    `eqn` computes."""
    operand, indices = eqn.invars
    p = eqn.params
    dn, sizes = p["dimension_numbers"], tuple(p["slice_sizes"])
    op_shape, out_shape = operand.aval.shape, eqn.outvars[0].aval.shape
    batch_rank = indices.aval.ndim - 1
    window_dims = [d for d in range(len(op_shape))
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    # The result interleaves batch dimensions (the indices' leading ones) and window dimensions (at offset_dims).
    batch_vars, window_vars = [], []
    for i in range(len(out_shape)):
        (window_vars if i in dn.offset_dims else batch_vars).append(f"i{i}")
    clamp = _mode_name(p.get("mode")) in ("CLIP", "PROMISE_IN_BOUNDS")
    lines = [f"def {name}(operand, indices, out):"]
    pad = _loops("i", out_shape, lines)
    starts = {}
    for k, d in enumerate(dn.start_index_map):
        starts[d] = _starts(batch_vars[:batch_rank], k, op_shape[d] - sizes[d], clamp, lines, pad)
    batching = {d: batch_vars[a] for d, a in zip(dn.operand_batching_dims, dn.start_indices_batching_dims)}
    idx = _operand_index(len(op_shape), starts, batching, dict(zip(window_dims, window_vars)))
    target = f"out[{_index([f'i{i}' for i in range(len(out_shape))])}]"
    value = f"operand[{_index(idx)}]"
    if clamp or not starts:
        lines.append(f"{pad}{target} = {value}")
    else:
        fill = p.get("fill_value")
        fill = default_fill_value(operand.aval.dtype) if fill is None else fill
        inside = " and ".join(f"0 <= {starts[d]} <= {op_shape[d] - sizes[d]}" for d in starts)
        lines += [f"{pad}if {inside}:", f"{pad}    {target} = {value}", f"{pad}else:",
                  f"{pad}    {target} = {literal_source(np.asarray(fill).astype(operand.aval.dtype))}"]
    return "\n".join(lines) + "\n"


def scatter_function(eqn, name: str, accumulate: bool) -> str:
    """Source of `name(out, indices, updates)`, applying the scatter `eqn` to `out` (a copy of its operand) in place:
    adding the updates (`accumulate`, scatter-add) or storing them (scatter)."""
    operand, indices, updates = eqn.invars
    p = eqn.params
    dn = p["dimension_numbers"]
    op_shape, upd_shape = operand.aval.shape, updates.aval.shape
    update_vars = [f"u{i}" for i in range(len(upd_shape))]
    scatter_vars = [u for i, u in enumerate(update_vars) if i not in dn.update_window_dims]
    window_dims = [d for d in range(len(op_shape))
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    window_var = {d: update_vars[dn.update_window_dims[w]] for w, d in enumerate(window_dims)}
    window_size = {d: upd_shape[dn.update_window_dims[w]] for w, d in enumerate(window_dims)}
    clamp = _mode_name(p.get("mode")) == "CLIP"
    lines = [f"def {name}(out, indices, updates):"]
    pad = _loops("u", upd_shape, lines)
    starts = {}
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        starts[d] = _starts(scatter_vars, k, op_shape[d] - window_size.get(d, 1), clamp, lines,
                            pad)
    if starts and not clamp:
        outside = " or ".join(f"{starts[d]} < 0 or {starts[d]} > {op_shape[d] - window_size.get(d, 1)}"
                              for d in starts)
        lines += [f"{pad}if {outside}:", f"{pad}    continue"]
    batching = {d: scatter_vars[a] for d, a in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims)}
    idx = _operand_index(len(op_shape), starts, batching, window_var)
    op = "+=" if accumulate else "="
    lines.append(f"{pad}out[{_index(idx)}] {op} updates[{_index(update_vars)}]")
    return "\n".join(lines) + "\n"


__all__ = ["gather_function", "scatter_function"]
