"""Train a network on MNIST with fluxion's Flax-style modules and Optax-style Adam (the project's main job).

    python -m fluxion.examples.mnist                       # the tutorial's MLP, 3 epochs
    python -m fluxion.examples.mnist --model cnn --epochs 3 --batch-size 128
    python -m fluxion.examples.mnist --logdir runs/mlp --checkpoint-dir checkpoints/mlp   # resumable
    python -m fluxion.examples.mnist --api nnx             # the same training written with fluxion.flax.nnx

The MLP is the one of the reference tutorial (Flatten -> Dense 128 -> relu -> Dense 128 -> relu -> Dense 10, inputs
scaled by 1/255, Adam 1e-3, batch 32, softmax cross-entropy on one-hot labels). With `--checkpoint-dir`, a checkpoint
is written atomically after every epoch and training resumes from the latest one. The same seed gives the same
numbers. Imports only the public fluxion API.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Sequence

import numpy as np
from tqdm import tqdm

import fluxion
import fluxion.flax.linen as nn
import fluxion.numpy as jnp
from fluxion import optax, random
from fluxion.datasets import mnist
from fluxion.flax.training import checkpoints
from fluxion.flax.training.train_state import TrainState


class MLP(nn.Module):
    """The tutorial's model: (N, 28, 28) uint8 images -> (N, 10) logits."""

    @nn.compact
    def __call__(self, inputs):
        inputs = inputs.reshape(inputs.shape[0], -1) / 255.
        x = nn.Dense(128, name="Dense1")(inputs)
        x = nn.relu(x)
        x = nn.Dense(128, name="Dense2")(x)
        x = nn.relu(x)
        return nn.Dense(10, name="Output")(x)


