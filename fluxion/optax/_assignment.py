r"""Linear assignment (minimum-cost bipartite matching) by the Hungarian method.

Kuhn (1955) / Munkres (1957), in the O(n^2 m) shortest-augmenting-path form
with dual potentials (Jonker & Volgenant 1987; the "e-maxx" formulation):
rows are added one at a time, each by a Dijkstra-like search over columns
using reduced costs :math:`c_{ij} - u_i - v_j`, after which the potentials
are updated so reduced costs stay non-negative. Written with ``lax``
loops, so it runs under ``fluxion.jit`` (shapes are static).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax


def _solve(cost: Any) -> Any:
    """Column -> row matching (``owner[j]`` = 1-based row of column j, 0 = free) for
    a cost matrix with rows <= cols; entry 0 of ``owner`` is scratch."""
    rows, cols = cost.shape
    u = jnp.zeros(rows + 2)   # Row potentials; slot rows + 1 absorbs no-op updates.
    v = jnp.zeros(cols + 1)   # Column potentials; slot 0 is the virtual start column.
    owner = jnp.zeros(cols + 1, jnp.int32)

    def add_row(carry, row):
        u, v, owner = carry
        owner = owner.at[0].set(row + 1)
        came_from = jnp.zeros(cols, jnp.int32)
        visited = jnp.zeros(cols + 1, bool)
        min_slack = jnp.full(cols, jnp.inf)

        def grow(state):
            u, v, visited, min_slack, came_from, col = state
            visited = visited.at[col].set(True)
            free = jnp.logical_not(visited[1:])
            r = owner[col]
            slack = jnp.where(free, cost[r - 1, :] - u[r] - v[1:], jnp.inf)
            better = slack < min_slack
            came_from = jnp.where(better, col, came_from)
            min_slack = jnp.where(better, slack, min_slack)
            masked = jnp.where(free, min_slack, jnp.inf)
            next_col = jnp.argmin(masked).astype(jnp.int32) + 1
            delta = jnp.min(masked)
            u = u.at[jnp.where(visited, owner, rows + 1)].add(delta)
            v = jnp.where(visited, v - delta, v)
            min_slack = jnp.where(free, min_slack - delta, min_slack)
            return u, v, visited, min_slack, came_from, next_col

        state = (u, v, visited, min_slack, came_from, jnp.asarray(0, jnp.int32))
        u, v, _, _, came_from, col = lax.while_loop(lambda s: owner[s[-1]] != 0, grow, state)

        def flip(state):
            owner, col = state
            prev = came_from[col - 1]
            return owner.at[col].set(owner[prev]), prev

        owner, _ = lax.while_loop(lambda s: s[1] != 0, flip, (owner, col))
        return (u, v, owner), None

    (_, _, owner), _ = lax.scan(add_row, (u, v, owner), jnp.arange(rows))
    return owner


def hungarian_algorithm(cost_matrix: Any) -> tuple[Any, Any]:
    """Minimum-cost assignment of rows to columns.

    Args:
        cost_matrix: (n, m) array.

    Returns:
        ``(i, j)``, two int arrays of length ``min(n, m)``: row ``i[k]`` is
        assigned to column ``j[k]``. Pairs are ordered as optax orders them:
        by column for square and tall matrices, by decreasing row for wide
        ones. (Equal-cost optima may be broken differently from other solvers.)
    """
    cost_matrix = jnp.asarray(cost_matrix)
    if cost_matrix.shape[0] == 0 or cost_matrix.shape[1] == 0:
        return jnp.zeros(0, jnp.int32), jnp.zeros(0, jnp.int32)
    transpose = cost_matrix.shape[0] > cost_matrix.shape[1]
    if transpose:
        cost_matrix = cost_matrix.T
    rows, cols = cost_matrix.shape
    owner = _solve(cost_matrix)
    if rows == cols:
        matched_rows, matched_cols = owner[1:], jnp.arange(rows, dtype=jnp.int32)
    else:
        matched_rows, matched_cols = lax.top_k(owner[1:], rows)
    matched_rows = matched_rows - 1
    if transpose:
        return matched_cols, matched_rows
    return matched_rows, matched_cols


def base_hungarian_algorithm(cost_matrix: Any) -> tuple[Any, Any]:
    """The same minimum-cost assignment, with pairs ordered by row (like
    ``scipy.optimize.linear_sum_assignment`` and optax's base variant).

    Returns:
        ``(i, j)`` with ``i`` increasing.
    """
    i, j = hungarian_algorithm(cost_matrix)
    if i.shape[0] == 0:
        return i, j
    order = jnp.argsort(i)
    return i[order], j[order]
