"""The character-level LSTM example and the Tiny Shakespeare loader.

Oracles: the published size and SHA-256 of the corpus, a hand-built vocabulary, a NumPy cross-entropy, Haiku's
LSTM when installed (same parameters -> same logits), and the loss curve of a short fixed-seed run.
"""

from __future__ import annotations

import numpy as np
import pytest

from fluxion.datasets import mnist, tinyshakespeare
from fluxion.examples import lstm_shakespeare as ls


def test_corpus_loads_and_is_verified():
    text = tinyshakespeare.load()
    assert len(text) == 1_115_394 and len(set(text)) == 65
    assert text.startswith("First Citizen:\n")


def test_corpus_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("FLUXION_DATA_DIR", raising=False)
    with pytest.raises(mnist.DatasetNotFoundError, match="not found"):
        tinyshakespeare.load(tmp_path)
    (tmp_path / "tinyshakespeare").mkdir()
    (tmp_path / "tinyshakespeare" / "input.txt").write_text("To be, or not to be")
    with pytest.raises(mnist.ChecksumMismatchError, match="SHA-256"):
        tinyshakespeare.load(tmp_path)
    assert tinyshakespeare.load(tmp_path, verify=False) == "To be, or not to be"


def test_vocab_round_trip_and_unknown_character():
    vocab = ls.Vocab("hello world")
    assert vocab.chars == [" ", "d", "e", "h", "l", "o", "r", "w"] and vocab.size == 8
    ids = vocab.encode("world hello")
    assert ids.dtype == np.int32 and ids.tolist() == [7, 5, 6, 4, 1, 0, 3, 2, 4, 4, 5]
    assert vocab.decode(ids) == "world hello"
    with pytest.raises(ValueError, match="'z'"):
        vocab.encode("hez")


def _logits_and_params(vocab_size=11, T=5, B=3, seed=0):
    from fluxion import random
    unroll, step = ls.make_model(vocab_size, embed_dim=4, hidden_size=6)
    tokens = np.random.default_rng(seed).integers(0, vocab_size, size=(T, B)).astype(np.int32)
    params = unroll.init(random.PRNGKey(seed), tokens)
    return unroll, step, params, tokens


def test_loss_is_the_mean_next_character_cross_entropy():
    unroll, _, params, tokens = _logits_and_params()
    logits = np.asarray(unroll.apply(params, tokens[:-1]), np.float64)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.mean(np.take_along_axis(logp, tokens[1:, :, None], axis=-1))
    assert float(ls.next_char_loss(unroll, params, tokens)) == pytest.approx(expected, rel=1e-5)


def test_step_by_step_equals_unroll():
    unroll, step, params, tokens = _logits_and_params()
    full = np.asarray(unroll.apply(params, tokens))
    state = None
    for t in range(tokens.shape[0]):
        logits, state = step.apply(params, tokens[t], state)
        np.testing.assert_allclose(np.asarray(logits), full[t], rtol=1e-5, atol=1e-6)


def test_unroll_matches_haiku():
    hk = pytest.importorskip("haiku")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    unroll, _, params, tokens = _logits_and_params()

    def real(tokens):
        embed, lstm, head = hk.Embed(11, 4, name="embed"), hk.LSTM(6, name="lstm"), hk.Linear(11, name="head")
        out, _ = hk.dynamic_unroll(lstm, embed(tokens), lstm.initial_state(tokens.shape[1]))
        return head(out)

    real_t = hk.without_apply_rng(hk.transform(real))
    real_params = {m: {k: jnp.asarray(np.asarray(v)) for k, v in p.items()} for m, p in params.items()}
    assert set(real_params) == set(real_t.init(jax.random.PRNGKey(0), tokens))
    np.testing.assert_allclose(np.asarray(real_t.apply(real_params, tokens)), np.asarray(unroll.apply(params, tokens)),
                               rtol=1e-5, atol=1e-5)


SMOKE = ["--steps", "30", "--batch-size", "8", "--seq-len", "16", "--hidden-size", "32", "--embed-dim", "16",
         "--eval-batch", "16", "--log-every", "10", "--sample-length", "40", "--learning-rate", "1e-2"]


def test_short_run_lowers_the_loss_and_samples(capsys):
    out = ls.main(SMOKE)
    losses = out["losses"]
    assert len(losses) == 30
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5
    assert out["val_loss_end"] < out["val_loss_start"] - 0.5
    assert out["sample"].startswith("ROMEO:\n") and len(out["sample"]) == len("ROMEO:\n") + 40
    assert set(out["sample"]) <= set(out["vocab"].chars)
    printed = capsys.readouterr().out
    assert "held-out loss" in printed and "sample:" in printed and "wall time" in printed
    again = ls.main(SMOKE)
    assert again["losses"] == losses and again["sample"] == out["sample"]
