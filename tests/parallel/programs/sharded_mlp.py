"""A JAX program written for 8 devices: a sharded two-layer MLP trained for a few steps.

Mesh ('data', 'model') of 4 x 2. Parameters are split over 'model' (the hidden units), the batch over 'data'. The
training step is a `jax.jit` with `in_shardings`/`out_shardings`; the evaluation metric (mean absolute error) is a
`jax.shard_map`ped reduction with a `psum` over both mesh axes.

It imports `jax` only, so it runs unchanged on JAX (XLA_FLAGS=--xla_force_host_platform_device_count=8) and on
fluxion (`FLUXION_NUM_CPU_DEVICES=8 python -m fluxion.run sharded_mlp.py`). With `--distributed` it first calls
`jax.distributed.initialize()` and each process contributes its own rows of every batch
(`jax.make_array_from_process_local_data`); launch it with e.g. `mpirun -n 2` and 4 devices per process.

Prints, from every process, one `SHARDS` line (which global devices hold this process's blocks of the batch) and
one `STEP` line per training step (loss before the update and the metric).
"""

import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

if "--distributed" in sys.argv:
    jax.distributed.initialize()

BATCH, D_IN, HIDDEN, D_OUT, STEPS, LR = 32, 16, 32, 4, 5, 0.1

mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
param_specs = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
param_sharding = {k: NamedSharding(mesh, s) for k, s in param_specs.items()}
batch_sharding = NamedSharding(mesh, P("data", None))
replicated = NamedSharding(mesh, P())

rng = np.random.default_rng(0)
params = {"w1": rng.standard_normal((D_IN, HIDDEN)).astype(np.float32) / np.sqrt(D_IN),
          "b1": np.zeros(HIDDEN, np.float32),
          "w2": rng.standard_normal((HIDDEN, D_OUT)).astype(np.float32) / np.sqrt(HIDDEN),
          "b2": np.zeros(D_OUT, np.float32)}
params = jax.device_put(params, param_sharding)
true_w = rng.standard_normal((D_IN, D_OUT)).astype(np.float32)


def forward(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


def loss_fn(p, x, y):
    return jnp.mean((forward(p, x) - y) ** 2)


def train_step(p, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda w, g: w - LR * g, p, grads), loss


train_step = jax.jit(train_step, in_shardings=(param_sharding, batch_sharding, batch_sharding),
                     out_shardings=(param_sharding, replicated))


def local_abs_error(pred, y):
    # each device holds a (BATCH/4, D_OUT/2) block; the psum adds the blocks' sums over the whole mesh
    return jax.lax.psum(jnp.sum(jnp.abs(pred - y)), ("data", "model")) / (BATCH * D_OUT)


@jax.jit
def metric(p, x, y):
    pred = forward(p, x)
    return jax.shard_map(local_abs_error, mesh=mesh, in_specs=(P("data", "model"), P("data", "model")),
                         out_specs=P())(pred, y)


def process_rows(a):
    """This process's rows of a global batch (processes own consecutive slices of the 'data' axis)."""
    n = a.shape[0] // jax.process_count()
    return a[jax.process_index() * n:(jax.process_index() + 1) * n]


for step in range(STEPS):
    xs = rng.standard_normal((BATCH, D_IN)).astype(np.float32)
    ys = np.sin(xs @ true_w)
    x = jax.make_array_from_process_local_data(batch_sharding, process_rows(xs), (BATCH, D_IN))
    y = jax.make_array_from_process_local_data(batch_sharding, process_rows(ys), (BATCH, D_OUT))
    if step == 0:
        local = sorted(s.device.id for s in x.addressable_shards)
        print(f"SHARDS process={jax.process_index()} devices={local} rows={x.addressable_shards[0].data.shape[0]} "
              f"global={x.shape}", flush=True)
    params, loss = train_step(params, x, y)
    print(f"STEP process={jax.process_index()} step={step} loss={float(loss):.7f} "
          f"mae={float(metric(params, x, y)):.7f}", flush=True)
