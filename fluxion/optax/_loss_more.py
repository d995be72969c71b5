r"""More loss functions: margin losses, KL divergences, cosine and contrastive losses.

All return per-example losses (no reduction) unless stated otherwise;
``ntxent`` returns the batch loss, as in optax.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Union

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, nn

from ._loss import _check_floating, sigmoid_binary_cross_entropy, softmax_cross_entropy
from ._projections import _projection_unit_simplex

Axis = Union[int, tuple[int, ...], None]


def _check_same_shape(a: Any, b: Any, fn: str) -> None:
    if jnp.shape(a) != jnp.shape(b):
        raise ValueError(f'{fn}: arguments must have the same shape, got {jnp.shape(a)} and '
                         f'{jnp.shape(b)}.')


def safe_softmax_cross_entropy(logits: Any, labels: Any) -> Any:
    r"""Softmax cross entropy that is finite when some logits are :math:`-\infty`.

    Classes with label 0 contribute 0 even where the log-probability is
    :math:`-\infty` (the convention :math:`0 \log 0 = 0`), so masking logits
    with ``-inf`` is safe. Class axis: last.

    Raises:
        ValueError: if ``logits`` is not floating.
    """
    _check_floating(logits, 'logits', 'safe_softmax_cross_entropy')
    log_probs = nn.log_softmax(jnp.asarray(logits), axis=-1)
    weighted = jnp.where(labels != 0.0, labels * log_probs, jnp.zeros_like(log_probs))
    return -jnp.sum(weighted, axis=-1)


def sigmoid_focal_loss(logits: Any, labels: Any, *, alpha: Optional[Any] = None,
                       gamma: Any = 2.0) -> Any:
    r"""Focal loss (Lin et al., "Focal Loss for Dense Object Detection", ICCV 2017).

    :math:`(1 - p_t)^\gamma\,\mathrm{BCE}(z, y)` with :math:`p_t` the probability
    of the true label, optionally weighted by :math:`\alpha` for positives and
    :math:`1-\alpha` for negatives. Elementwise.

    Raises:
        ValueError: if ``logits`` is not floating.
    """
    _check_floating(logits, 'logits', 'sigmoid_focal_loss')
    logits = jnp.asarray(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    ce = sigmoid_binary_cross_entropy(logits, labels)
    log_p, log_q = nn.log_sigmoid(logits), nn.log_sigmoid(-logits)
    # log(1 - p_t) = log((1 - y) p + y q), computed stably.
    top = jnp.maximum(log_p, log_q)
    log_one_minus_pt = top + jnp.log((1 - labels) * jnp.exp(log_p - top)
                                     + labels * jnp.exp(log_q - top))
    loss = ce * jnp.exp(gamma * log_one_minus_pt)
    if alpha is None:
        return loss
    return (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss


def hinge_loss(predictor_outputs: Any, targets: Any) -> Any:
    r"""Binary hinge loss :math:`\max(0, 1 - s\,t)` for targets in {-1, 1}."""
    return jnp.maximum(0, 1 - predictor_outputs * targets)


def perceptron_loss(predictor_outputs: Any, targets: Any) -> Any:
    r"""Binary perceptron loss :math:`\max(0, -s\,t)`.

    Raises:
        ValueError: if the shapes differ.
    """
    _check_same_shape(predictor_outputs, targets, 'perceptron_loss')
    return jnp.maximum(0, -predictor_outputs * targets)


def _true_class_score(scores: Any, labels: Any) -> tuple[Any, Any]:
    one_hot = nn.one_hot(labels, scores.shape[-1])
    return one_hot, jnp.sum(scores * one_hot, axis=-1)


def multiclass_hinge_loss(scores: Any, labels: Any) -> Any:
    r"""Crammer-Singer multiclass hinge loss :math:`\max_c(s_c + 1[c \ne y]) - s_y`."""
    one_hot, true = _true_class_score(scores, labels)
    return jnp.max(scores + 1.0 - one_hot, axis=-1) - true


def multiclass_perceptron_loss(scores: Any, labels: Any) -> Any:
    r"""Multiclass perceptron loss :math:`\max_c s_c - s_y`."""
    _, true = _true_class_score(scores, labels)
    return jnp.max(scores, axis=-1) - true


def sparsemax_loss(logits: Any, labels: Any) -> Any:
    """Binary sparsemax loss (Martins & Astudillo, ICML 2016): ``sparse_plus(-z)`` for
    positive labels and ``sparse_plus(z)`` for negative ones."""
    return nn.sparse_plus(jnp.where(labels, -logits, logits))


def poly_loss_cross_entropy(logits: Any, labels: Any, *, epsilon: Any = 2.0, axis: Axis = -1,
                            where: Optional[Any] = None) -> Any:
    r"""Poly-1 loss (Leng et al., "PolyLoss", ICLR 2022): cross entropy plus
    :math:`\epsilon (1 - p_t)`, with :math:`1 - p_t = \sum_c y_c (1 - p_c)`.

    Raises:
        ValueError: if ``logits`` or ``labels`` is not floating.
    """
    _check_floating(logits, 'logits', 'poly_loss_cross_entropy')
    _check_floating(labels, 'labels', 'poly_loss_cross_entropy')
    logits = jnp.asarray(logits)
    if where is None:
        p = nn.softmax(logits, axis=axis)
        one_minus_pt = jnp.sum(labels * (1 - p), axis=axis)
    else:
        p = nn.softmax(logits, axis=axis, where=where)
        one_minus_pt = jnp.sum(labels * (1 - p), axis=axis, where=where)
    return softmax_cross_entropy(logits, labels, axis=axis, where=where) + epsilon * one_minus_pt


def _masked_sum(x: Any, axis: Axis, where: Optional[Any]) -> Any:
    return jnp.sum(x, axis=axis) if where is None else jnp.sum(x, axis=axis, where=where)


def kl_divergence(log_predictions: Any, targets: Any, axis: Axis = -1,
                  where: Optional[Any] = None) -> Any:
    r"""Kullback-Leibler divergence :math:`\sum_c t_c(\log t_c - \log p_c)` (0 log 0 = 0).

    Raises:
        ValueError: if an input is not floating.
    """
    _check_floating(log_predictions, 'log_predictions', 'kl_divergence')
    _check_floating(targets, 'targets', 'kl_divergence')
    loss = targets * (jnp.where(targets == 0, 0, jnp.log(targets)) - log_predictions)
    return _masked_sum(loss, axis, where)


def kl_divergence_with_log_targets(log_predictions: Any, log_targets: Any, axis: Axis = -1,
                                   where: Optional[Any] = None) -> Any:
    r"""KL divergence with the targets given as log-probabilities.

    Raises:
        ValueError: if an input is not floating.
    """
    _check_floating(log_predictions, 'log_predictions', 'kl_divergence_with_log_targets')
    _check_floating(log_targets, 'log_targets', 'kl_divergence_with_log_targets')
    return _masked_sum(jnp.exp(log_targets) * (log_targets - log_predictions), axis, where)


def generalized_kl_divergence(log_predictions: Any, targets: Any, axis: Axis = -1,
                              where: Optional[Any] = None) -> Any:
    r"""Generalized KL divergence for unnormalised measures:
    :math:`\mathrm{KL}(t\|p) + \sum_c (p_c - t_c)` (convex in both arguments)."""
    return (kl_divergence(log_predictions, targets, axis=axis, where=where)
            + _masked_sum(jnp.exp(log_predictions) - targets, axis, where))


def convex_kl_divergence(log_predictions: Any, targets: Any, axis: Axis = -1,
                         where: Optional[Any] = None) -> Any:
    """Deprecated name of :func:`generalized_kl_divergence` (warns)."""
    warnings.warn('convex_kl_divergence is deprecated, use generalized_kl_divergence.',
                  DeprecationWarning, stacklevel=2)
    return generalized_kl_divergence(log_predictions, targets, axis=axis, where=where)


def cosine_similarity(predictions: Any, targets: Any, *, epsilon: Any = 0.0, axis: Axis = -1,
                      where: Optional[Any] = None) -> Any:
    r"""Cosine similarity :math:`\langle a, b\rangle / (\|a\|\|b\|)` along ``axis``;
    squared norms are clipped below at ``epsilon``.

    Raises:
        ValueError: if an input is not floating.
    """
    _check_floating(predictions, 'predictions', 'cosine_similarity')
    _check_floating(targets, 'targets', 'cosine_similarity')
    a, b = jnp.asarray(predictions), jnp.asarray(targets)
    if where is None:
        a_sq = jnp.sum(jnp.square(a), axis=axis, keepdims=True)
        b_sq = jnp.sum(jnp.square(b), axis=axis, keepdims=True)
    else:
        a_sq = jnp.sum(jnp.square(a), axis=axis, where=where, keepdims=True)
        b_sq = jnp.sum(jnp.square(b), axis=axis, where=where, keepdims=True)
    unit_a = a / jnp.sqrt(jnp.maximum(a_sq, epsilon))
    unit_b = b / jnp.sqrt(jnp.maximum(b_sq, epsilon))
    return _masked_sum(unit_a * unit_b, axis, where)


def cosine_distance(predictions: Any, targets: Any, *, epsilon: Any = 0.0, axis: Axis = -1,
                    where: Optional[Any] = None) -> Any:
    """``1 - cosine_similarity(...)``."""
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis, where=where)


def ntxent(embeddings: Any, labels: Any, temperature: Any = 0.07) -> Any:
    r"""Normalized temperature-scaled cross entropy (SimCLR; Chen et al. 2020).

    For each pair of distinct examples with equal labels (positives), the
    softmax over its cosine similarity (divided by ``temperature``) against
    all negatives of the anchor; returns the mean negative log-likelihood over
    positive pairs (a scalar).

    Args:
        embeddings: ``[batch, dim]`` floats. labels: ``[batch]`` integers.

    Raises:
        ValueError: for non-floating embeddings or mismatched batch sizes.
    """
    _check_floating(embeddings, 'embeddings', 'ntxent')
    embeddings, labels = jnp.asarray(embeddings), jnp.asarray(labels)
    if labels.shape[0] != embeddings.shape[0]:
        raise ValueError(f'ntxent: labels and embeddings need the same leading size, got '
                         f'{labels.shape[0]} and {embeddings.shape[0]}.')
    sims = cosine_similarity(embeddings[None, :, :], embeddings[:, None, :],
                             epsilon=np.finfo(np.dtype(embeddings.dtype)).eps) / temperature
    same = labels[:, None] == labels[None, :]
    negatives = jnp.logical_not(same)
    positives = jnp.logical_and(same, jnp.logical_not(jnp.eye(same.shape[0], dtype=bool)))
    neg_sims = jnp.where(negatives, sims, -jnp.inf)
    pos_sims = jnp.where(positives, sims, -jnp.inf)
    shift = lax.stop_gradient(jnp.max(jnp.concatenate([neg_sims, pos_sims], axis=-1), axis=1,
                                      keepdims=True))
    neg_shift, pos_shift = neg_sims - shift, pos_sims - shift
    denom = jnp.sum(jnp.exp(neg_shift), axis=1, keepdims=True) + jnp.exp(pos_shift)
    log_softmax = pos_shift - jnp.log(denom)
    return -jnp.sum(jnp.where(positives, log_softmax, 0.0)) / jnp.sum(positives)


def triplet_margin_loss(anchors: Any, positives: Any, negatives: Any, axis: int = -1,
                        norm_degree: Any = 2, margin: Any = 1.0, eps: Any = 1e-6) -> Any:
    r"""Triplet margin loss (Schroff et al., FaceNet 2015):
    :math:`\max(d(a, p) - d(a, n) + m, 0)` with
    :math:`d(x, y) = (\sum (x - y)^q + \epsilon)^{1/q}`.

    Raises:
        ValueError: if an input is not floating.
    """
    for name, x in (('anchors', anchors), ('positives', positives), ('negatives', negatives)):
        _check_floating(x, name, 'triplet_margin_loss')

    def dist(x, y):
        return jnp.power(jnp.sum(jnp.power(x - y, norm_degree), axis=axis) + eps, 1 / norm_degree)

    return jnp.maximum(dist(anchors, positives) - dist(anchors, negatives) + margin, 0)


def _last_axis_map(fn: Any, *arrays: Any) -> Any:
    """Applies ``fn`` (vectors -> scalar) over the last axis of arrays with equal batch shapes."""
    batch = jnp.shape(arrays[0])[:-1]
    flat = [jnp.reshape(a, (-1, jnp.shape(a)[-1])) for a in arrays]
    return jnp.reshape(fluxion.vmap(fn)(*flat), batch)


def make_fenchel_young_loss(max_fun: Any) -> Any:
    r"""Builds the Fenchel-Young loss :math:`\Omega^*(\theta) - \langle y, \theta\rangle`
    (Blondel, Martins & Niculae, JMLR 2020) from a convex "max" function
    :math:`\Omega^*` of a score vector (e.g. ``logsumexp`` gives the softmax
    cross entropy). The loss maps over leading axes; extra args go to ``max_fun``.
    """

    def fenchel_young_loss(scores, targets, *args, **kwargs):
        scores, targets = jnp.asarray(scores), jnp.asarray(targets)
        max_value = _last_axis_map(lambda s: max_fun(s, *args, **kwargs), scores)
        return max_value - jnp.sum(targets * scores, axis=-1)

    return fenchel_young_loss


def multiclass_sparsemax_loss(scores: Any, labels: Any) -> Any:
    r"""Sparsemax loss (Martins & Astudillo, ICML 2016) for ``[batch, classes]`` scores
    and integer labels: the Fenchel-Young loss of the sparsemax (simplex projection)."""
    def one(s, label):
        proba = _projection_unit_simplex(s)
        shifted = (s - s[label]).at[label].set(0.0)
        return jnp.dot(proba, jnp.where(proba != 0, shifted, 0.0)) + \
            0.5 * (1.0 - jnp.dot(proba, proba))

    return fluxion.vmap(one)(jnp.asarray(scores), jnp.asarray(labels))


def ranking_softmax_loss(logits: Any, labels: Any, *, where: Optional[Any] = None,
                         weights: Optional[Any] = None, reduce_fn: Optional[Any] = jnp.mean
                         ) -> Any:
    r"""Listwise softmax ranking loss (ListNet-style; Cao et al., ICML 2007):
    :math:`-\sum_i y_i \log \mathrm{softmax}(s)_i` per list (last axis), then
    reduced over lists with ``reduce_fn`` (None: no reduction).

    Args:
        where: boolean mask of valid items; lists with no valid item count as 0
            (and are excluded from the mean).
        weights: per-item label weights.

    Raises:
        ValueError: if ``logits`` is not floating.
    """
    _check_floating(logits, 'logits', 'ranking_softmax_loss')
    logits = jnp.asarray(logits)
    labels = jnp.asarray(labels).astype(logits.dtype)
    if where is not None:
        labels = jnp.where(where, labels, jnp.zeros_like(labels))
        logits = jnp.where(where, logits, -jnp.ones_like(logits) * jnp.inf)
    if weights is not None:
        labels = labels * weights
    per_item = labels * nn.log_softmax(logits, axis=-1)
    loss = -_masked_sum(per_item, -1, where)
    list_mask = None if where is None else jnp.any(where, axis=-1)
    if reduce_fn is None:
        return loss if list_mask is None else jnp.where(list_mask, loss, 0.0)
    out = reduce_fn(loss) if list_mask is None else reduce_fn(loss, where=list_mask)
    if reduce_fn is jnp.mean:
        # An empty mean (no valid list) is 0, unless the input itself had NaNs.
        out = jnp.where(jnp.isnan(out) & jnp.logical_not(jnp.any(jnp.isnan(loss))), 0.0, out)
    return out
