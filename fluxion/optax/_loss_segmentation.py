r"""Dice losses for segmentation (Milletari et al., V-Net, 2016; the Tversky
generalisation with weights alpha/beta, Salehi et al. 2017; generalized Dice
with inverse-squared-frequency class weights, Sudre et al. 2017)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

import fluxion.numpy as jnp
from fluxion import nn


def _reduce(loss: Any, reduction: str, axis: Optional[int] = None) -> Any:
    if reduction == 'mean':
        return jnp.mean(loss, axis=axis)
    if reduction == 'sum':
        return jnp.sum(loss, axis=axis)
    if reduction == 'none':
        return loss
    raise ValueError(f"dice_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}.")


def dice_loss(predictions: Any, targets: Any, *, class_weights: Optional[Any] = None,
              smooth: Any = 1.0, alpha: Any = 0.5, beta: Any = 0.5, apply_softmax: bool = True,
              reduction: str = 'mean', ignore_background: bool = False,
              axis: Optional[Any] = None) -> Any:
    r"""Per-example (Tversky) Dice loss :math:`1 - \frac{I + s}{I + \alpha(P - I) + \beta(T - I) + s}`.

    Args:
        predictions: ``[batch, ..., classes]`` logits (or probabilities with
            ``apply_softmax=False``); a single class uses a sigmoid.
        targets: one-hot (or soft) targets of the same shape.
        class_weights: ``[classes]`` weights of the per-class losses.
        axis: spatial axes to sum over (default: all but the first and last).
        reduction: over classes: 'mean', 'sum' or 'none'.

    Returns:
        ``[batch]`` (or ``[batch, classes]`` with reduction 'none').

    Raises:
        ValueError: mismatched shapes, probabilities that do not sum to 1 when
            ``apply_softmax=False`` (checked eagerly), bad weights or reduction.
    """
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim - 1:
        predictions = predictions[..., None]
    if targets.ndim == predictions.ndim - 1:
        targets = targets[..., None]
    if predictions.shape != targets.shape:
        raise ValueError(f'dice_loss: predictions {predictions.shape} and targets '
                         f'{targets.shape} must have the same shape.')
    if apply_softmax:
        probs = nn.sigmoid(predictions) if predictions.shape[-1] == 1 else \
            nn.softmax(predictions, axis=-1)
    else:
        sums = np.asarray(jnp.sum(predictions, axis=-1))
        if not np.allclose(sums, 1.0, rtol=1e-5):
            raise ValueError('dice_loss: with apply_softmax=False, predictions must sum to 1 '
                             f'over classes; sums range over [{sums.min():.6f}, '
                             f'{sums.max():.6f}].')
        probs = predictions
    axis = tuple(range(1, probs.ndim - 1)) if axis is None else axis
    inter = jnp.sum(probs * targets, axis=axis)
    pred_sum = jnp.sum(probs, axis=axis)
    target_sum = jnp.sum(targets, axis=axis)
    coeff = (inter + smooth) / (inter + alpha * (pred_sum - inter) + beta * (target_sum - inter)
                                + smooth)
    loss = 1.0 - coeff
    if class_weights is not None:
        if jnp.ndim(class_weights) != 1:
            raise ValueError(f'dice_loss: class_weights must be 1-d, got shape '
                             f'{jnp.shape(class_weights)}.')
        loss = loss * class_weights
    if ignore_background and probs.shape[-1] > 1:
        loss = loss[..., 1:]
    return _reduce(loss, reduction, axis=-1)


def multiclass_generalized_dice_loss(predictions: Any, targets: Any, *, smooth: Any = 1.0,
                                     apply_softmax: bool = True,
                                     ignore_background: bool = False) -> Any:
    """Generalized Dice: class weights ``1/(freq^2 + 1e-7)`` normalised to mean 1; a scalar.

    Raises:
        ValueError: if the shapes differ.
    """
    if jnp.shape(predictions) != jnp.shape(targets):
        raise ValueError(f'multiclass_generalized_dice_loss: shapes differ: '
                         f'{jnp.shape(predictions)} vs {jnp.shape(targets)}.')
    targets = jnp.asarray(targets)
    freq = jnp.sum(targets, axis=tuple(range(targets.ndim - 1)))
    weights = 1.0 / (freq ** 2 + 1e-7)
    weights = weights / jnp.sum(weights) * weights.shape[0]
    return jnp.mean(dice_loss(predictions, targets, class_weights=weights, smooth=smooth,
                              apply_softmax=apply_softmax, reduction='none',
                              ignore_background=ignore_background))


def binary_dice_loss(predictions: Any, targets: Any, *, smooth: Any = 1.0,
                     apply_sigmoid: bool = True) -> Any:
    """Dice loss for binary masks ``[batch, ...]`` (sigmoid of logits by default)."""
    predictions, targets = jnp.asarray(predictions), jnp.asarray(targets)
    if predictions.ndim == targets.ndim and predictions.shape[-1] != 1:
        predictions, targets = predictions[..., None], targets[..., None]
    return dice_loss(predictions, targets, smooth=smooth, apply_softmax=apply_sigmoid,
                     reduction='mean')
