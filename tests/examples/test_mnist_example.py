"""End-to-end tests of the main job, `python -m fluxion.examples.mnist`, on a small slice of the real MNIST files."""

import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fluxion.examples import mnist
from fluxion.tree_util import tree_leaves

SMALL = ["--train-limit", "3200", "--test-limit", "1000", "--no-progress"]


@pytest.fixture(autouse=True)
def _one_thread():
    """One thread for compiled code in the bitwise comparisons below: OpenBLAS's float32 products differ in the last
    bits between one and two threads, and by default the thread count is chosen per call from the machine's load, so
    two runs on a busy machine can differ in the last bits (a known reproducibility gap, recorded in the performance
    issue's notes). These tests check seeding and checkpoint resumption, so they fix the thread count."""
    from fluxion import config
    with config.override("fluxion_num_threads", 1):
        yield


def _leaves(state):
    return [np.asarray(x) for x in tree_leaves(state.params)]


def test_training_reduces_loss_and_raises_accuracy(capsys):
    out = mnist.main(["--epochs", "2"] + SMALL)
    h = out["history"]
    assert len(h) == 2
    assert h[1]["loss"] < h[0]["loss"]
    assert h[1]["train_acc"] > h[0]["train_acc"] - 0.01
    assert h[1]["test_acc"] > 0.85
    printed = capsys.readouterr().out
    assert "Epoch 2/2 loss" in printed and "acc train/test" in printed and "wall time" in printed


def test_same_seed_same_numbers():
    a = mnist.main(["--epochs", "1"] + SMALL)
    b = mnist.main(["--epochs", "1"] + SMALL)
    assert a["history"][0]["loss"] == b["history"][0]["loss"]
    for x, y in zip(_leaves(a["state"]), _leaves(b["state"])):
        np.testing.assert_array_equal(x, y)


def test_resume_from_checkpoint_equals_uninterrupted_run(tmp_path, capsys):
    ckpt = str(tmp_path / "ckpt")
    straight = mnist.main(["--epochs", "2"] + SMALL)
    mnist.main(["--epochs", "1", "--checkpoint-dir", ckpt] + SMALL)
    resumed = mnist.main(["--epochs", "2", "--checkpoint-dir", ckpt] + SMALL)
    assert "Resumed from" in capsys.readouterr().out
    assert int(resumed["state"].step) == int(straight["state"].step)
    for x, y in zip(_leaves(resumed["state"]), _leaves(straight["state"])):
        np.testing.assert_array_equal(x, y)


def test_killed_run_resumes_from_last_good_checkpoint(tmp_path):
    """SIGKILL the training process after its first checkpoint, then resume: training finishes from there."""
    ckpt = str(tmp_path / "ckpt")
    args = [sys.executable, "-m", "fluxion.examples.mnist", "--epochs", "30", "--checkpoint-dir", ckpt] + SMALL
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    try:
        while not glob.glob(os.path.join(ckpt, "checkpoint_*")) and time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail("training exited before writing a checkpoint:\n" + proc.stdout.read().decode())
            time.sleep(0.2)
        assert glob.glob(os.path.join(ckpt, "checkpoint_*")), "no checkpoint written in time"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    steps = sorted(int(p.rsplit("_", 1)[1]) for p in glob.glob(os.path.join(ckpt, "checkpoint_*"))
                   if p.rsplit("_", 1)[1].isdigit())
    assert steps
    resumed = mnist.main(["--epochs", "2", "--checkpoint-dir", ckpt] + SMALL)
    assert int(resumed["state"].step) >= steps[-1]


def test_logdir_writes_tensorboard_events(tmp_path):
    logdir = str(tmp_path / "tb")
    mnist.main(["--epochs", "1", "--logdir", logdir] + SMALL)
    assert glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
