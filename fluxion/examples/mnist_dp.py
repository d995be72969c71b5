"""Data-parallel MNIST training with `pmap`: one replica per device, across processes with MPI.

    python -m fluxion.examples.mnist_dp                                   # all local CPU devices
    FLUXION_NUM_CPU_DEVICES=2 python -m fluxion.examples.mnist_dp --batch-size 64
    mpirun -n 2 python -m fluxion.examples.mnist_dp --batch-size 64      # 2 processes (x their devices)

It takes the options of `fluxion.examples.mnist` (model, epochs, batch size, ...) plus `--params-out FILE.npz`
(process 0 writes the final parameters, atomically) and `--benchmark-steps N` (time N training steps on synthetic
batches instead of training; process 0 prints `data-parallel step: <ms> ms ...`).

`--batch-size` is the *global* batch: it is split evenly over all devices of all processes, each replica computes
the gradient of its share, `lax.pmean` averages the gradients, and every replica applies the same Adam update to
its copy of the parameters. The batches, their order, the
initialization and the optimizer are those of `fluxion.examples.mnist`, so the final parameters equal (to float
rounding) those of single-device training with the same options.

The pattern is the one of the Haiku/Flax documentation: parameters replicated by stacking
(`device_put_replicated`), `pmap(update, axis_name=...)` and `lax.pmean(grads, axis_name)`. Under an MPI launcher
(`mpirun`/`mpiexec`) the program calls `fluxion.distributed.initialize()` itself. Imports only the public fluxion API.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Sequence

import numpy as np
from tqdm import tqdm

import fluxion
from fluxion import lax, optax, random
from fluxion.examples import mnist
from fluxion.flax.training import checkpoints
from fluxion.flax.training.train_state import TrainState

AXIS = "batch"
_MPI_ENV = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    """True when an MPI launcher started this process (its environment variables are present)."""
    return any(k in os.environ for k in _MPI_ENV)


def make_dp_train_step(axis_name: str = AXIS):
    """The replicated train step: (state, x, y) with a leading device axis -> (new state, mean loss)."""
    def train_step(state, x, y):
        def loss_fn(params):
            return mnist.cross_entropy(state.apply_fn(params, x), y)

        loss, grads = fluxion.value_and_grad(loss_fn)(state.params)
        grads = lax.pmean(grads, axis_name)
        return state.apply_gradients(grads=grads), lax.pmean(loss, axis_name)

    return fluxion.pmap(train_step, axis_name=axis_name)


def local_shard(batch: np.ndarray, num_local: int, process: int) -> np.ndarray:
    """This process's part of a global batch, split per local device: (num_local, per_device, ...).

    The global batch (B, ...) is cut into `device_count()` equal blocks in global device order; process p owns
    blocks p * num_local ... (p + 1) * num_local - 1.

    Raises:
      ValueError: B is not divisible by the number of devices of all processes.
    """
    total = fluxion.device_count()
    if len(batch) % total:
        raise ValueError(f"the global batch size {len(batch)} must be divisible by the number of devices "
                         f"{total} (all processes)")
    per = len(batch) // total
    mine = batch[process * num_local * per:(process + 1) * num_local * per]
    return mine.reshape((num_local, per) + batch.shape[1:])


def unreplicate(tree):
    """The copy held by the first local device of every replicated leaf."""
    return fluxion.tree_util.tree_map(lambda x: x[0], tree)


def save_params(path: str, params) -> None:
    """Writes the parameter leaves to `path` (.npz, keys = their key paths), atomically."""
    leaves = fluxion.tree_util.tree_flatten_with_path(params)[0]
    arrays = {fluxion.tree_util.keystr(k): np.asarray(v) for k, v in leaves}
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """mnist's options plus `--params-out`; `--data-parallel` (the flag of mnist.py) is accepted and implied."""
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--data-parallel", action="store_true")
    extra.add_argument("--params-out", default=None)
    extra.add_argument("--benchmark-steps", type=int, default=0)
    known, rest = extra.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    args = mnist.parse_args(rest)
    args.params_out = known.params_out
    args.benchmark_steps = known.benchmark_steps
    return args


