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
import time
from typing import Sequence

import numpy as np

import fluxion
import fluxion.haiku as hk
from fluxion import random

from ._charlm import Vocab, add_training_args, fit, load_split, make_optimizer, next_char_xent, sample_text

__all__ = ["Vocab", "make_model", "train", "sample", "main"]


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
    return next_char_xent(unroll.apply(params, window[:-1]), window[1:])


def sample(step, params, vocab: Vocab, prompt: str, length: int, key, temperature: float = 1.0) -> str:
    """Feeds `prompt` through the model, then draws `length` characters (softmax at `temperature`)."""
    step_jit = fluxion.jit(step.apply)
    return sample_text(lambda token, state: step_jit(params, token, state), vocab, prompt, length, key, temperature)


def train(args: argparse.Namespace, verbose: bool = True) -> dict:
    """Trains for `args.steps` steps; returns dict with `losses` (per step), `val_loss_start`, `val_loss_end`,
    `sample`, `wall_time`, `params`, `vocab`."""
    t0 = time.perf_counter()
    vocab, train_data, val_data = load_split(args.data_dir)
    unroll, step = make_model(vocab.size, args.embed_dim, args.hidden_size)
    key, init_key, sample_key = random.split(random.PRNGKey(args.seed), 3)
    params = unroll.init(init_key, np.zeros((args.seq_len, 1), np.int32))
    result = fit(lambda p, w: next_char_loss(unroll, p, w), params, make_optimizer(args), train_data, val_data,
                 args, vocab.size, verbose, t0)
    text_sample = sample(step, result["params"], vocab, args.prompt, args.sample_length, sample_key,
                         args.temperature)
    wall = time.perf_counter() - t0
    if verbose:
        print(f"held-out loss {result['val_loss_start']:.3f} -> {result['val_loss_end']:.3f} nats/char")
        print("sample:\n" + text_sample)
    return dict(result, sample=text_sample, wall_time=wall, vocab=vocab)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_training_args(p, steps=500, hidden_size=128, embed_dim=64)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    result = train(args)
    print(f"Done: {args.steps} steps, final training loss {np.mean(result['losses'][-args.log_every:]):.3f} "
          f"nats/char, wall time {result['wall_time']:.1f} s")
    return result


if __name__ == "__main__":
    main()
