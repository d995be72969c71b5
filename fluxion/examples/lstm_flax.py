"""A character-level LSTM language model on Tiny Shakespeare built with fluxion's Flax, in either API:

    python -m fluxion.examples.lstm_flax --api linen      # nn.Embed -> nn.RNN(nn.LSTMCell) -> nn.Dense
    python -m fluxion.examples.lstm_flax --api nnx        # the same with nnx.Embed, nnx.RNN(nnx.LSTMCell), nnx.Linear
    python -m fluxion.examples.lstm_flax --steps 1000 --hidden-size 128 --sample-length 400

Both models read time-major windows `(T, B)` of character ids, embed them, run an LSTM over time (Hochreiter &
Schmidhuber 1997) and map each output to next-character logits. The data, the loss (mean next-character
cross-entropy on random windows from the first 90% of the text), the optimizer (`fluxion.optax`: gradient clipping
then Adam with a cosine-decayed learning rate), the `fluxion.jit`-ted update and the report (held-out loss on the
last 10% before and after, then a sample drawn one character at a time) are those of the Haiku version,
`fluxion.examples.lstm_shakespeare`, shared through `fluxion.examples._charlm`. The default run is shorter (300
steps, hidden size 96) so it finishes within a minute on one core.

With NNX the model object is split into its graph definition and state (`nnx.split`), so the same pure
`loss(params, window)` is differentiated and updated as with Linen; `nnx.merge` rebuilds the model inside.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

import numpy as np

import fluxion
from fluxion import random
from fluxion.flax import linen, nnx

from ._charlm import add_training_args, fit, load_split, make_optimizer, next_char_xent, sample_text

__all__ = ["linen_model", "NnxCharLSTM", "build", "train", "main"]


def linen_model(vocab_size: int, embed_dim: int, hidden_size: int, nn: Any = linen) -> Any:
    """The Linen model: `model.apply(variables, tokens (T, B) int32, carry=None) -> (carry, logits (T, B, vocab))`.

    Submodules `embed` (`nn.Embed`), `lstm` (`nn.RNN` over `nn.LSTMCell`, time-major) and `head` (`nn.Dense`).
    `carry` is the LSTM's `(c, h)`, each `(B, hidden_size)` (zeros when None). `nn` selects the library (the
    tests pass real Flax to compare parameter trees).
    """

    class CharLSTM(nn.Module):
        vocab_size: int
        embed_dim: int
        hidden_size: int

        def setup(self):
            self.embed = nn.Embed(self.vocab_size, self.embed_dim)
            self.lstm = nn.RNN(nn.LSTMCell(self.hidden_size), time_major=True)
            self.head = nn.Dense(self.vocab_size)

        def __call__(self, tokens, carry=None):
            carry, out = self.lstm(self.embed(tokens), initial_carry=carry, return_carry=True)
            return carry, self.head(out)

    return CharLSTM(vocab_size, embed_dim, hidden_size)


class NnxCharLSTM(nnx.Module):
    """The NNX model: `model(tokens (T, B) int32, carry=None) -> (carry, logits (T, B, vocab))`, same layout."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_size: int, *, rngs: nnx.Rngs):
        self.hidden_size = hidden_size
        self.embed = nnx.Embed(vocab_size, embed_dim, rngs=rngs)
        self.lstm = nnx.RNN(nnx.LSTMCell(embed_dim, hidden_size, rngs=rngs), time_major=True, return_carry=True,
                            rngs=False)
        self.head = nnx.Linear(hidden_size, vocab_size, rngs=rngs)

    def __call__(self, tokens, carry=None):
        if carry is None:
            zeros = fluxion.numpy.zeros((tokens.shape[1], self.hidden_size), fluxion.numpy.float32)
            carry = (zeros, zeros)
        carry, out = self.lstm(self.embed(tokens), initial_carry=carry)
        return carry, self.head(out)


def build(api: str, vocab_size: int, embed_dim: int, hidden_size: int, key) -> tuple[Any, Callable[..., tuple]]:
    """`(params, apply)` with `apply(params, tokens (T, B), carry=None) -> (carry, logits (T, B, vocab))`.

    Raises:
      ValueError: `api` is neither 'linen' nor 'nnx'.
    """
    if api == "linen":
        model = linen_model(vocab_size, embed_dim, hidden_size)
        params = model.init(key, np.zeros((2, 1), np.int32))
        return params, model.apply
    if api == "nnx":
        graphdef, params, rest = nnx.split(NnxCharLSTM(vocab_size, embed_dim, hidden_size,
                                                       rngs=nnx.Rngs(params=key)), nnx.Param, ...)
        return params, lambda params, tokens, carry=None: nnx.merge(graphdef, params, rest)(tokens, carry)
    raise ValueError(f"api must be 'linen' or 'nnx', got {api!r}")


def train(args: argparse.Namespace, verbose: bool = True) -> dict:
    """Trains for `args.steps` steps with `args.api`; returns dict with `losses` (per step), `val_loss_start`,
    `val_loss_end`, `sample`, `wall_time`, `params`, `vocab`."""
    t0 = time.perf_counter()
    vocab, train_data, val_data = load_split(args.data_dir)
    key, init_key, sample_key = random.split(random.PRNGKey(args.seed), 3)
    params, apply = build(args.api, vocab.size, args.embed_dim, args.hidden_size, init_key)

    def loss(params, window):
        return next_char_xent(apply(params, window[:-1])[1], window[1:])

    result = fit(loss, params, make_optimizer(args), train_data, val_data, args, vocab.size, verbose, t0)
    step_jit = fluxion.jit(lambda params, token, carry: apply(params, token[None], carry))

    def step(token, carry):
        carry, logits = step_jit(result["params"], token, carry)
        return logits[0], carry

    text_sample = sample_text(step, vocab, args.prompt, args.sample_length, sample_key, args.temperature)
    wall = time.perf_counter() - t0
    if verbose:
        print(f"held-out loss {result['val_loss_start']:.3f} -> {result['val_loss_end']:.3f} nats/char")
        print("sample:\n" + text_sample)
    return dict(result, sample=text_sample, wall_time=wall, vocab=vocab)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--api", choices=("linen", "nnx"), default="linen")
    add_training_args(p, steps=300, hidden_size=96, embed_dim=48)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    result = train(args)
    print(f"Done: {args.api}, {args.steps} steps, final training loss "
          f"{np.mean(result['losses'][-args.log_every:]):.3f} nats/char, wall time {result['wall_time']:.1f} s")
    return result


if __name__ == "__main__":
    main()
