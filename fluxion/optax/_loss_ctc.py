r"""Connectionist temporal classification loss (Graves, Fernández, Gomez &
Schmidhuber, ICML 2006), by the forward algorithm in log space.

The forward variables are kept in two arrays per step: ``phi[n]`` for paths
that have emitted the first ``n`` labels and currently sit on a blank, and
``emit[n]`` for paths currently emitting label ``n``. A transition between
two equal consecutive labels must pass through a blank; this is enforced by
adding ``log_epsilon`` (a large negative number standing for log 0) to the
forbidden transitions, as optax does.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax, nn


def _check_rank(x: Any, rank: int, name: str) -> None:
    if jnp.ndim(x) != rank:
        raise ValueError(f'ctc_loss: `{name}` must have rank {rank}, got shape {jnp.shape(x)}.')


def ctc_loss_with_forward_probs(logits: Any, logit_paddings: Any, labels: Any,
                                label_paddings: Any, *, blank_id: int = 0,
                                log_epsilon: Any = -1e5) -> tuple[Any, Any, Any]:
    """CTC loss and the forward log-probabilities.

    Args:
        logits: ``[B, T, K]`` unnormalised scores.
        logit_paddings: ``[B, T]``, 1.0 at padded frames.
        labels: ``[B, N]`` integer labels. label_paddings: ``[B, N]``, 1.0 at padding.
        blank_id: the blank class.
        log_epsilon: stands for log(0).

    Returns:
        ``(per_seq_loss [B], logalpha_phi [T, B, N+1], logalpha_emit [T, B, N])``.

    Raises:
        ValueError: for wrong ranks or mismatched shapes / batch sizes.
    """
    logits, labels = jnp.asarray(logits), jnp.asarray(labels)
    logit_paddings, label_paddings = jnp.asarray(logit_paddings), jnp.asarray(label_paddings)
    _check_rank(logits, 3, 'logits')
    _check_rank(labels, 2, 'labels')
    if labels.shape != label_paddings.shape or logits.shape[:2] != logit_paddings.shape:
        raise ValueError('ctc_loss: paddings must match: labels '
                         f'{labels.shape} vs {label_paddings.shape}, logits '
                         f'{logits.shape[:2]} vs {logit_paddings.shape}.')
    batch, _, num_classes = logits.shape
    if labels.shape[0] != batch:
        raise ValueError(f'ctc_loss: labels have batch size {labels.shape[0]}, logits {batch}.')
    max_len = labels.shape[1]

    logprobs = nn.log_softmax(logits)
    label_lens = max_len - jnp.sum(label_paddings, axis=1).astype(jnp.int32)
    # repeat[n] = 1 when label n equals label n + 1 (the blank between them is mandatory).
    repeat = jnp.pad((labels[:, :-1] == labels[:, 1:]).astype(jnp.float32), ((0, 0), (0, 1)))
    blank_lp = jnp.transpose(logprobs[:, :, blank_id:blank_id + 1], (1, 0, 2))      # [T, B, 1]
    emit_lp = jnp.transpose(
        jnp.einsum('btk,bnk->btn', logprobs, nn.one_hot(labels, num_classes)), (1, 0, 2))

    phi0 = (jnp.ones((batch, max_len + 1)) * log_epsilon).at[:, 0].set(0.0)
    emit0 = jnp.ones((batch, max_len)) * log_epsilon

    def merge_into_phi(phi, score):
        # Blank state n + 1 is also reachable from emitting label n.
        return jnp.concatenate([phi[:, :1], jnp.logaddexp(phi[:, 1:], score)], axis=-1)

    def step(carry, x):
        prev_phi, prev_emit = carry
        lp_emit, lp_blank, pad = x
        phi = merge_into_phi(prev_phi, prev_emit + log_epsilon * repeat)
        emit = jnp.logaddexp(phi[:, :-1] + lp_emit, prev_emit + lp_emit)
        new_phi = merge_into_phi(phi + lp_blank,
                                 prev_emit + lp_blank + log_epsilon * (1.0 - repeat))
        pad = pad.reshape((batch, 1))
        emit = pad * prev_emit + (1.0 - pad) * emit
        new_phi = pad * prev_phi + (1.0 - pad) * new_phi
        return (new_phi, emit), (new_phi, emit)

    _, (log_phi, log_emit) = lax.scan(step, (phi0, emit0),
                                      (emit_lp, blank_lp, jnp.transpose(logit_paddings, (1, 0))))
    last = merge_into_phi(log_phi[-1], log_emit[-1])
    log_phi = log_phi.at[-1].set(last)
    per_seq = -jnp.sum(last * nn.one_hot(label_lens, max_len + 1), axis=-1)
    return per_seq, log_phi, log_emit


def ctc_loss(logits: Any, logit_paddings: Any, labels: Any, label_paddings: Any, *,
             blank_id: int = 0, log_epsilon: Any = -1e5) -> Any:
    """Per-sequence CTC loss ``[B]`` (negative log-likelihood of the label sequence);
    see :func:`ctc_loss_with_forward_probs`."""
    return ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings,
                                       blank_id=blank_id, log_epsilon=log_epsilon)[0]