class CNN(nn.Module):
    """Two 3x3 convolutions with 2x2 max pooling, then two dense layers: (N, 28, 28) -> (N, 10)."""

    @nn.compact
    def __call__(self, inputs):
        x = inputs.reshape(inputs.shape[0], 28, 28, 1) / 255.
        x = nn.relu(nn.Conv(32, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(64, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(256)(x))
        return nn.Dense(10)(x)


MODELS = {"mlp": MLP, "cnn": CNN}


def cross_entropy(logits, labels_onehot):
    """Mean softmax cross-entropy: logits (N, 10) float32, one-hot labels (N, 10) -> scalar."""
    return jnp.mean(-jnp.sum(labels_onehot * fluxion.nn.log_softmax(logits, axis=-1), axis=-1))


def make_train_step():
    @fluxion.jit
    def train_step(state, x, y):
        def loss_fn(params):
            return cross_entropy(state.apply_fn(params, x), y)

        loss, grads = fluxion.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    return train_step


def make_predict(model):
    @fluxion.jit
    def predict(params, x):
        return jnp.argmax(model.apply(params, x), axis=-1)

    return predict


def accuracy(predict, params, images: np.ndarray, labels: np.ndarray, batch: int = 2000) -> float:
    """Fraction of correctly classified images, evaluated in fixed-size batches (one compiled shape)."""
    correct = 0
    n = len(images)
    for start in range(0, n, batch):
        xb = images[start:start + batch]
        pred = np.asarray(predict(params, xb))
        correct += int(np.sum(pred == labels[start:start + batch]))
    return correct / n


def load_data(args: argparse.Namespace):
    """((x_train, y_train), (x_test, y_test)) as uint8 NumPy arrays, cut to --train-limit / --test-limit."""
    (x_train, y_train), (x_test, y_test) = mnist.load_all(args.data_dir)
    if args.train_limit:
        x_train, y_train = x_train[:args.train_limit], y_train[:args.train_limit]
    if args.test_limit:
        x_test, y_test = x_test[:args.test_limit], y_test[:args.test_limit]
    return (x_train, y_train), (x_test, y_test)


def make_learning_rate(args: argparse.Namespace, steps_per_epoch: int):
    """The Adam learning rate: constant for the tutorial's MLP, cosine-decayed for the CNN (unless --schedule)."""
    schedule = args.schedule or ("cosine" if args.model == "cnn" else "constant")
    if schedule == "cosine":
        # Decays to zero over the whole run (Loshchilov & Hutter 2017, without restarts).
        return optax.cosine_decay_schedule(args.learning_rate, max(args.epochs * steps_per_epoch, 1))
    return args.learning_rate


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="mlp")
    p.add_argument("--api", choices=["linen", "nnx"], default="linen",
                   help="write the model with fluxion.flax.linen or fluxion.flax.nnx (see _mnist_nnx.py)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--schedule", choices=["constant", "cosine"], default=None,
                   help="learning-rate schedule (default: constant for the tutorial's MLP, cosine decay for the CNN)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", default=None, help="directory holding the four MNIST .gz files")
    p.add_argument("--logdir", default=None, help="write TensorBoard event files here")
    p.add_argument("--checkpoint-dir", default=None, help="save after every epoch and resume from here")
    p.add_argument("--train-limit", type=int, default=None, help="use only the first N training images")
    p.add_argument("--test-limit", type=int, default=None, help="use only the first N test images")
    p.add_argument("--no-progress", action="store_true", help="disable the progress bar")
    p.add_argument("--data-parallel", action="store_true",
                   help="split each batch over all devices of all processes (under mpirun: across processes) on a "
                        "mesh with NamedShardings, or with pmap when --pmap is given too")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--data-parallel" in argv:
        from .mnist_dp import main as data_parallel_main
        return data_parallel_main(argv)
    args = parse_args(argv)
    if args.api == "nnx":
        from ._mnist_nnx import main as nnx_main
        return nnx_main(args)
    t_start = time.perf_counter()
    (x_train, y_train), (x_test, y_test) = load_data(args)
    n = len(x_train)
    steps_per_epoch = n // args.batch_size
    eye = np.eye(10, dtype=np.float32)

    model = MODELS[args.model]()
    key, init_key = random.split(random.PRNGKey(args.seed))
    learning_rate = make_learning_rate(args, steps_per_epoch)
    state = TrainState.create(apply_fn=model.apply, params=model.init(init_key, x_train[:1]),
                              tx=optax.adam(learning_rate=learning_rate))
    start_epoch = 0
    if args.checkpoint_dir:
        state = checkpoints.restore_checkpoint(args.checkpoint_dir, state)
        start_epoch = int(state.step) // max(steps_per_epoch, 1)
        if start_epoch:
            print(f"Resumed from {args.checkpoint_dir} at step {int(state.step)} (epoch {start_epoch})")
    writer = None
    if args.logdir:
        from tensorboardX import SummaryWriter
        writer = SummaryWriter(args.logdir)
        writer.add_text("config", str(vars(args)))

    train_step = make_train_step()
    predict = make_predict(model)
    history = []
    for epoch in range(start_epoch, args.epochs):
        # Each epoch's permutation comes from the PRNG key chain, so a resumed run sees the same batches.
        epoch_key = random.fold_in(key, epoch)
        idxs = np.asarray(random.permutation(epoch_key, n))
        loss_sum = 0.0
        t0 = time.perf_counter()
        bar = tqdm(range(steps_per_epoch), desc=f"Epoch {epoch + 1}/{args.epochs}", disable=args.no_progress,
                   file=sys.stdout, mininterval=0.5)
        for i in bar:
            b = idxs[i * args.batch_size:(i + 1) * args.batch_size]
            state, loss = train_step(state, x_train[b], eye[y_train[b]])
            loss_sum += float(loss)
            if i % 50 == 0:
                bar.set_postfix(loss=f"{loss_sum / (i + 1):.4f}")
        epoch_time = time.perf_counter() - t0
        mean_loss = loss_sum / max(steps_per_epoch, 1)
        train_acc = accuracy(predict, state.params, x_train, y_train)
        test_acc = accuracy(predict, state.params, x_test, y_test)
        print(f"Epoch {epoch + 1}/{args.epochs} loss {mean_loss:.4f} acc train/test: {train_acc:.4f}/{test_acc:.4f} "
              f"({steps_per_epoch / epoch_time:.0f} steps/s, {epoch_time:.1f} s)")
        history.append(dict(epoch=epoch + 1, loss=mean_loss, train_acc=train_acc, test_acc=test_acc,
                            epoch_time=epoch_time))
        if writer is not None:
            step = int(state.step)
            writer.add_scalar("metrics/loss", mean_loss, step)
            writer.add_scalar("metrics/train_accuracy", train_acc, step)
            writer.add_scalar("metrics/test_accuracy", test_acc, step)
            lr_now = learning_rate(step) if callable(learning_rate) else learning_rate
            writer.add_scalar("metrics/learning_rate", float(lr_now), step)
            writer.flush()
        if args.checkpoint_dir:
            checkpoints.save_checkpoint(args.checkpoint_dir, state, step=int(state.step), keep=2)
    if writer is not None:
        writer.close()
    wall = time.perf_counter() - t_start
    final = history[-1] if history else {}
    if final:
        print(f"Done: {args.model}, {args.epochs} epochs, final test accuracy {final['test_acc']:.4f}, "
              f"wall time {wall:.1f} s")
    return dict(history=history, wall_time=wall, state=state)


if __name__ == "__main__":
    main()
