"""Streaming metrics stored as NNX state (mirrors ``flax.nnx.training.metrics``).

A metric is a graph object whose accumulators are ``MetricState`` Variables,
so ``metric.update(...)`` works inside ``nnx.jit`` and the accumulated values
come back out.  ``update`` adds a batch, ``compute`` returns the result,
``reset`` clears it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion.flax import struct

from ..pytreelib import Pytree
from ..graph import split
from ..variables import Variable


class MetricState(Variable):
    """A metric's accumulator."""


class Metric(Pytree):
    """Base class: subclasses implement ``__init__``, ``reset``, ``update(**kwargs)`` and ``compute``."""

    def __init__(self) -> None:
        raise NotImplementedError('Must override `__init__()` method.')

    def reset(self) -> None:
        """Clears the accumulated state, in place."""
        raise NotImplementedError('Must override `reset()` method.')

    def update(self, **kwargs: Any) -> None:
        """Accumulates one batch, in place."""
        raise NotImplementedError('Must override `update()` method.')

    def compute(self) -> Any:
        """The metric's value from what was accumulated."""
        raise NotImplementedError('Must override `compute()` method.')

    def split(self, *filters: Any) -> Any:
        """``nnx.split(self, *filters)``."""
        return split(self, *filters)


def _value_arg(metric: Any, kwargs: dict) -> Any:
    if metric.argname not in kwargs:
        raise TypeError(f"Expected keyword argument '{metric.argname}'")
    return kwargs[metric.argname]


class Average(Metric):
    """The mean of all values passed as ``update(<argname>=values)`` (float32 ``total``, int32 ``count``).

    ``mask`` (broadcastable to the values) excludes entries.  Before any update
    ``compute`` is ``0/0 = nan``, as in Flax.

    Raises:
      TypeError: the keyword ``argname`` is missing.
      ValueError: a mask with Python-number values.
    """

    def __init__(self, argname: str = 'values'):
        self.argname = argname
        self.total = MetricState(jnp.array(0, dtype=jnp.float32))
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))

    def reset(self) -> None:
        self.total[...] = jnp.array(0, dtype=jnp.float32)
        self.count[...] = jnp.array(0, dtype=jnp.int32)

    def update(self, mask: Any = None, **kwargs: Any) -> None:
        values = _value_arg(self, kwargs)
        if mask is not None and isinstance(values, (int, float)):
            raise ValueError(f'If mask is provided, {self.argname} should be a jax array')
        if isinstance(values, (int, float)):
            self.total[...] = self.total[...] + values
            self.count[...] = self.count[...] + 1
        elif mask is None:
            self.total[...] = self.total[...] + values.sum()
            self.count[...] = self.count[...] + values.size
        else:
            self.total[...] = self.total[...] + (values * mask.astype(values.dtype)).sum()
            self.count[...] = self.count[...] + mask.sum().astype(self.count.dtype)

    def compute(self) -> Any:
        return self.total[...] / self.count[...]


@struct.dataclass
class Statistics:
    """Welford's result: mean, standard error of the mean, standard deviation."""
    mean: Any
    standard_error_of_mean: Any
    standard_deviation: Any


class Welford(Metric):
    """Running mean and variance by Welford's algorithm with Chan et al.'s batch merge.

    Welford 1962, "Note on a method for calculating corrected sums of squares
    and products"; Chan, Golub & LeVeque 1979 (pairwise update).  ``compute``
    gives the population standard deviation and ``std / sqrt(count)``.
    """

    def __init__(self, argname: str = 'values'):
        self.argname = argname
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))
        self.mean = MetricState(jnp.array(0, dtype=jnp.float32))
        self.m2 = MetricState(jnp.array(0, dtype=jnp.float32))

    def reset(self) -> None:
        self.count[...] = jnp.array(0, dtype=jnp.uint32)
        self.mean[...] = jnp.array(0, dtype=jnp.float32)
        self.m2[...] = jnp.array(0, dtype=jnp.float32)

    def update(self, **kwargs: Any) -> None:
        values = _value_arg(self, kwargs)
        scalar = isinstance(values, (int, float))
        count = 1 if scalar else values.size
        original_count = self.count[...]
        self.count[...] = original_count + count
        delta = (values if scalar else values.mean()) - self.mean[...]
        self.mean[...] = self.mean[...] + delta * count / self.count[...]
        m2 = 0.0 if scalar else values.var() * count
        self.m2[...] = self.m2[...] + m2 + delta * delta * count * original_count / self.count[...]

    def compute(self) -> Statistics:
        variance = self.m2[...] / self.count[...]
        std = variance ** 0.5
        return Statistics(mean=self.mean[...], standard_error_of_mean=std / (self.count[...] ** 0.5),
                          standard_deviation=std)


class Accuracy(Average):
    """Fraction of correct predictions: ``argmax(logits, -1) == labels`` (multi-class), or with a float
    ``threshold``, ``(logits >= threshold) == (labels > 0)`` (binary).

    Raises:
      TypeError: a non-float threshold.
      ValueError: logits/labels ranks that fit neither case; non-int32/int64 labels.
    """

    def __init__(self, threshold: float | None = None, *args: Any, **kwargs: Any):
        if threshold is not None and not isinstance(threshold, float):
            raise TypeError(f'Expected threshold to be a float, got {type(threshold)}')
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def update(self, *, logits: Any, labels: Any, mask: Any = None, **_: Any) -> None:  # type: ignore[override]
        if self.threshold is not None:
            if logits.ndim != labels.ndim:
                raise ValueError(f'For binary classification, expected logits.ndim==labels.ndim, got '
                                 f'{logits.ndim} and {labels.ndim}')
        elif logits.ndim != labels.ndim + 1:
            raise ValueError(f'For multi-class classification, expected logits.ndim==labels.ndim+1, got '
                             f'{logits.ndim} and {labels.ndim}')
        if labels.dtype in (np.dtype(np.int64), np.dtype(np.int32)):
            labels = labels.astype(jnp.int32)
        else:
            raise ValueError(f'Expected labels.dtype==jnp.int32, got {labels.dtype}')
        if self.threshold is not None:
            super().update(values=((logits >= self.threshold) == (labels > 0)), mask=mask)
        else:
            super().update(values=(logits.argmax(axis=-1) == labels), mask=mask)


class MultiMetric(Metric):
    """Several named metrics updated together: ``MultiMetric(loss=Average('loss'), accuracy=Accuracy())``.

    ``update(**kw)`` passes all keywords to every metric (``mask`` may be one
    array or a ``{name: mask}`` dict); ``compute()`` returns ``{name: value}``.
    """

    def __init__(self, **metrics: Metric):
        self._metric_names = tuple(metrics)
        for name, metric in metrics.items():
            setattr(self, name, metric)

    def reset(self) -> None:
        """Resets every metric."""
        for name in self._metric_names:
            getattr(self, name).reset()

    def update(self, **updates: Any) -> None:
        """Passes the keywords to every metric's ``update``."""
        mask = updates.pop('mask', None)
        for name in self._metric_names:
            m = mask.get(name) if isinstance(mask, dict) else mask
            getattr(self, name).update(**updates, **({} if m is None else {'mask': m}))

    def compute(self) -> dict[str, Any]:
        """``{name: metric.compute()}``."""
        return {name: getattr(self, name).compute() for name in self._metric_names}
