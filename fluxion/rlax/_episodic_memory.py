"""k-nearest-neighbour lookups in an episodic memory (used by NGU's intrinsic reward)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

from ._checks import RLaxInputError, check_rank

__all__ = ["KNNQueryResult", "knn_query"]


@dataclasses.dataclass
class KNNQueryResult:
    """Neighbours `[num_queries, k, dim]`, their row indices `[num_queries, k]`, and the negated distances."""
    neighbors: Any
    neighbor_indices: Any
    neighbor_neg_distances: Any


# Leaves in sorted field-name order, as chex dataclasses flatten (same tree_leaves as RLax).
tree_util.register_dataclass(KNNQueryResult, data_fields=["neighbor_indices", "neighbor_neg_distances", "neighbors"],
                             meta_fields=[])


def _sqeuclidean(x: Any, y: Any) -> Any:
    return jnp.sum(jnp.square(x - y))


def knn_query(data: Any, query_points: Any, num_neighbors: int,
              metric: Callable[[Any, Any], Any] = _sqeuclidean) -> KNNQueryResult:
    """The `min(num_neighbors, len(data))` rows of `data` closest to each query under `metric` (squared Euclidean
    by default), nearest first (`lax.top_k` on negated distances; ties keep the lower index).

    Args:
        data: `[num_data, dim]`. query_points: `[num_queries, dim]`.

    Raises:
        RLaxInputError (an AssertionError, as RLax raises): either argument not rank 2, or different feature
            sizes.
    """
    check_rank("knn_query", [("data", data, 2), ("query_points", query_points, 2)])
    if data.shape[-1] != query_points.shape[-1]:
        raise RLaxInputError(f"knn_query: `data` and `query_points` feature sizes differ: {data.shape[-1]} vs "
                             f"{query_points.shape[-1]}")
    pairwise = fluxion.vmap(fluxion.vmap(metric, (None, 0)), (0, None))
    neg_distances, indices = lax.top_k(-pairwise(query_points, data), min(num_neighbors, data.shape[0]))
    return KNNQueryResult(neighbors=jnp.asarray(data)[indices], neighbor_indices=indices,
                          neighbor_neg_distances=neg_distances)
