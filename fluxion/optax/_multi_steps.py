"""Gradient accumulation over several mini-steps (``MultiSteps``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Optional, Protocol, Union

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics
from ._base import GradientTransformation, Params, Updates, with_extra_args_support
from ._tree_math import tree_cast_like, tree_where, tree_zeros_like


class ShouldSkipUpdateFunction(Protocol):
    """``f(updates, gradient_step, params) -> (should_skip, aux_state)``.

    ``should_skip`` must be a boolean scalar array; ``aux_state`` is stored in
    ``MultiStepsState.skip_state``.
    """

    def __call__(self, updates: Updates, gradient_step: Any,
                 params: Optional[Params]) -> tuple[Any, Any]:
        ...


def skip_not_finite(updates: Updates, gradient_step: Any,
                    params: Optional[Params]) -> tuple[Any, dict[str, Any]]:
    """Skips the mini-step if any update contains NaN or inf.

    Returns:
        ``(should_skip, {'should_skip': ..., 'num_not_finite': int32 count})``.
    """
    del gradient_step, params
    counts = [jnp.sum(jnp.logical_not(jnp.isfinite(u))) for u in tree_util.tree_leaves(updates)]
    num_not_finite = jnp.sum(jnp.array(counts))
    should_skip = num_not_finite > 0
    return should_skip, {'should_skip': should_skip, 'num_not_finite': num_not_finite}


def skip_large_updates(updates: Updates, gradient_step: Any, params: Optional[Params],
                       max_squared_norm: Any) -> tuple[Any, dict[str, Any]]:
    """Skips the mini-step if the squared global norm reaches ``max_squared_norm``.

    Use with ``functools.partial(skip_large_updates, max_squared_norm=...)``.
    NaN norms are skipped too.

    Returns:
        ``(should_skip, {'should_skip': ..., 'norm_squared': ...})``.
    """
    del gradient_step, params
    norm_sq = jnp.sum(jnp.array([jnp.sum(u ** 2) for u in tree_util.tree_leaves(updates)]))
    should_skip = jnp.logical_not(norm_sq < max_squared_norm)
    return should_skip, {'should_skip': should_skip, 'norm_squared': norm_sq}


class MultiStepsState(NamedTuple):
    """State of :class:`MultiSteps`.

    Attributes:
        mini_step: int32, position inside the current accumulation window.
        gradient_step: int32, number of inner optimizer steps taken.
        inner_opt_state: state of the wrapped optimizer.
        acc_grads: running mean (or sum) of the window's gradients.
        skip_state: auxiliary output of ``should_skip_update_fn``.
    """
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()


class MultiSteps:
    """Accumulates gradients over ``k`` calls, stepping the inner optimizer on the k-th.

    Non-final mini-steps return all-zero updates, so ``apply_updates`` leaves
    parameters unchanged until the window completes; the k-th call applies the
    inner optimizer to the mean (``use_grad_mean=True``) or sum of the window's
    gradients. Equivalent to training with a k times larger batch.

    Args:
        opt: the inner transformation.
        every_k_schedule: k as an int, or a function of ``gradient_step``.
        use_grad_mean: average (True) or sum (False) the accumulated gradients.
        should_skip_update_fn: optional :class:`ShouldSkipUpdateFunction`;
            skipped mini-steps leave the whole state unchanged (except
            ``skip_state``) and return zero updates.
        accumulator_dtype: dtype of ``acc_grads`` (float32 by default).
    """

    def __init__(self, opt: GradientTransformation,
                 every_k_schedule: Union[int, Callable[[Any], Any]],
                 use_grad_mean: bool = True,
                 should_skip_update_fn: Optional[ShouldSkipUpdateFunction] = None,
                 accumulator_dtype: Any = jnp.float32):
        self._opt = with_extra_args_support(opt)
        if isinstance(every_k_schedule, int):
            if every_k_schedule < 1:
                raise ValueError(f'MultiSteps: every_k_schedule must be >= 1, got {every_k_schedule}.')
            self._every_k_schedule = lambda step: every_k_schedule
        else:
            self._every_k_schedule = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._accumulator_dtype = _numerics.canonicalize_dtype(accumulator_dtype)
        self._should_skip_update_fn = should_skip_update_fn

    @property
    def inner_opt(self) -> GradientTransformation:
        """The wrapped optimizer (with extra-args support)."""
        return self._opt

    def _accumulate(self, grad: Any, acc: Any, n_acc: Any) -> Any:
        if self._use_grad_mean:
            # Running mean: after n+1 terms, mean = acc + (g - acc) / (n + 1).
            return acc + (grad - acc) / (n_acc + 1)
        return grad + acc

    def _skip(self, updates: Updates, gradient_step: Any, params: Optional[Params]):
        if self._should_skip_update_fn is None:
            return None, ()
        return self._should_skip_update_fn(updates, gradient_step, params)

    def init(self, params: Params) -> MultiStepsState:
        """Initial state: zero accumulators and the inner optimizer's state."""
        gradient_step = jnp.zeros([], dtype=jnp.int32)
        _, skip_state = self._skip(tree_zeros_like(params), gradient_step, params)
        return MultiStepsState(
            mini_step=jnp.zeros([], dtype=jnp.int32),
            gradient_step=gradient_step,
            inner_opt_state=self._opt.init(params),
            acc_grads=tree_zeros_like(params, dtype=self._accumulator_dtype),
            skip_state=skip_state)

    def update(self, updates: Updates, state: MultiStepsState,
               params: Optional[Params] = None, **extra_args: Any
               ) -> tuple[Updates, MultiStepsState]:
        """Accumulates ``updates``; emits the inner update on the last mini-step.

        Raises:
            ValueError: if ``should_skip_update_fn`` does not return a boolean scalar.
        """
        k_steps = self._every_k_schedule(state.gradient_step)
        should_skip, skip_state = self._skip(updates, state.gradient_step, params)
        if should_skip is not None and (
                jnp.asarray(should_skip).dtype != jnp.bool_ or jnp.shape(should_skip) != ()):
            raise ValueError(
                'MultiSteps: should_skip_update_fn must return a boolean scalar, got '
                f'dtype {jnp.asarray(should_skip).dtype} and shape {jnp.shape(should_skip)}.')

        acc_grads = tree_util.tree_map(
            lambda u, a: self._accumulate(u, a, state.mini_step), updates, state.acc_grads)
        final_updates, new_inner_state = self._opt.update(
            tree_cast_like(acc_grads, updates), state.inner_opt_state, params=params,
            **extra_args)
        emit = state.mini_step == (k_steps - 1)
        new_state = MultiStepsState(
            mini_step=_numerics.safe_increment(state.mini_step) % k_steps,
            gradient_step=emit * _numerics.safe_increment(state.gradient_step)
            + (1 - emit) * state.gradient_step,
            inner_opt_state=tree_util.tree_map(
                lambda old, new: jnp.where(emit, new, old).astype(old.dtype),
                state.inner_opt_state, new_inner_state),
            acc_grads=tree_util.tree_map(
                lambda a: ((1 - emit) * a).astype(self._accumulator_dtype), acc_grads),
            skip_state=skip_state)
        final_updates = tree_util.tree_map(lambda u: emit * u, final_updates)
        if should_skip is None:
            return final_updates, new_state

        # Both branches are computed and selected leafwise; this keeps the
        # update traceable without control flow. Selecting (not multiplying)
        # guarantees NaNs from a skipped step cannot leak into the state.
        kept_state = MultiStepsState(
            mini_step=state.mini_step, gradient_step=state.gradient_step,
            inner_opt_state=state.inner_opt_state, acc_grads=state.acc_grads,
            skip_state=skip_state)
        updates_out = tree_where(should_skip, tree_zeros_like(final_updates), final_updates)
        return updates_out, tree_where(should_skip, kept_state, new_state)

    def has_updated(self, state: MultiStepsState) -> Any:
        """True right after a mini-step that applied the inner optimizer."""
        return jnp.logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        """This accumulator as a plain ``GradientTransformation(init, update)``."""
        return GradientTransformation(init=self.init, update=self.update)
