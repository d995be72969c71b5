r"""Common loss functions. All return *per-example* losses (no reduction).

Take ``.mean()`` of the result for a batch loss.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import fluxion.numpy as jnp
from fluxion import nn


def _check_floating(x: Any, name: str, fn: str) -> None:
    dtype = jnp.asarray(x).dtype
    if not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f'{fn}: `{name}` must have a floating dtype, got {dtype}.')


def _check_integer(x: Any, name: str, fn: str) -> None:
    dtype = jnp.asarray(x).dtype
    if not jnp.issubdtype(dtype, jnp.integer):
        raise ValueError(f'{fn}: `{name}` must have an integer dtype, got {dtype}.')


def softmax_cross_entropy(logits: Any, labels: Any, axis: Union[int, tuple[int, ...], None] = -1,
                          where: Optional[Any] = None) -> Any:
    r"""Cross entropy between ``labels`` (a distribution) and ``softmax(logits)``.

    :math:`\ell = -\sum_c y_c \log \mathrm{softmax}(z)_c`.

    Args:
        logits: float array ``[..., num_classes]``.
        labels: array broadcastable to ``logits`` (one-hot or probabilities).
        axis: class axis (or axes).
        where: optional boolean mask of classes to include.

    Returns:
        Array of shape ``logits.shape`` without ``axis``.

    Raises:
        ValueError: if ``logits`` is not floating.
    """
    _check_floating(logits, 'logits', 'softmax_cross_entropy')
    logits = jnp.asarray(logits)
    if where is None:
        log_probs = nn.log_softmax(logits, axis=axis)
        return -jnp.sum(labels * log_probs, axis=axis)
    where = jnp.asarray(where)
    if where.ndim != logits.ndim:
        where = jnp.expand_dims(where, axis)
    log_probs = nn.log_softmax(logits, axis=axis, where=where)
    return -jnp.sum(labels * log_probs, axis=axis, where=where)


def softmax_cross_entropy_with_integer_labels(logits: Any, labels: Any, axis: int = -1,
                                              where: Optional[Any] = None) -> Any:
    r"""Cross entropy with class indices: :math:`\mathrm{logsumexp}(z) - z_{y}`.

    Equivalent to ``softmax_cross_entropy(logits, one_hot(labels))`` but only
    the normalizer and the label's logit are computed.

    Args:
        logits: float array ``[..., num_classes]``.
        labels: integer array ``[...]`` with values in ``[0, num_classes)``.
        axis: class axis of ``logits`` (an int).
        where: optional boolean mask of classes to include.

    Returns:
        Array of shape ``labels.shape``.

    Raises:
        ValueError: for non-floating logits, non-integer labels, a non-int
            ``axis`` or mismatched batch shapes.
    """
    fn = 'softmax_cross_entropy_with_integer_labels'
    _check_floating(logits, 'logits', fn)
    _check_integer(labels, 'labels', fn)
    if not isinstance(axis, int):
        raise ValueError(f'{fn}: `axis` must be an int, got {type(axis).__name__}.')
    logits, labels = jnp.asarray(logits), jnp.asarray(labels)
    axis = axis % logits.ndim
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1:]
    if tuple(labels.shape) != tuple(batch_shape):
        raise ValueError(f'{fn}: `labels` shape {labels.shape} must equal `logits` shape '
                         f'{logits.shape} without axis {axis}, i.e. {batch_shape}.')
    label_logits = jnp.take_along_axis(logits, jnp.expand_dims(labels, axis), axis=axis)
    label_logits = jnp.squeeze(label_logits, axis=axis)
    if where is None:
        return nn.logsumexp(logits, axis=axis) - label_logits
    where = jnp.asarray(where)
    if where.ndim != logits.ndim:
        where = jnp.expand_dims(where, axis)
    out = nn.logsumexp(logits, axis=axis, where=where) - label_logits
    return jnp.where(jnp.any(where, axis), out, 0.0)


def sigmoid_binary_cross_entropy(logits: Any, labels: Any) -> Any:
    r"""Elementwise binary cross entropy on logits.

    :math:`\ell = -y \log\sigma(z) - (1-y)\log(1-\sigma(z))`, computed with
    ``log_sigmoid`` for stability (:math:`\log(1-\sigma(z)) = \log\sigma(-z)`).

    Args:
        logits: float array.
        labels: array of the same shape with values in [0, 1] (cast to the
            logits' dtype).

    Returns:
        Array of the broadcast shape.

    Raises:
        ValueError: if ``logits`` is not floating.
    """
    _check_floating(logits, 'logits', 'sigmoid_binary_cross_entropy')
    logits = jnp.asarray(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    log_p = nn.log_sigmoid(logits)
    log_not_p = nn.log_sigmoid(-logits)
    return -labels * log_p - (1.0 - labels) * log_not_p


def squared_error(predictions: Any, targets: Optional[Any] = None) -> Any:
    """Elementwise ``(predictions - targets) ** 2`` (targets default to 0).

    Raises:
        ValueError: for non-floating predictions or differing shapes.
    """
    _check_floating(predictions, 'predictions', 'squared_error')
    predictions = jnp.asarray(predictions)
    if targets is None:
        return predictions ** 2
    targets = jnp.asarray(targets)
    if predictions.shape != targets.shape:
        raise ValueError(f'squared_error: `predictions` shape {predictions.shape} and '
                         f'`targets` shape {targets.shape} must be equal.')
    return (predictions - targets) ** 2


def l2_loss(predictions: Any, targets: Optional[Any] = None) -> Any:
    """Elementwise ``0.5 * (predictions - targets) ** 2`` (half squared error).

    Raises:
        ValueError: for non-floating predictions or differing shapes.
    """
    return 0.5 * squared_error(predictions, targets)


def huber_loss(predictions: Any, targets: Optional[Any] = None, *, delta: Any = 1.0) -> Any:
    r"""Elementwise Huber loss (Huber 1964).

    With :math:`e = |p - t|`: :math:`\tfrac12 e^2` if :math:`e \le \delta`,
    else :math:`\tfrac12\delta^2 + \delta(e - \delta)`.

    Args:
        predictions: float array.
        targets: array broadcastable to ``predictions`` (default 0).
        delta: threshold between the quadratic and linear regimes.

    Returns:
        Array of the broadcast shape.

    Raises:
        ValueError: if ``predictions`` is not floating.
    """
    _check_floating(predictions, 'predictions', 'huber_loss')
    predictions = jnp.asarray(predictions)
    errors = predictions - targets if targets is not None else predictions
    abs_errors = jnp.abs(errors)
    quadratic = jnp.minimum(abs_errors, delta)
    # abs - min(abs, delta) == max(abs - delta, 0) without a second branch
    # whose gradient would be added at |e| == delta.
    linear = abs_errors - quadratic
    return 0.5 * quadratic ** 2 + delta * linear


def log_cosh(predictions: Any, targets: Optional[Any] = None) -> Any:
    r"""Elementwise :math:`\log\cosh(p - t)` (Chen et al. 2019).

    Computed as ``logaddexp(e, -e) - log 2``, which never overflows. It is
    about :math:`e^2/2` for small errors and :math:`|e| - \log 2` for large ones.

    Raises:
        ValueError: if ``predictions`` is not floating.
    """
    _check_floating(predictions, 'predictions', 'log_cosh')
    predictions = jnp.asarray(predictions)
    errors = predictions - targets if targets is not None else predictions
    return jnp.logaddexp(errors, -errors) - jnp.log(2.0).astype(errors.dtype)


def smooth_labels(labels: Any, alpha: float, axis: int = -1) -> Any:
    r"""Label smoothing (Szegedy et al. 2016): :math:`(1-\alpha) y + \alpha / K`.

    Args:
        labels: one-hot float array with ``K`` classes along ``axis``.
        alpha: smoothing factor in [0, 1].
        axis: class axis.

    Returns:
        The smoothed labels, same shape.

    Raises:
        ValueError: if ``labels`` is not floating.
    """
    _check_floating(labels, 'labels', 'smooth_labels')
    labels = jnp.asarray(labels)
    num_categories = labels.shape[axis]
    return (1.0 - alpha) * labels + alpha / num_categories
