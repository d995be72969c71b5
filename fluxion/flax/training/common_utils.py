"""Helpers for data-parallel training loops, mirroring ``flax.training.common_utils``."""

from __future__ import annotations

from typing import Any, Sequence

import fluxion
import fluxion.numpy as jnp
from fluxion import random, tree_util


def shard(xs: Any) -> Any:
    """Reshapes every leaf's leading dimension `n` to `(local_device_count, n // local_device_count)`, the layout
    `pmap` maps over. Raises the reshape's `TypeError`/`ValueError` if `n` is not divisible."""
    count = fluxion.local_device_count()
    return tree_util.tree_map(lambda x: x.reshape((count, -1) + tuple(x.shape[1:])), xs)


def shard_prng_key(prng_key: Any) -> Any:
    """One key per local device: `random.split(prng_key, local_device_count())`."""
    return random.split(prng_key, num=fluxion.local_device_count())


def stack_forest(forest: Sequence[Any]) -> Any:
    """Stacks the leaves of equally structured pytrees along a new leading axis (`jnp.stack` per leaf)."""
    return tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *forest)


def get_metrics(device_metrics: Sequence[Any]) -> Any:
    """Turns a sequence of per-step, device-replicated metric pytrees (leading axis: devices) into one pytree of
    host arrays stacked over steps, keeping the first replica's copy of each value (fluxion arrays are host arrays:
    Flax reads `addressable_shards[0]`, which holds the same values)."""
    first = tree_util.tree_map(lambda x: x[0], device_metrics)
    return stack_forest(fluxion.device_get(first))


def onehot(labels: Any, num_classes: int, on_value: float = 1.0, off_value: float = 0.0) -> Any:
    """float32 one-hot encoding of integer `labels` (shape `labels.shape + (num_classes,)`), with `on_value` where
    the class matches and `off_value` elsewhere. Prefer `fluxion.nn.one_hot` in new code (as Flax says too)."""
    labels = jnp.asarray(labels)
    hit = labels[..., None] == jnp.arange(num_classes).reshape((1,) * labels.ndim + (-1,))
    return jnp.where(hit, on_value, off_value).astype(jnp.float32)
