"""Device helpers (mirrors part of ``flax.jax_utils``): replicate a tree across devices and back.

Built on ``fluxion.device_put_replicated`` and ``fluxion.local_devices()``;
with fluxion's CPU backend there is one device unless more are configured,
and ``replicate`` then adds a leading axis of size 1.

Not mirrored: ``prefetch_to_device``, ``scan_in_dim``, ``pad_shard_unpad``
and ``partial_eval_by_shape``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import fluxion
from fluxion import lax, tree_util

__all__ = ['pmean', 'replicate', 'unreplicate']


def replicate(tree: Any, devices: Optional[Sequence[Any]] = None) -> Any:
    """Copies every leaf onto each device: leaves gain a leading axis of size ``len(devices)``.

    ``devices`` defaults to ``fluxion.local_devices()``. The result is what
    ``fluxion.pmap`` expects for arguments that are the same on every device.
    """
    devices = list(fluxion.local_devices() if devices is None else devices)
    return fluxion.device_put_replicated(tree, devices)


def unreplicate(tree: Any) -> Any:
    """The first device's copy of a replicated tree (``x[0]`` for every leaf)."""
    return tree_util.tree_map(lambda x: x[0], tree)


def pmean(xs: Any, axis_name: Any) -> Any:
    """Mean over the mapped axis ``axis_name`` (``lax.pmean``), for use inside ``pmap``."""
    return lax.pmean(xs, axis_name)
