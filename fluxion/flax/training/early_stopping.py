"""Early stopping on a monitored metric, mirroring ``flax.training.early_stopping``."""

from __future__ import annotations

import math

from .. import struct


class EarlyStopping(struct.PyTreeNode):
    """Tracks a metric (lower is better) and says when it stopped improving.

    `update(metric)` counts an improvement when the metric beats `best_metric` by more than `min_delta` (or no metric
    was seen yet); otherwise it counts one more step without improvement, and `should_stop` becomes True on the
    update after `patience` such steps. Immutable: `update` and `reset` return new instances.

    Attributes:
      min_delta: the smallest decrease that counts as an improvement.
      patience: steps without improvement tolerated before stopping.
      best_metric: the best value seen (inf before the first update).
      patience_count: steps since the last improvement.
      should_stop: whether training should stop.
      has_improved: whether the last `update` was an improvement.
    """

    min_delta: float = 0
    patience: int = 0
    best_metric: float = float("inf")
    patience_count: int = 0
    should_stop: bool = False
    has_improved: bool = False

    def reset(self) -> "EarlyStopping":
        """The same settings with the tracking state cleared."""
        return self.replace(best_metric=float("inf"), patience_count=0, should_stop=False, has_improved=False)

    def update(self, metric) -> "EarlyStopping":
        """The state after observing `metric` (see the class docstring)."""
        if math.isinf(self.best_metric) or self.best_metric - metric > self.min_delta:
            return self.replace(best_metric=metric, patience_count=0, has_improved=True)
        stop = self.should_stop or self.patience_count >= self.patience
        return self.replace(patience_count=self.patience_count + 1, should_stop=stop, has_improved=False)
