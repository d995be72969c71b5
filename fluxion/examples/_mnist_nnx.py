"""The MNIST example written with ``fluxion.flax.nnx`` (``python -m fluxion.examples.mnist --api nnx``).

Same data, models (MLP of the tutorial, or the CNN), Adam settings, batches and
printed report as the Linen version in ``mnist.py``; the model is an
``nnx.Module``, the optimizer an ``nnx.Optimizer``, and one ``nnx.jit``-compiled
step does ``nnx.value_and_grad`` + ``optimizer.update`` in place.  With
``--checkpoint-dir`` the model and optimizer states are saved as plain dicts
after every epoch and training resumes from the latest one.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from tqdm import tqdm

import fluxion
import fluxion.numpy as jnp
from fluxion import optax, random
from fluxion.flax import nnx
from fluxion.flax.training import checkpoints


class MLP(nnx.Module):
    """Flatten -> Linear 128 -> relu -> Linear 128 -> relu -> Linear 10, on (N, 28, 28) uint8 images."""

    def __init__(self, rngs: nnx.Rngs):
        self.dense1 = nnx.Linear(784, 128, rngs=rngs)
        self.dense2 = nnx.Linear(128, 128, rngs=rngs)
        self.out = nnx.Linear(128, 10, rngs=rngs)

    def __call__(self, images):
        x = images.reshape(images.shape[0], -1) / 255.
        x = nnx.relu(self.dense1(x))
        x = nnx.relu(self.dense2(x))
        return self.out(x)


class CNN(nnx.Module):
    """Two 3x3 convolutions with 2x2 max pooling, then two linear layers: (N, 28, 28) -> (N, 10)."""

    def __init__(self, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, (3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, (3, 3), rngs=rngs)
        self.dense = nnx.Linear(7 * 7 * 64, 256, rngs=rngs)
        self.out = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, images):
        x = images.reshape(images.shape[0], 28, 28, 1) / 255.
        x = nnx.max_pool(nnx.relu(self.conv1(x)), (2, 2), strides=(2, 2))
        x = nnx.max_pool(nnx.relu(self.conv2(x)), (2, 2), strides=(2, 2))
        x = nnx.relu(self.dense(x.reshape(x.shape[0], -1)))
        return self.out(x)


MODELS = {"mlp": MLP, "cnn": CNN}


def loss_fn(model, x, y_onehot):
    logits = model(x)
    return jnp.mean(-jnp.sum(y_onehot * fluxion.nn.log_softmax(logits, axis=-1), axis=-1))


@nnx.jit
def train_step(model, optimizer, x, y_onehot):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y_onehot)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def predict(model, x):
    return jnp.argmax(model(x), axis=-1)


def accuracy(model, images: np.ndarray, labels: np.ndarray, batch: int = 2000) -> float:
    correct = 0
    for start in range(0, len(images), batch):
        pred = np.asarray(predict(model, images[start:start + batch]))
        correct += int(np.sum(pred == labels[start:start + batch]))
    return correct / len(images)


def _checkpoint_target(model, optimizer) -> dict:
    return {"model": nnx.to_pure_dict(nnx.state(model)), "optimizer": nnx.to_pure_dict(nnx.state(optimizer))}


def main(args: argparse.Namespace) -> dict:
    """Trains per ``args`` (parsed by ``mnist.parse_args``); returns the history, wall time, model and optimizer."""
    from .mnist import load_data, make_learning_rate
    if args.logdir:
        raise ValueError("--logdir is only supported with --api linen")
    t_start = time.perf_counter()
    (x_train, y_train), (x_test, y_test) = load_data(args)
    n = len(x_train)
    steps_per_epoch = n // args.batch_size
    eye = np.eye(10, dtype=np.float32)
    key, init_key = random.split(random.PRNGKey(args.seed))
    model = MODELS[args.model](nnx.Rngs(params=init_key))
    optimizer = nnx.Optimizer(model, optax.adam(learning_rate=make_learning_rate(args, steps_per_epoch)),
                              wrt=nnx.Param)
    start_epoch = 0
    if args.checkpoint_dir:
        restored = checkpoints.restore_checkpoint(args.checkpoint_dir, _checkpoint_target(model, optimizer))
        nnx.replace_by_pure_dict(nnx.state(model), restored["model"])
        nnx.replace_by_pure_dict(nnx.state(optimizer), restored["optimizer"])
        start_epoch = int(optimizer.step[...]) // max(steps_per_epoch, 1)
        if start_epoch:
            print(f"Resumed from {args.checkpoint_dir} at step {int(optimizer.step[...])} (epoch {start_epoch})")
    history = []
    for epoch in range(start_epoch, args.epochs):
        idxs = np.asarray(random.permutation(random.fold_in(key, epoch), n))
        loss_sum = 0.0
        t0 = time.perf_counter()
        bar = tqdm(range(steps_per_epoch), desc=f"Epoch {epoch + 1}/{args.epochs}", disable=args.no_progress,
                   file=sys.stdout, mininterval=0.5)
        for i in bar:
            b = idxs[i * args.batch_size:(i + 1) * args.batch_size]
            loss_sum += float(train_step(model, optimizer, x_train[b], eye[y_train[b]]))
            if i % 50 == 0:
                bar.set_postfix(loss=f"{loss_sum / (i + 1):.4f}")
        epoch_time = time.perf_counter() - t0
        mean_loss = loss_sum / max(steps_per_epoch, 1)
        train_acc = accuracy(model, x_train, y_train)
        test_acc = accuracy(model, x_test, y_test)
        print(f"Epoch {epoch + 1}/{args.epochs} loss {mean_loss:.4f} acc train/test: {train_acc:.4f}/{test_acc:.4f} "
              f"({steps_per_epoch / epoch_time:.0f} steps/s, {epoch_time:.1f} s)")
        history.append(dict(epoch=epoch + 1, loss=mean_loss, train_acc=train_acc, test_acc=test_acc,
                            epoch_time=epoch_time))
        if args.checkpoint_dir:
            checkpoints.save_checkpoint(args.checkpoint_dir, _checkpoint_target(model, optimizer),
                                        step=int(optimizer.step[...]), keep=2)
    wall = time.perf_counter() - t_start
    if history:
        print(f"Done: {args.model} (nnx), {args.epochs} epochs, final test accuracy {history[-1]['test_acc']:.4f}, "
              f"wall time {wall:.1f} s")
    return dict(history=history, wall_time=wall, model=model, optimizer=optimizer)
