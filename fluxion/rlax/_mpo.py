"""Maximum a Posteriori Policy Optimisation losses.

MPO: Abdolmaleki et al. 2018, "Maximum a Posteriori Policy Optimisation" (https://arxiv.org/abs/1806.06920) and
"Relative Entropy Regularized Policy Iteration" (https://arxiv.org/abs/1812.02256). V-MPO: Song et al. 2019,
"V-MPO: On-Policy Maximum a Posteriori Policy Optimization" (https://arxiv.org/abs/1909.12238).

The E-step weights samples by `softmax(Q / eta)` (MPO) or by `exp(A / eta)` over the top fraction of advantages
(V-MPO), with the temperature `eta` learned through its dual loss `eta * (epsilon + log mean exp(Q / eta))`.
The M-step is a weighted maximum likelihood fit plus KL penalties whose multipliers `alpha` are learned with
`alpha * (epsilon - KL)`. Multipliers pass through `projection_operator` (default: clip below at 1e-10).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple

import fluxion.numpy as jnp
from fluxion import lax, nn

from ._base import AllSum
from ._checks import RLaxInputError, check, check_equal_shape, check_rank, maybe_stop_gradient

__all__ = ["LagrangePenalty", "MpoOutputs", "mpo_loss", "mpo_compute_weights_and_temperature_loss",
           "compute_parametric_kl_penalty_and_dual_loss", "vmpo_loss", "vmpo_compute_weights_and_temperature_loss",
           "kl_constraint_loss", "get_top_k_weights"]

_EPSILON = 1e-10
_INFINITY = 1e6


class LagrangePenalty(NamedTuple):
    """A Lagrange multiplier `alpha` (float array, learned) for the constraint `value <= epsilon` (float scalar);
    `per_dimension` means the constrained KL has a trailing per-action-dimension axis to be summed after
    weighting."""
    alpha: Any
    epsilon: Any
    per_dimension: bool = False


class MpoOutputs(NamedTuple):
    """Loss terms and E-step weights returned beside the total loss."""
    temperature_loss: Any
    policy_loss: Any
    kl_loss: Any
    alpha_loss: Any
    normalized_weights: Any
    num_samples: Any


def _check_penalty(fn: str, name: str, penalty: LagrangePenalty, extra: list = ()) -> None:
    check(fn, [(f"{name}.epsilon", penalty.epsilon, 0, "float")])
    check(fn, [(f"{name}.alpha", penalty.alpha, None, "float")] + list(extra))


def _check_kl_constraints(fn: str, kl_constraints, kl_rank: Optional[Callable] = None) -> None:
    for i, (kl, penalty) in enumerate(kl_constraints):
        _check_penalty(fn, f"kl_constraints[{i}] penalty", penalty, [(f"kl_constraints[{i}] kl", kl, None,
                                                                      "float")])
        if kl_rank is not None:
            check_rank(fn, [(f"kl_constraints[{i}] kl", kl, kl_rank(penalty))])


def _normalize_axis(sample_axis: int, ndim: int) -> int:
    axis = sample_axis + ndim if sample_axis < 0 else sample_axis
    if not 0 <= axis < ndim:
        raise ValueError(f"`sample_axis` {sample_axis} not in array rank {ndim}")
    return axis


def kl_constraint_loss(kl: Any, penalty: LagrangePenalty, projection_operator: Callable,
                       use_stop_gradient: bool = True) -> Tuple[Any, Any, Any]:
    """`(alpha' * KL, alpha * (epsilon - KL'), alpha)` with `alpha = projection_operator(penalty.alpha)` and primes
    marking stopped gradients; per-dimension penalties are summed over the last axis."""
    alpha = projection_operator(penalty.alpha)
    alpha_loss = alpha * (penalty.epsilon - maybe_stop_gradient(use_stop_gradient, kl))
    kl_loss = maybe_stop_gradient(use_stop_gradient, alpha) * kl
    if penalty.per_dimension:
        kl_loss, alpha_loss = jnp.sum(kl_loss, axis=-1), jnp.sum(alpha_loss, axis=-1)
    return kl_loss, alpha_loss, alpha


def compute_parametric_kl_penalty_and_dual_loss(kl_constraints: Sequence[Tuple[Any, LagrangePenalty]],
                                                projection_operator: Callable,
                                                use_stop_gradient: bool = True) -> Tuple[Any, Any]:
    """Sums of the KL penalties and of the multiplier (dual) losses over `kl_constraints` (pairs `(kl, penalty)`).

    Raises:
        RLaxInputError: an epsilon that is not a float scalar, or non-float kl/alpha.
    """
    _check_kl_constraints("compute_parametric_kl_penalty_and_dual_loss", kl_constraints)
    kl_losses, alpha_losses = [], []
    for kl, penalty in kl_constraints:
        kl_loss, alpha_loss, _ = kl_constraint_loss(kl, penalty, projection_operator, use_stop_gradient)
        kl_losses.append(kl_loss)
        alpha_losses.append(alpha_loss)
    return sum(kl_losses), sum(alpha_losses)


def mpo_compute_weights_and_temperature_loss(sample_q_values: Any, temperature_constraint: LagrangePenalty,
                                             projection_operator: Callable, sample_axis: int = 0):
    """MPO's E-step: `weights = softmax(Q / eta)` along `sample_axis` and the temperature dual
    `eta epsilon + eta (logsumexp(Q / eta) - log N)`.

    Returns:
        `(temperature_loss, normalized_weights, num_samples)`; the loss has `sample_axis` removed.

    Raises:
        RLaxInputError: non-float inputs or a non-scalar epsilon. ValueError: `sample_axis` out of range.
    """
    fn = "mpo_compute_weights_and_temperature_loss"
    _check_penalty(fn, "temperature_constraint", temperature_constraint,
                   [("sample_q_values", sample_q_values, None, "float")])
    axis = _normalize_axis(sample_axis, sample_q_values.ndim)
    n = sample_q_values.shape[axis]
    temperature = projection_operator(temperature_constraint.alpha)
    scaled = sample_q_values / temperature
    lse = nn.logsumexp(scaled, axis=axis, keepdims=True)
    temperature_loss = temperature * temperature_constraint.epsilon + temperature * (
        jnp.squeeze(lse, axis=axis) - jnp.log(n))
    weights = jnp.exp(scaled - lse)
    return temperature_loss, weights / jnp.sum(weights, axis=axis, keepdims=True), n


def mpo_loss(sample_log_probs: Any, sample_q_values: Any, temperature_constraint: LagrangePenalty,
             kl_constraints: Sequence[Tuple[Any, LagrangePenalty]],
             projection_operator: Callable = functools.partial(jnp.clip, min=_EPSILON),
             policy_loss_weight: float = 1., temperature_loss_weight: float = 1., kl_loss_weight: float = 1.,
             alpha_loss_weight: float = 1., sample_axis: int = 0, use_stop_gradient: bool = True):
    """MPO loss: `-sum_samples w log pi(a)` (w from the E-step, stopped) plus the temperature dual, the KL penalties
    and their multiplier losses, each scaled by its weight.

    Args:
        sample_log_probs, sample_q_values: float arrays of equal shape with samples along `sample_axis`.
        kl_constraints: pairs `(kl, LagrangePenalty)`; `kl` has the rank of the loss (one less than the samples'),
            plus one trailing axis when `per_dimension`.

    Returns:
        `(loss, MpoOutputs)`; `loss` has the batch shape (samples reduced).

    Raises:
        RLaxInputError: mismatched shapes, wrong ranks or dtypes. ValueError: `sample_axis` out of range.
    """
    fn = "mpo_loss"
    check_equal_shape(fn, [("sample_log_probs", sample_log_probs), ("sample_q_values", sample_q_values)])
    _check_penalty(fn, "temperature_constraint", temperature_constraint,
                   [("sample_log_probs", sample_log_probs, None, "float"),
                    ("sample_q_values", sample_q_values, None, "float")])
    ndim = sample_q_values.ndim
    _check_kl_constraints(fn, kl_constraints, lambda p: ndim if p.per_dimension else ndim - 1)
    axis = _normalize_axis(sample_axis, ndim)
    temperature_loss, weights, num_samples = mpo_compute_weights_and_temperature_loss(
        sample_q_values, temperature_constraint, projection_operator, sample_axis=axis)
    weights = maybe_stop_gradient(use_stop_gradient, weights)
    policy_loss = -jnp.sum(weights * sample_log_probs, axis=axis)
    kl_loss, alpha_loss = compute_parametric_kl_penalty_and_dual_loss(kl_constraints, projection_operator,
                                                                      use_stop_gradient)
    check_equal_shape(fn, [("policy_loss", policy_loss), ("kl_loss", kl_loss), ("alpha_loss", alpha_loss)])
    loss = (policy_loss_weight * policy_loss + temperature_loss_weight * temperature_loss
            + kl_loss_weight * kl_loss + alpha_loss_weight * alpha_loss)
    return loss, MpoOutputs(temperature_loss=temperature_loss, policy_loss=policy_loss, kl_loss=kl_loss,
                            alpha_loss=alpha_loss, normalized_weights=weights, num_samples=num_samples)


def get_top_k_weights(top_k_fraction: float, restarting_weights: Any, scaled_advantages: Any,
                      axis_name: Optional[str] = None, use_stop_gradient: bool = True) -> Any:
    """`restarting_weights` masked to the samples whose scaled advantage is among the top `top_k_fraction`
    (over all devices with `axis_name`); samples with restarting weight 0 are pushed to the bottom.

    Raises:
        ValueError: `top_k_fraction` outside (0, 1], or so small that no sample is kept.
    """
    check_equal_shape("get_top_k_weights", [("scaled_advantages", scaled_advantages),
                                            ("restarting_weights", restarting_weights)])
    if not 0.0 < top_k_fraction <= 1.0:
        raise ValueError(f"`top_k_fraction` must be in (0, 1], got {top_k_fraction}")
    if top_k_fraction == 1.0:
        return restarting_weights
    valid = scaled_advantages - (1.0 - restarting_weights) * _INFINITY
    everything = lax.all_gather(valid, axis_name=axis_name) if axis_name else valid
    top_k = int(top_k_fraction * everything.size)
    if top_k == 0:
        raise ValueError("top_k_fraction too low to get any valid scaled advantages.")
    threshold = jnp.sort(jnp.reshape(everything, [-1]))[-top_k]
    keep = maybe_stop_gradient(use_stop_gradient, (valid >= threshold).astype(jnp.float32))
    return restarting_weights * keep


def vmpo_compute_weights_and_temperature_loss(advantages: Any, restarting_weights: Any, importance_weights: Any,
                                              temperature_constraint: LagrangePenalty, projection_operator: Callable,
                                              top_k_fraction: float, axis_name: Optional[str] = None,
                                              use_stop_gradient: bool = True):
    """V-MPO's E-step over the top-k advantages: weights `w_i exp(A_i / eta - max)` normalised to sum 1, and the
    temperature dual `eta (epsilon + log mean_i w_i exp(A_i / eta))`.

    Returns:
        `(temperature_loss, normalized_weights, num_samples)`.

    Raises:
        RLaxInputError: mismatched shapes or non-float inputs. ValueError: bad `top_k_fraction`.
    """
    fn = "vmpo_compute_weights_and_temperature_loss"
    check_equal_shape(fn, [("advantages", advantages), ("restarting_weights", restarting_weights),
                           ("importance_weights", importance_weights)])
    _check_penalty(fn, "temperature_constraint", temperature_constraint,
                   [("advantages", advantages, None, "float"),
                    ("restarting_weights", restarting_weights, None, "float"),
                    ("importance_weights", importance_weights, None, "float")])
    importance_weights = maybe_stop_gradient(use_stop_gradient, importance_weights)
    temperature = projection_operator(temperature_constraint.alpha)
    scaled = restarting_weights * advantages / temperature
    max_scaled = jnp.max(scaled)
    if axis_name:
        if not use_stop_gradient:
            raise RLaxInputError(f"{fn}: a cross-device max requires use_stop_gradient=True")
        max_scaled = lax.pmax(lax.stop_gradient(max_scaled), axis_name=axis_name)
    else:
        max_scaled = maybe_stop_gradient(use_stop_gradient, max_scaled)
    top_k_weights = get_top_k_weights(top_k_fraction, restarting_weights, scaled, axis_name, use_stop_gradient)
    all_sum = AllSum(axis_name)
    unnormalized = top_k_weights * importance_weights * jnp.exp(scaled - max_scaled)
    sum_weights = all_sum(unnormalized) + _EPSILON
    num_samples = all_sum(top_k_weights) + _EPSILON
    weights = maybe_stop_gradient(use_stop_gradient, unnormalized / sum_weights)
    log_mean_weights = jnp.log(sum_weights) + max_scaled - jnp.log(num_samples)
    return temperature * (temperature_constraint.epsilon + log_mean_weights), weights, num_samples


def vmpo_loss(sample_log_probs: Any, advantages: Any, temperature_constraint: LagrangePenalty,
              kl_constraints: Sequence[Tuple[Any, LagrangePenalty]],
              projection_operator: Callable = functools.partial(jnp.clip, min=_EPSILON),
              restarting_weights: Any = None, importance_weights: Any = None, top_k_fraction: float = 0.5,
              policy_loss_weight: float = 1., temperature_loss_weight: float = 1., kl_loss_weight: float = 1.,
              alpha_loss_weight: float = 1., axis_name: Optional[str] = None, use_stop_gradient: bool = True):
    """V-MPO loss: `-log pi(a) w N` (w the normalised E-step weights, N the number of examples, over all devices
    with `axis_name`), plus temperature dual, KL penalties and multiplier losses, each scaled by its weight.

    Args:
        sample_log_probs, advantages, restarting_weights, importance_weights: float arrays of one shape (the last
            two default to ones). kl_constraints: pairs `(kl, LagrangePenalty)`; `kl` has the advantages' shape
            (plus a trailing axis when `per_dimension`).

    Returns:
        `(loss, MpoOutputs)`, `loss` of the advantages' shape.

    Raises:
        RLaxInputError: mismatched shapes, wrong ranks or dtypes. ValueError: bad `top_k_fraction`.
    """
    fn = "vmpo_loss"
    if restarting_weights is None:
        restarting_weights = jnp.ones_like(sample_log_probs)
    if importance_weights is None:
        importance_weights = jnp.ones_like(sample_log_probs)
    check_equal_shape(fn, [("advantages", advantages), ("sample_log_probs", sample_log_probs),
                           ("restarting_weights", restarting_weights), ("importance_weights", importance_weights)])
    _check_penalty(fn, "temperature_constraint", temperature_constraint,
                   [("sample_log_probs", sample_log_probs, None, "float"),
                    ("advantages", advantages, None, "float")])
    _check_kl_constraints(fn, kl_constraints)
    for i, (kl, penalty) in enumerate(kl_constraints):
        if penalty.per_dimension:
            check_rank(fn, [(f"kl_constraints[{i}] kl", kl, advantages.ndim + 1)])
            check_equal_shape(fn, [(f"kl_constraints[{i}] kl[..., 0]", kl[..., 0]), ("advantages", advantages)])
        else:
            check_equal_shape(fn, [(f"kl_constraints[{i}] kl", kl), ("advantages", advantages)])
    temperature_loss, weights, num_samples = vmpo_compute_weights_and_temperature_loss(
        advantages, restarting_weights, importance_weights, temperature_constraint, projection_operator,
        top_k_fraction, axis_name=axis_name, use_stop_gradient=use_stop_gradient)
    num_examples = lax.all_gather(sample_log_probs, axis_name=axis_name).size if axis_name else sample_log_probs.size
    policy_loss = -sample_log_probs * weights * num_examples
    kl_loss, alpha_loss = compute_parametric_kl_penalty_and_dual_loss(kl_constraints, projection_operator,
                                                                      use_stop_gradient)
    check_equal_shape(fn, [("policy_loss", policy_loss), ("kl_loss", kl_loss), ("alpha_loss", alpha_loss)])
    loss = (policy_loss_weight * policy_loss + temperature_loss_weight * temperature_loss
            + kl_loss_weight * kl_loss + alpha_loss_weight * alpha_loss)
    return loss, MpoOutputs(temperature_loss=temperature_loss, policy_loss=policy_loss, kl_loss=kl_loss,
                            alpha_loss=alpha_loss, normalized_weights=weights, num_samples=num_samples)
