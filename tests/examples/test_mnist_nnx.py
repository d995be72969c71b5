"""`python -m fluxion.examples.mnist --api nnx`: the MNIST job written with fluxion.flax.nnx, on a small slice."""

import numpy as np

from fluxion.examples import mnist
from fluxion.flax import nnx

SMALL = ["--api", "nnx", "--train-limit", "3200", "--test-limit", "1000", "--no-progress"]


def _params(out):
    return {p: np.asarray(v[...]) for p, v in nnx.to_flat_state(nnx.state(out["model"]))}


def test_nnx_training_reduces_loss_and_reaches_accuracy(capsys):
    out = mnist.main(["--epochs", "2"] + SMALL)
    h = out["history"]
    assert len(h) == 2 and h[1]["loss"] < h[0]["loss"]
    assert h[1]["test_acc"] > 0.82
    assert int(out["optimizer"].step[...]) == 2 * 3200 // 32
    assert "Done: mlp (nnx)" in capsys.readouterr().out


def test_nnx_resume_from_checkpoint_equals_uninterrupted_run(tmp_path, capsys):
    ckpt = str(tmp_path / "ckpt")
    straight = mnist.main(["--epochs", "2"] + SMALL)
    mnist.main(["--epochs", "1", "--checkpoint-dir", ckpt] + SMALL)
    resumed = mnist.main(["--epochs", "2", "--checkpoint-dir", ckpt] + SMALL)
    assert "Resumed from" in capsys.readouterr().out
    assert resumed["history"][-1]["loss"] == straight["history"][-1]["loss"]
    a, b = _params(resumed), _params(straight)
    assert a.keys() == b.keys()
    for path in a:
        np.testing.assert_array_equal(a[path], b[path])