def benchmark_step(args: argparse.Namespace) -> float:
    """Seconds per data-parallel training step (median of `args.benchmark_steps` timed steps, after a warm-up),
    on synthetic batches of `args.batch_size` images split over every device of every process."""
    if launched_by_mpi() and not fluxion.distributed.is_initialized():
        fluxion.distributed.initialize()
    process, num_local = fluxion.process_index(), fluxion.local_device_count()
    rng = np.random.default_rng(args.seed)
    images = rng.integers(0, 256, (args.batch_size, 28, 28), dtype=np.uint8)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.batch_size)]
    model = mnist.MODELS[args.model]()
    state = TrainState.create(apply_fn=model.apply, params=model.init(random.PRNGKey(args.seed), images[:1]),
                              tx=optax.adam(learning_rate=args.learning_rate))
    replicated = fluxion.device_put_replicated(state, fluxion.local_devices())
    train_step = make_dp_train_step()
    xb, yb = local_shard(images, num_local, process), local_shard(labels, num_local, process)
    replicated, loss = train_step(replicated, xb, yb)  # warm-up: traces and compiles
    times = []
    for _ in range(max(args.benchmark_steps, 1)):
        t0 = time.perf_counter()
        replicated, loss = train_step(replicated, xb, yb)
        float(loss[0])
        times.append(time.perf_counter() - t0)
    step = float(np.median(times))
    if process == 0:
        print(f"data-parallel step: {step * 1e3:.2f} ms ({args.model}, global batch {args.batch_size}, "
              f"{fluxion.device_count()} device(s), {fluxion.process_count()} process(es))")
    return step


def train_data_parallel(args: argparse.Namespace) -> dict:
    """Trains as `mnist.main` does, data-parallel over every device of every process.

    Returns:
      dict(history=[per-epoch dicts], wall_time=seconds, state=the unreplicated final TrainState).
    """
    if launched_by_mpi() and not fluxion.distributed.is_initialized():
        fluxion.distributed.initialize()
    process, num_local = fluxion.process_index(), fluxion.local_device_count()
    lead = process == 0
    t_start = time.perf_counter()
    (x_train, y_train), (x_test, y_test) = mnist.load_data(args)
    n = len(x_train)
    steps_per_epoch = n // args.batch_size
    eye = np.eye(10, dtype=np.float32)

    model = mnist.MODELS[args.model]()
    key, init_key = random.split(random.PRNGKey(args.seed))
    state = TrainState.create(apply_fn=model.apply, params=model.init(init_key, x_train[:1]),
                              tx=optax.adam(learning_rate=mnist.make_learning_rate(args, steps_per_epoch)))
    start_epoch = 0
    if args.checkpoint_dir:
        state = checkpoints.restore_checkpoint(args.checkpoint_dir, state)
        start_epoch = int(state.step) // max(steps_per_epoch, 1)
    if lead:
        print(f"Data-parallel training on {fluxion.device_count()} device(s) in {fluxion.process_count()} "
              f"process(es); global batch {args.batch_size}, {args.batch_size // fluxion.device_count()} per device")
    replicated = fluxion.device_put_replicated(state, fluxion.local_devices())
    train_step = make_dp_train_step()
    predict = mnist.make_predict(model)
    history = []
    for epoch in range(start_epoch, args.epochs):
        idxs = np.asarray(random.permutation(random.fold_in(key, epoch), n))
        loss_sum = 0.0
        t0 = time.perf_counter()
        bar = tqdm(range(steps_per_epoch), desc=f"Epoch {epoch + 1}/{args.epochs}",
                   disable=args.no_progress or not lead, file=sys.stdout, mininterval=0.5)
        for i in bar:
            b = idxs[i * args.batch_size:(i + 1) * args.batch_size]
            xb = local_shard(x_train[b], num_local, process)
            yb = local_shard(eye[y_train[b]], num_local, process)
            replicated, loss = train_step(replicated, xb, yb)
            loss_sum += float(loss[0])
            if i % 50 == 0:
                bar.set_postfix(loss=f"{loss_sum / (i + 1):.4f}")
        epoch_time = time.perf_counter() - t0
        mean_loss = loss_sum / max(steps_per_epoch, 1)
        record = dict(epoch=epoch + 1, loss=mean_loss, epoch_time=epoch_time)
        if lead:
            params = unreplicate(replicated).params
            record.update(train_acc=mnist.accuracy(predict, params, x_train, y_train),
                          test_acc=mnist.accuracy(predict, params, x_test, y_test))
            print(f"Epoch {epoch + 1}/{args.epochs} loss {mean_loss:.4f} acc train/test: "
                  f"{record['train_acc']:.4f}/{record['test_acc']:.4f} ({steps_per_epoch / epoch_time:.0f} "
                  f"steps/s, {epoch_time:.1f} s)")
            if args.checkpoint_dir:
                final = unreplicate(replicated)
                checkpoints.save_checkpoint(args.checkpoint_dir, final, step=int(final.step), keep=2)
        history.append(record)
    state = unreplicate(replicated)
    if lead and args.params_out:
        save_params(args.params_out, state.params)
    wall = time.perf_counter() - t_start
    if lead:
        print(f"Done: {args.model}, data-parallel, wall time {wall:.1f} s")
    return dict(history=history, wall_time=wall, state=state)


def main(argv: Sequence[str] | None = None):
    args = parse_args(argv)
    if args.benchmark_steps:
        return benchmark_step(args)
    return train_data_parallel(args)


if __name__ == "__main__":
    main()
