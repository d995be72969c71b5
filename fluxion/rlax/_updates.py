"""Target-network updates."""

from __future__ import annotations

from typing import Any

from fluxion import lax, tree_util

__all__ = ["conditional_update", "periodic_update"]


def conditional_update(new_tensors: Any, old_tensors: Any, is_time: Any) -> Any:
    """`new_tensors` where `is_time` (a boolean scalar, may be traced) else `old_tensors`, leaf by leaf."""
    return tree_util.tree_map(lambda new, old: lax.select(is_time, new, old), new_tensors, old_tensors)


def periodic_update(new_tensors: Any, old_tensors: Any, steps: Any, update_period: int) -> Any:
    """`new_tensors` every `update_period` steps (when `steps % update_period == 0`), else `old_tensors`."""
    return conditional_update(new_tensors, old_tensors, is_time=steps % update_period == 0)
