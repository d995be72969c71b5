"""Data-parallel MNIST training over every device of every process (with MPI across processes).

    python -m fluxion.examples.mnist_dp                                   # all local CPU devices, on a mesh
    FLUXION_NUM_CPU_DEVICES=2 python -m fluxion.examples.mnist_dp --batch-size 64
    FLUXION_NUM_CPU_DEVICES=2 python -m fluxion.examples.mnist_dp --pmap  # the same training with pmap
    mpirun -n 2 python -m fluxion.examples.mnist_dp --batch-size 64      # 2 processes (x their devices)

It takes the options of `fluxion.examples.mnist` (model, epochs, batch size, ...) plus `--pmap`, `--params-out
FILE.npz` (process 0 writes the final parameters, atomically) and `--benchmark-steps N` (time N training steps on
synthetic batches instead of training; process 0 prints `data-parallel step: <ms> ms ...`).

`--batch-size` is the *global* batch, split evenly over all devices of all processes. Two ways to write it, both
giving (to float rounding) the parameters of single-device training with the same options (same batches, order,
initialization and optimizer as `fluxion.examples.mnist`):

* default, the pattern of JAX's sharding tutorials: a 1-D mesh `('batch',)` over all devices, the batch placed with
  `NamedSharding(mesh, P('batch'))` (each process supplies its rows through `make_array_from_process_local_data`),
  the state replicated with `NamedSharding(mesh, P())`, and one `jit(train_step, in_shardings=...,
  out_shardings=...)` on the global batch: the mean gradient over the global batch needs no explicit collective.
  fluxion keeps one global buffer per array (see the README's Sharding section), so every process computes the
  whole step;
* `--pmap`, the pattern of the Haiku/Flax documentation: the state replicated by stacking (`device_put_replicated`),
  `pmap(update, axis_name=...)` and `lax.pmean(grads, axis_name)`; each replica computes its share, and the
  collectives cross processes over MPI.

Under an MPI launcher (`mpirun`/`mpiexec`) the program calls `fluxion.distributed.initialize()` itself. Imports only
the public fluxion API.
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
from fluxion.sharding import AxisType, NamedSharding, PartitionSpec as P
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


class PmapStrategy:
    """The state stacked once per local device, `pmap` over this process's rows split per device."""

    name = "pmap"

    def __init__(self):
        self.process, self.num_local = fluxion.process_index(), fluxion.local_device_count()
        self.step = make_dp_train_step()

    def place_state(self, state):
        return fluxion.device_put_replicated(state, fluxion.local_devices())

    def place_batch(self, batch: np.ndarray):
        return local_shard(batch, self.num_local, self.process)

    def loss_value(self, loss) -> float:
        return float(loss[0])

    def state(self, placed):
        return unreplicate(placed)


class MeshStrategy:
    """A 1-D mesh over every device of every process: batch rows split over it, the state replicated, one jitted
    step on the global batch."""

    name = "mesh"

    def __init__(self, axis_name: str = AXIS):
        self.mesh = fluxion.make_mesh((fluxion.device_count(),), (axis_name,), axis_types=(AxisType.Auto,))
        self.rows = NamedSharding(self.mesh, P(axis_name))
        self.replicated = NamedSharding(self.mesh, P())

        def train_step(state, x, y):
            def loss_fn(params):
                return mnist.cross_entropy(state.apply_fn(params, x), y)

            loss, grads = fluxion.value_and_grad(loss_fn)(state.params)
            return state.apply_gradients(grads=grads), loss

        self.step = fluxion.jit(train_step, in_shardings=(self.replicated, self.rows, self.rows),
                                out_shardings=(self.replicated, self.replicated))

    def place_state(self, state):
        return fluxion.device_put(state, self.replicated)

    def place_batch(self, batch: np.ndarray):
        """The global batch from this process's rows (processes own consecutive blocks of the mesh).

        Raises:
          ValueError: the batch size is not divisible by the number of devices of all processes.
        """
        total = fluxion.device_count()
        if len(batch) % total:
            raise ValueError(f"the global batch size {len(batch)} must be divisible by the number of devices "
                             f"{total} (all processes)")
        per_process = len(batch) // fluxion.process_count()
        mine = batch[fluxion.process_index() * per_process:(fluxion.process_index() + 1) * per_process]
        return fluxion.make_array_from_process_local_data(self.rows, mine, batch.shape)

    def loss_value(self, loss) -> float:
        return float(loss)

    def state(self, placed):
        return placed


