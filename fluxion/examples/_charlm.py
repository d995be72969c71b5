"""What the character-level language-model examples share, whatever library builds the model: the vocabulary, the
Tiny Shakespeare split, random training windows, the next-character loss, the training loop and sampling.

Used by `lstm_shakespeare` (Haiku) and `lstm_flax` (Linen and NNX).
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any, Callable, Sequence

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import optax, random
from fluxion.datasets import tinyshakespeare

__all__ = ["Vocab", "load_split", "windows", "next_char_xent", "fit", "sample_text", "add_training_args",
           "make_optimizer"]


class Vocab:
    """Maps the distinct characters of a text (sorted) to ids 0..size-1 and back."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.size = len(self.chars)
        self._ids = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text: str) -> np.ndarray:
        """int32 ids of `text`'s characters. Raises ValueError for a character outside the vocabulary."""
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        # A code-point -> id table (-1 for unknown) encodes a million characters in milliseconds.
        table = np.full(max(max(map(ord, self.chars)), int(codes.max(initial=0))) + 1, -1, np.int32)
        table[[ord(c) for c in self.chars]] = np.arange(self.size, dtype=np.int32)
        ids = table[codes]
        if (ids < 0).any():
            bad = text[int(np.argmax(ids < 0))]
            raise ValueError(f"character {bad!r} is not in the vocabulary")
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def load_split(data_dir: Any = None) -> tuple[Vocab, np.ndarray, np.ndarray]:
    """Tiny Shakespeare as `(vocab, training ids (first 90%), held-out ids (last 10%))`."""
    text = tinyshakespeare.load(data_dir)
    vocab = Vocab(text)
    data = vocab.encode(text)
    split = int(0.9 * len(data))
    return vocab, data[:split], data[split:]


def windows(data: np.ndarray, rng: np.random.Generator, seq_len: int, batch: int) -> np.ndarray:
    """`batch` random windows of `seq_len + 1` characters, time-major `(seq_len + 1, batch)`."""
    starts = rng.integers(0, len(data) - seq_len - 1, size=batch)
    return np.stack([data[s:s + seq_len + 1] for s in starts], axis=1)


def next_char_xent(logits, targets):
    """Mean softmax cross-entropy (nats) of `logits` (`(..., vocab)`) for the int ids `targets` (`(...)`)."""
    logp = fluxion.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def fit(loss: Callable[[Any, Any], Any], params: Any, optimizer: Any, train_data: np.ndarray,
        val_data: np.ndarray, args: argparse.Namespace, vocab_size: int, verbose: bool = True,
        t0: float | None = None) -> dict:
    """Minimises `loss(params, window)` (window: time-major `(seq_len + 1, batch)` int32) for `args.steps` steps.

    Each step draws `args.batch_size` random training windows (seeded by `args.seed`) and applies one jitted
    `optimizer` update. The held-out loss is measured on one fixed batch of `args.eval_batch` windows before and
    after training. Prints progress every `args.log_every` steps when `verbose` (timed from `t0`).

    Returns:
      dict with `params`, `losses` (training loss per step), `val_loss_start` and `val_loss_end`.
    """
    t0 = time.perf_counter() if t0 is None else t0
    opt_state = optimizer.init(params)
    rng = np.random.default_rng(args.seed)

    @fluxion.jit
    def update(params, opt_state, window):
        value, grads = fluxion.value_and_grad(loss)(params, window)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    eval_loss = fluxion.jit(loss)
    # A fixed held-out batch, so the start and end numbers are comparable.
    val_windows = windows(val_data, np.random.default_rng(args.seed + 1), args.seq_len, args.eval_batch)
    val_start = float(eval_loss(params, val_windows))
    if verbose:
        print(f"vocabulary {vocab_size} characters, {len(train_data)} training / {len(val_data)} held-out; "
              f"held-out loss at init {val_start:.3f} nats/char (uniform: {math.log(vocab_size):.3f})", flush=True)
    losses = []
    for i in range(1, args.steps + 1):
        params, opt_state, value = update(params, opt_state, windows(train_data, rng, args.seq_len, args.batch_size))
        losses.append(float(value))
        if verbose and (i % args.log_every == 0 or i == args.steps):
            recent = np.mean(losses[-args.log_every:])
            print(f"step {i:5d} | train loss {recent:.3f} nats/char | {time.perf_counter() - t0:6.1f} s", flush=True)
    val_end = float(eval_loss(params, val_windows))
    return dict(params=params, losses=losses, val_loss_start=val_start, val_loss_end=val_end)


def sample_text(step: Callable[[Any, Any], tuple], vocab: Vocab, prompt: str, length: int, key,
                temperature: float = 1.0) -> str:
    """Feeds `prompt` through `step`, then draws `length` characters (softmax at `temperature`).

    `step(token, state) -> (logits, state)` advances the model by one character: `token` is `(1,)` int32, `logits`
    `(1, vocab)`, and `state` is None before the first character.
    """
    if not prompt:
        raise ValueError("sample: `prompt` must hold at least one character")
    state = None
    for i in vocab.encode(prompt):
        logits, state = step(np.array([i], np.int32), state)
    out = []
    for _ in range(length):
        key, sub = random.split(key)
        nxt = int(random.categorical(sub, logits[0] / temperature))
        out.append(nxt)
        logits, state = step(np.array([nxt], np.int32), state)
    return prompt + vocab.decode(out)


def add_training_args(p: argparse.ArgumentParser, steps: int, hidden_size: int, embed_dim: int) -> None:
    """The command-line options of the examples (their defaults for the run length and model size given)."""
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--embed-dim", type=int, default=embed_dim)
    p.add_argument("--hidden-size", type=int, default=hidden_size)
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-batch", type=int, default=64, help="held-out windows used for the held-out loss")
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--prompt", default="ROMEO:\n")
    p.add_argument("--sample-length", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--data-dir", default=None, help="directory holding Tiny Shakespeare's input.txt")


def make_optimizer(args: argparse.Namespace):
    """`clip_by_global_norm(args.max_grad_norm)` then Adam with a cosine-decayed learning rate (to 10%)."""
    return optax.chain(optax.clip_by_global_norm(args.max_grad_norm),
                       optax.adam(optax.cosine_decay_schedule(args.learning_rate, max(args.steps, 1), 0.1)))
