r"""Aggregating per-example updates (``optax.experimental.aggregating``).

An *aggregator* is a transformation whose input updates carry a per-example
axis and whose output is one aggregated update (a mean, possibly accumulated
over several calls). :func:`process` composes a per-example preprocessor, an
aggregator and a postprocessor (the optimizer), running the postprocessor
only on calls where the aggregator reports ``ready``. The running mean and
sum of squared deviations use Chan, Golub & LeVeque's parallel update (1979).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional, Protocol, Union

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import _numerics
from .._base import (GradientTransformation, GradientTransformationExtraArgs, OptState,
                     TransformInitFn, identity, init_empty_state)
from .._combine import chain
from .._state_utils import tree_get
from .._tree_math import tree_scale, tree_where, tree_zeros_like

PerElementUpdates = Any
AggregatedUpdates = Any
MaybeAxis = Optional[Union[int, Sequence[int]]]


class AggregatorUpdateFn(Protocol):
    """``update(per_elt_updates, state, params=None, **extra) -> (aggregated, state)``."""

    def __call__(self, per_elt_updates: PerElementUpdates, state: OptState,
                 params: Any = None, **extra_args: Any) -> tuple[AggregatedUpdates, OptState]:
        ...


class Aggregator(GradientTransformationExtraArgs):
    """A transformation from per-example updates to an aggregated update."""
    init: TransformInitFn
    update: AggregatorUpdateFn


def process(preprocessor: GradientTransformation, aggregator: Any,
            postprocessor: GradientTransformation, aggregator_has_aux: bool = False) -> Any:
    """``preprocessor`` (per example) -> ``aggregator`` -> ``postprocessor``.

    The postprocessor runs only when the aggregator's state has ``ready``
    True (always, if it has no such field); otherwise zeros are returned and
    its state is kept. With ``aggregator_has_aux`` the aggregator returns
    ``(updates, aux_dict)`` and the aux entries are passed to the
    postprocessor as extra arguments.

    Returns:
        An ``Aggregator`` if ``aggregator`` is one, else a transformation;
        state ``(pre_state, aggregator_state, post_state)``.
    """

    def init_fn(params):
        return (preprocessor.init(params), aggregator.init(params), postprocessor.init(params))

    def update_fn(indiv_grads, states, params=None, **extra_args):
        pre_state, agg_state, post_state = states
        indiv, pre_state = preprocessor.update(indiv_grads, pre_state, params, **extra_args)
        aggregated, agg_state = aggregator.update(indiv, agg_state, params, **extra_args)
        if aggregator_has_aux:
            avg, aux = aggregated
            extra_args = extra_args | aux
        else:
            avg = aggregated
        ready = tree_get(agg_state, 'ready', True)
        updates, post_state = lax.cond(
            ready, lambda g, s, p, kw: postprocessor.update(g, s, p, **kw),
            lambda g, s, *_: (tree_zeros_like(avg), s), avg, post_state, params, extra_args)
        return updates, (pre_state, agg_state, post_state)

    if isinstance(aggregator, Aggregator):
        return Aggregator(init_fn, update_fn)
    return GradientTransformationExtraArgs(init_fn, update_fn)


def average_per_element_updates(per_elt_axis: Union[int, Sequence[int]] = 0) -> Aggregator:
    """Averages the per-example axis (or axes) away."""

    def update_fn(per_elt_updates, state, params=None):
        del params
        return tree_util.tree_map(lambda x: jnp.mean(x, axis=per_elt_axis), per_elt_updates), state

    return Aggregator(init_empty_state, update_fn)


class AccumulateAvgUpdatesState(NamedTuple):
    """State of :func:`accumulate_avg_updates`."""
    micro_step: Any
    ready: Any
    avg_grad: Any


def accumulate_avg_updates(accumulation_steps: int) -> GradientTransformation:
    """Running mean of updates over ``accumulation_steps`` calls; emits it (and sets
    ``ready``) on the last call, zeros otherwise.

    Raises:
        ValueError: if ``accumulation_steps < 1``.
    """
    if accumulation_steps < 1:
        raise ValueError(f'accumulate_avg_updates: accumulation_steps must be >= 1, got '
                         f'{accumulation_steps}.')
    if accumulation_steps == 1:
        return identity()

    def init_fn(params):
        return AccumulateAvgUpdatesState(micro_step=jnp.asarray(0), ready=jnp.asarray(False),
                                         avg_grad=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        step = state.micro_step + 1
        avg = tree_util.tree_map(lambda u, a: a + (u - a) / step, updates, state.avg_grad)
        done = AccumulateAvgUpdatesState(micro_step=jnp.asarray(0), ready=jnp.asarray(True),
                                         avg_grad=tree_zeros_like(avg))
        pending = AccumulateAvgUpdatesState(micro_step=step, ready=jnp.asarray(False),
                                            avg_grad=avg)
        return tree_where(step == accumulation_steps, (avg, done),
                          (tree_zeros_like(avg), pending))

    return GradientTransformation(init_fn, update_fn)


def average_incrementally_updates(per_elt_axis: MaybeAxis, accumulation_steps: int) -> Any:
    """Per-example averaging (unless ``per_elt_axis`` is None) then accumulation."""
    if per_elt_axis is None:
        return accumulate_avg_updates(accumulation_steps)
    agg = chain(average_per_element_updates(per_elt_axis),
                accumulate_avg_updates(accumulation_steps))
    return Aggregator(agg.init, agg.update)


def get_batch_size_from_per_elt_updates(per_elt_updates: Any,
                                        per_elt_axis: Union[int, Sequence[int]]) -> int:
    """The (shared) number of examples along ``per_elt_axis``.

    Raises:
        ValueError: if leaves disagree.
    """
    def size(u):
        if isinstance(per_elt_axis, int):
            return u.shape[per_elt_axis]
        return math.prod(u.shape[i] for i in per_elt_axis)

    sizes = [size(u) for u in tree_util.tree_leaves(per_elt_updates)]
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f'Per-element updates must share one batch size, got {sizes}.')
    return sizes[0]


class PerElementMeanAndSumSqDiffGradsState(NamedTuple):
    """Accumulated mean and sum of squared deviations of per-example gradients."""
    micro_step: Any
    ready: Any
    mean_grads: Any
    sum_sq_diff_grads: Any


def get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis: Union[int, Sequence[int]] = 0,
                                               accumulation_steps: int = 1) -> Aggregator:
    """Aggregator returning ``(mean, {'sum_sq_diff_grads': M2, 'sample_size': n})``.

    Over several calls the statistics are merged with Chan et al.'s update,
    emitted on the ``accumulation_steps``-th call (zeros before).
    """

    def batch_stats(per_elt):
        mean = tree_util.tree_map(lambda x: jnp.mean(x, axis=per_elt_axis, keepdims=True),
                                  per_elt)
        m2 = tree_util.tree_map(lambda x, a: jnp.sum(jnp.square(x - a), axis=per_elt_axis),
                                per_elt, mean)
        return tree_util.tree_map(lambda x: jnp.squeeze(x, axis=per_elt_axis), mean), m2

    if accumulation_steps == 1:
        def single(per_elt, state, params=None):
            del params
            n = get_batch_size_from_per_elt_updates(per_elt, per_elt_axis)
            mean, m2 = batch_stats(per_elt)
            return (mean, {'sum_sq_diff_grads': m2, 'sample_size': n}), state
        return Aggregator(init_empty_state, single)

    def init_fn(params):
        return PerElementMeanAndSumSqDiffGradsState(
            micro_step=jnp.asarray(0, dtype=jnp.int32), ready=jnp.asarray(False),
            mean_grads=tree_zeros_like(params), sum_sq_diff_grads=tree_zeros_like(params))

    def update_fn(per_elt, state, params=None):
        del params
        n = get_batch_size_from_per_elt_updates(per_elt, per_elt_axis)
        step = state.micro_step + 1
        batch_mean, batch_m2 = batch_stats(per_elt)
        delta = tree_util.tree_map(lambda b, a: b - a, batch_mean, state.mean_grads)
        mean = tree_util.tree_map(lambda a, d: a + d / step, state.mean_grads, delta)
        size_factor = state.micro_step * n / step
        m2 = tree_util.tree_map(lambda a, s, d: a + s + d ** 2 * size_factor,
                                state.sum_sq_diff_grads, batch_m2, delta)
        outputs = (mean, {'sum_sq_diff_grads': m2, 'sample_size': n * step})
        done = PerElementMeanAndSumSqDiffGradsState(
            micro_step=jnp.asarray(0, dtype=jnp.int32), ready=jnp.asarray(True),
            mean_grads=tree_zeros_like(mean), sum_sq_diff_grads=tree_zeros_like(m2))
        pending = PerElementMeanAndSumSqDiffGradsState(micro_step=step, ready=jnp.asarray(False),
                                                       mean_grads=mean, sum_sq_diff_grads=m2)
        return tree_where(step == accumulation_steps, (outputs, done),
                          (tree_zeros_like(outputs), pending))

    return Aggregator(init_fn, update_fn)


class PerElementMeanAndVarianceEMAState(NamedTuple):
    """EMAs of the gradient mean and of the per-example gradient variance."""
    count: Any
    ema_decay: Any
    mean_grads_ema: Any
    variance_grads_ema: Any


def track_per_element_mean_and_variance_with_ema(ema_decay: Any = 0.9
                                                 ) -> GradientTransformationExtraArgs:
    """Tracks EMAs of the mean gradient and of the unbiased variance
    ``sum_sq_diff_grads / (sample_size - 1)`` (passed as extra args); updates pass through."""

    def init_fn(params):
        return PerElementMeanAndVarianceEMAState(
            count=jnp.zeros([], jnp.int32), ema_decay=jnp.asarray(ema_decay),
            mean_grads_ema=tree_zeros_like(params), variance_grads_ema=tree_zeros_like(params))

    def update_fn(updates, state, params=None, *, sum_sq_diff_grads, sample_size):
        del params
        mean_ema = tree_util.tree_map(lambda x, y: (1.0 - ema_decay) * x + ema_decay * y,
                                      updates, state.mean_grads_ema)
        variance = tree_scale(1 / (sample_size - 1), sum_sq_diff_grads)
        var_ema = tree_util.tree_map(lambda x, y: (1.0 - ema_decay) * x + ema_decay * y,
                                     variance, state.variance_grads_ema)
        return updates, state._replace(count=_numerics.safe_increment(state.count),
                                       mean_grads_ema=mean_ema, variance_grads_ema=var_ema)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def get_unbiased_mean_and_variance_ema(state: Any) -> tuple[Any, Any]:
    """Bias-corrected EMAs (divided by ``1 - decay**count``) found anywhere in ``state``.

    Raises:
        ValueError: if ``state`` holds no PerElementMeanAndVarianceEMAState.
    """
    found = tree_get(state, 'PerElementMeanAndVarianceEMAState', None)
    if found is None:
        raise ValueError('get_unbiased_mean_and_variance_ema: the state has no '
                         'PerElementMeanAndVarianceEMAState.')
    correction = 1 - found.ema_decay ** found.count
    return (tree_util.tree_map(lambda x: x / correction, found.mean_grads_ema),
            tree_util.tree_map(lambda x: x / correction, found.variance_grads_ema))


def add_mean_variance_to_opt(opt: GradientTransformation, ema_decay: Any = 0.9,
                             per_elt_axis: Union[int, Sequence[int]] = 0,
                             accumulation_steps: int = 1) -> Any:
    """Wraps ``opt`` to take per-example gradients, average them and track EMAs of
    their mean and variance (read them with :func:`get_unbiased_mean_and_variance_ema`)."""
    return process(preprocessor=identity(),
                   aggregator=get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis,
                                                                         accumulation_steps),
                   postprocessor=chain(track_per_element_mean_and_variance_with_ema(ema_decay),
                                       opt),
                   aggregator_has_aux=True)