def make_strategy(args: argparse.Namespace):
    return PmapStrategy() if args.pmap else MeshStrategy()


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
    """mnist's options plus `--params-out`, `--benchmark-steps` and `--pmap`; `--data-parallel` (the flag of
    mnist.py) is accepted and implied."""
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--data-parallel", action="store_true")
    extra.add_argument("--params-out", default=None)
    extra.add_argument("--benchmark-steps", type=int, default=0)
    extra.add_argument("--pmap", action="store_true")
    known, rest = extra.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    args = mnist.parse_args(rest)
    args.params_out = known.params_out
    args.pmap = known.pmap
    args.benchmark_steps = known.benchmark_steps
    return args


def benchmark_step(args: argparse.Namespace) -> float:
    """Seconds per data-parallel training step (median of `args.benchmark_steps` timed steps, after a warm-up),
    on synthetic batches of `args.batch_size` images split over every device of every process."""
    if launched_by_mpi() and not fluxion.distributed.is_initialized():
        fluxion.distributed.initialize()
    strategy = make_strategy(args)
    rng = np.random.default_rng(args.seed)
    images = rng.integers(0, 256, (args.batch_size, 28, 28), dtype=np.uint8)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.batch_size)]
    model = mnist.MODELS[args.model]()
    state = TrainState.create(apply_fn=model.apply, params=model.init(random.PRNGKey(args.seed), images[:1]),
                              tx=optax.adam(learning_rate=args.learning_rate))
    placed = strategy.place_state(state)
    xb, yb = strategy.place_batch(images), strategy.place_batch(labels)
    placed, loss = strategy.step(placed, xb, yb)  # warm-up: traces and compiles
    times = []
    for _ in range(max(args.benchmark_steps, 1)):
        t0 = time.perf_counter()
        placed, loss = strategy.step(placed, xb, yb)
        strategy.loss_value(loss)
        times.append(time.perf_counter() - t0)
    step = float(np.median(times))
    if fluxion.process_index() == 0:
        print(f"data-parallel step: {step * 1e3:.2f} ms ({args.model}, {strategy.name}, global batch "
              f"{args.batch_size}, {fluxion.device_count()} device(s), {fluxion.process_count()} process(es))")
    return step


def train_data_parallel(args: argparse.Namespace) -> dict:
    """Trains as `mnist.main` does, data-parallel over every device of every process.

    Returns:
      dict(history=[per-epoch dicts], wall_time=seconds, state=the unreplicated final TrainState).
    """
    if launched_by_mpi() and not fluxion.distributed.is_initialized():
        fluxion.distributed.initialize()
    lead = fluxion.process_index() == 0
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
              f"process(es); global batch {args.batch_size}, {args.batch_size // fluxion.device_count()} per device "
              f"({'pmap' if args.pmap else 'mesh + NamedSharding'})")
    strategy = make_strategy(args)
    placed = strategy.place_state(state)
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
            placed, loss = strategy.step(placed, strategy.place_batch(x_train[b]), strategy.place_batch(eye[y_train[b]]))
            loss_sum += strategy.loss_value(loss)
            if i % 50 == 0:
                bar.set_postfix(loss=f"{loss_sum / (i + 1):.4f}")
        epoch_time = time.perf_counter() - t0
        mean_loss = loss_sum / max(steps_per_epoch, 1)
        record = dict(epoch=epoch + 1, loss=mean_loss, epoch_time=epoch_time)
        if lead:
            params = strategy.state(placed).params
            record.update(train_acc=mnist.accuracy(predict, params, x_train, y_train),
                          test_acc=mnist.accuracy(predict, params, x_test, y_test))
            print(f"Epoch {epoch + 1}/{args.epochs} loss {mean_loss:.4f} acc train/test: "
                  f"{record['train_acc']:.4f}/{record['test_acc']:.4f} ({steps_per_epoch / epoch_time:.0f} "
                  f"steps/s, {epoch_time:.1f} s)")
            if args.checkpoint_dir:
                final = strategy.state(placed)
                checkpoints.save_checkpoint(args.checkpoint_dir, final, step=int(final.step), keep=2)
        history.append(record)
    state = strategy.state(placed)
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
