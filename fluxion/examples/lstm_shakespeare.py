"""A character-level LSTM language model (Hochreiter & Schmidhuber 1997; as in Karpathy's char-rnn, 2015) trained on
Tiny Shakespeare with fluxion's Haiku and Optax.

    python -m fluxion.examples.lstm_shakespeare                   # 500 steps, seed 0, then a sample
    python -m fluxion.examples.lstm_shakespeare --steps 3000 --hidden-size 256 --seq-len 64 --sample-length 400

The model embeds each character (`hk.Embed`), runs an `hk.LSTM` over the sequence with `hk.dynamic_unroll` and maps
each output to next-character logits with `hk.Linear`. Training minimises the mean softmax cross-entropy of the
next character on random windows of `--seq-len` characters from the first 90% of the text, with
`optax.chain(clip_by_global_norm, adam)` and a cosine-decayed learning rate; the update step is `fluxion.jit`-ted.
The loss is printed as it falls, with the held-out loss (last 10% of the text) at the start and the end, and a
sample drawn character by character from the trained model (same Haiku modules, one LSTM step at a time) ends the
run. The text comes from `fluxion.datasets.tinyshakespeare` (checksum-verified); `--data-dir` points elsewhere.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Sequence

import numpy as np

import fluxion
import fluxion.haiku as hk
import fluxion.numpy as jnp
from fluxion import optax, random
from fluxion.datasets import tinyshakespeare

__all__ = ["Vocab", "make_model", "train", "sample", "main"]


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


def make_model(vocab_size: int, embed_dim: int, hidden_size: int):
    """Two transforms sharing one parameter layout (modules `embed`, `lstm`, `head`):

    - `unroll.apply(params, tokens (T, B) int32) -> logits (T, B, vocab_size)`, from a zero LSTM state;
    - `step.apply(params, token (B,) int32, state) -> (logits (B, vocab_size), state)`, one character at a time.
    """

    def modules():
        return (hk.Embed(vocab_size, embed_dim, name="embed"), hk.LSTM(hidden_size, name="lstm"),
                hk.Linear(vocab_size, name="head"))

    def unroll_fn(tokens):
        embed, lstm, head = modules()
        outputs, _ = hk.dynamic_unroll(lstm, embed(tokens), lstm.initial_state(tokens.shape[1]))
        return head(outputs)

    def step_fn(token, state):
        embed, lstm, head = modules()
        if state is None:
            state = lstm.initial_state(token.shape[0])
        out, state = lstm(embed(token), state)
        return head(out), state

    return hk.without_apply_rng(hk.transform(unroll_fn)), hk.without_apply_rng(hk.transform(step_fn))


def next_char_loss(unroll, params, window):
    """Mean cross-entropy (nats) of predicting `window[1:]` from `window[:-1]`; `window` is `(T + 1, B)` int32."""
    logits = unroll.apply(params, window[:-1])
    logp = fluxion.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, window[1:, :, None], axis=-1))


def _windows(data: np.ndarray, rng: np.random.Generator, seq_len: int, batch: int) -> np.ndarray:
    """`batch` random windows of `seq_len + 1` characters, time-major `(seq_len + 1, batch)`."""
    starts = rng.integers(0, len(data) - seq_len - 1, size=batch)
    return np.stack([data[s:s + seq_len + 1] for s in starts], axis=1)


def sample(step, params, vocab: Vocab, prompt: str, length: int, key, temperature: float = 1.0) -> str:
    """Feeds `prompt` through the model, then draws `length` characters (softmax at `temperature`)."""
    if not prompt:
        raise ValueError("sample: `prompt` must hold at least one character")
    step_jit = fluxion.jit(step.apply)
    state = None
    for i in vocab.encode(prompt):
        logits, state = step_jit(params, np.array([i], np.int32), state)
    out = []
    for _ in range(length):
        key, sub = random.split(key)
        nxt = int(random.categorical(sub, logits[0] / temperature))
        out.append(nxt)
        logits, state = step_jit(params, np.array([nxt], np.int32), state)
    return prompt + vocab.decode(out)


def train(args: argparse.Namespace, verbose: bool = True) -> dict:
    """Trains for `args.steps` steps; returns dict with `losses` (per step), `val_loss_start`, `val_loss_end`,
    `sample`, `wall_time`, `params`, `vocab`."""
    t0 = time.perf_counter()
    text = tinyshakespeare.load(args.data_dir)
    vocab = Vocab(text)
    data = vocab.encode(text)
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]

    unroll, step = make_model(vocab.size, args.embed_dim, args.hidden_size)
    optimizer = optax.chain(optax.clip_by_global_norm(args.max_grad_norm),
                            optax.adam(optax.cosine_decay_schedule(args.learning_rate, max(args.steps, 1), 0.1)))
    key, init_key, sample_key = random.split(random.PRNGKey(args.seed), 3)
    params = unroll.init(init_key, np.zeros((args.seq_len, 1), np.int32))
    opt_state = optimizer.init(params)
    rng = np.random.default_rng(args.seed)

    @fluxion.jit
    def update(params, opt_state, window):
        loss, grads = fluxion.value_and_grad(lambda p: next_char_loss(unroll, p, window))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    eval_loss = fluxion.jit(lambda p, w: next_char_loss(unroll, p, w))
    # A fixed held-out batch, so the start and end numbers are comparable.
    val_windows = _windows(val_data, np.random.default_rng(args.seed + 1), args.seq_len, args.eval_batch)
    val_start = float(eval_loss(params, val_windows))
    if verbose:
        print(f"vocabulary {vocab.size} characters, {len(train_data)} training / {len(val_data)} held-out; "
              f"held-out loss at init {val_start:.3f} nats/char (uniform: {math.log(vocab.size):.3f})", flush=True)
    losses = []
    for i in range(1, args.steps + 1):
        params, opt_state, loss = update(params, opt_state, _windows(train_data, rng, args.seq_len, args.batch_size))
        losses.append(float(loss))
        if verbose and (i % args.log_every == 0 or i == args.steps):
            recent = np.mean(losses[-args.log_every:])
            print(f"step {i:5d} | train loss {recent:.3f} nats/char | {time.perf_counter() - t0:6.1f} s", flush=True)
    val_end = float(eval_loss(params, val_windows))
    text_sample = sample(step, params, vocab, args.prompt, args.sample_length, sample_key, args.temperature)
    wall = time.perf_counter() - t0
    if verbose:
        print(f"held-out loss {val_start:.3f} -> {val_end:.3f} nats/char")
        print("sample:\n" + text_sample)
    return dict(losses=losses, val_loss_start=val_start, val_loss_end=val_end, sample=text_sample, wall_time=wall,
                params=params, vocab=vocab)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--embed-dim", type=int, default=64)
    p.add_argument("--hidden-size", type=int, default=128)
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-batch", type=int, default=64, help="held-out windows used for the held-out loss")
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--prompt", default="ROMEO:\n")
    p.add_argument("--sample-length", type=int, default=300)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--data-dir", default=None, help="directory holding Tiny Shakespeare's input.txt")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    result = train(args)
    print(f"Done: {args.steps} steps, final training loss {np.mean(result['losses'][-args.log_every:]):.3f} "
          f"nats/char, wall time {result['wall_time']:.1f} s")
    return result


if __name__ == "__main__":
    main()
