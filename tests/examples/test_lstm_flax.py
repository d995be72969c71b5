"""The Flax character-level LSTM example (Linen and NNX).

Oracles: real Flax's Linen for the same model (same key -> same parameter tree and values -> same logits), the
model's own unrolled output for the one-character-at-a-time step used in sampling, and the loss curve of a short
fixed-seed run of each API.
"""

from __future__ import annotations

import numpy as np
import pytest

from fluxion import random
from fluxion.examples import lstm_flax as lf

SMOKE = ["--steps", "30", "--batch-size", "8", "--seq-len", "16", "--hidden-size", "32", "--embed-dim", "16",
         "--eval-batch", "16", "--log-every", "10", "--sample-length", "40", "--learning-rate", "1e-2"]
TOKENS = np.random.default_rng(0).integers(0, 11, size=(5, 3)).astype(np.int32)   # (T, B), vocabulary 11


@pytest.mark.parametrize("api", ["linen", "nnx"])
def test_short_run_lowers_the_loss_and_samples(api, capsys):
    out = lf.main(["--api", api, *SMOKE])
    losses = out["losses"]
    assert len(losses) == 30
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5
    assert out["val_loss_end"] < out["val_loss_start"] - 0.5
    assert out["sample"].startswith("ROMEO:\n") and len(out["sample"]) == len("ROMEO:\n") + 40
    assert set(out["sample"]) <= set(out["vocab"].chars)
    printed = capsys.readouterr().out
    assert "held-out loss" in printed and "sample:" in printed and f"Done: {api}" in printed


@pytest.mark.parametrize("api", ["linen", "nnx"])
def test_one_step_at_a_time_equals_the_unrolled_model(api):
    params, apply = lf.build(api, 11, 4, 6, random.PRNGKey(0))
    _, full = apply(params, TOKENS)
    assert full.shape == (5, 3, 11)
    carry = None
    for t in range(TOKENS.shape[0]):
        carry, logits = apply(params, TOKENS[t:t + 1], carry)
        np.testing.assert_allclose(np.asarray(logits[0]), np.asarray(full[t]), rtol=1e-5, atol=1e-6)
    assert carry[0].shape == carry[1].shape == (3, 6)


def test_build_rejects_an_unknown_api():
    with pytest.raises(ValueError, match="'linen' or 'nnx'"):
        lf.build("haiku", 11, 4, 6, random.PRNGKey(0))


def _flat(tree, prefix=""):
    if hasattr(tree, "items"):
        return {k: v for name, sub in tree.items() for k, v in _flat(sub, f"{prefix}/{name}").items()}
    return {prefix: np.asarray(tree)}


def test_linen_model_equals_real_flax():
    flax_linen = pytest.importorskip("flax.linen")
    jax = pytest.importorskip("jax")
    ours, apply = lf.build("linen", 11, 4, 6, random.PRNGKey(0))
    real = lf.linen_model(11, 4, 6, nn=flax_linen)
    theirs = real.init(jax.random.PRNGKey(0), jax.numpy.zeros((2, 1), jax.numpy.int32))
    o, t = _flat(ours), _flat(theirs)
    assert sorted(o) == sorted(t)
    assert "/params/lstm/cell/ii/kernel" in o
    for name in o:
        assert o[name].shape == t[name].shape and o[name].dtype == t[name].dtype, name
        np.testing.assert_allclose(o[name], t[name], rtol=1e-5, atol=1e-6, err_msg=name)
    _, o_logits = apply(ours, TOKENS)
    _, t_logits = real.apply(theirs, jax.numpy.asarray(TOKENS))
    np.testing.assert_allclose(np.asarray(o_logits), np.asarray(t_logits), rtol=1e-5, atol=1e-5)
