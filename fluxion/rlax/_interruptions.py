"""Handling episodes cut by an interruption (no LAST step before the next FIRST)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ._checks import check_rank

__all__ = ["fix_step_type_on_interruptions"]

# dm_env.StepType values.
_FIRST, _MID, _LAST = 0, 1, 2


def fix_step_type_on_interruptions(step_type: Any) -> Any:
    """Marks as LAST (2) every MID (1) step that is directly followed by a FIRST (0) step.

    Args:
        step_type: int `[T, batch]` of dm_env step types; the step after the end is taken to be MID.

    Raises:
        RLaxInputError: `step_type` not rank 2.
    """
    check_rank("fix_step_type_on_interruptions", [("step_type", step_type, 2)])
    following = jnp.concatenate([step_type[1:], jnp.full(step_type[:1].shape, _MID, dtype=step_type.dtype)], axis=0)
    return jnp.where((following == _FIRST) & (step_type == _MID), _LAST, step_type)
