"""The program each MPI process runs in tests/parallel/test_mpi.py (not a test module itself).

    mpirun -n 2 python tests/parallel/mpi_worker.py collectives   # checks, prints one RESULT line per rank
    mpirun -n 2 python tests/parallel/mpi_worker.py missing FLAG  # rank 1 never joins
    mpirun -n 2 python tests/parallel/mpi_worker.py hangs FLAG    # rank 1 stops taking part after joining
    mpirun -n 2 python tests/parallel/mpi_worker.py dies FLAG     # rank 1 is killed after joining

Every rank prints `RESULT <json>`; the test parses those lines.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np


def emit(**kw) -> None:
    print("RESULT " + json.dumps(kw), flush=True)


def collectives() -> None:
    import fluxion
    import fluxion.numpy as jnp
    from fluxion import lax

    fluxion.distributed.initialize(collective_timeout=60)
    p, nproc, nloc = fluxion.process_index(), fluxion.process_count(), fluxion.local_device_count()
    n = fluxion.device_count()
    rows = slice(p * nloc, (p + 1) * nloc)
    glob = np.arange(n * 2 * n, dtype=np.float32).reshape(n, 2 * n) * 0.5 - 3
    local = glob[rows]
    checks = {}

    def check(name, f, expected):
        out = np.asarray(fluxion.pmap(f, axis_name="i")(local))
        checks[name] = bool(out.shape == expected[rows].shape and np.allclose(out, expected[rows], atol=1e-5))

    rep = lambda a: np.broadcast_to(a, (n,) + a.shape)
    check("psum", lambda v: lax.psum(v, "i"), rep(glob.sum(0)))
    check("pmean", lambda v: lax.pmean(v, "i"), rep(glob.mean(0)))
    check("pmax", lambda v: lax.pmax(v, "i"), rep(glob.max(0)))
    check("all_gather", lambda v: lax.all_gather(v, "i"), rep(glob))
    check("axis_index", lambda v: lax.axis_index("i") + 0 * v[0], np.arange(n, dtype=np.float32))
    check("ppermute", lambda v: lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)]), np.roll(glob, 1, 0))
    check("psum_scatter", lambda v: lax.psum_scatter(v, "i", tiled=True), glob.sum(0).reshape(n, 2))
    check("all_to_all", lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True),
          np.stack([glob[:, 2 * r:2 * r + 2].reshape(-1) for r in range(n)]))
    # grad through psum across processes: d(sum_j L_j)/dx_i with L_j = sum(c * psum(x)^2)
    gpsum = np.asarray(fluxion.pmap(fluxion.grad(lambda v: jnp.sum(lax.psum(v, "i") ** 2)), axis_name="i")(local))
    checks["grad_psum"] = bool(np.allclose(gpsum, rep(2 * n * glob.sum(0))[rows], rtol=1e-5))
    checks["data_parallel"] = data_parallel(fluxion, jnp, lax, p, nloc)
    checks.update(global_arrays(fluxion, p, n))
    emit(rank=p, process_count=nproc, local_devices=[repr(d) for d in fluxion.local_devices()],
         devices=[[d.id, d.process_index] for d in fluxion.devices()], checks=checks)


def data_parallel(fluxion, jnp, lax, p, nloc) -> bool:
    """Replicated-params SGD with pmean'd grads over all processes == single-device training on global batches."""
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": np.zeros(3, np.float32)}
    n = fluxion.device_count()
    batches = [(rng.standard_normal((2 * n, 4)).astype(np.float32), rng.standard_normal((2 * n, 3)).astype(np.float32))
               for _ in range(4)]

    def loss(prm, x, y):
        return jnp.mean((jnp.tanh(x @ prm["w"] + prm["b"]) - y) ** 2)

    def step(prm, x, y, axis_name=None):
        g = fluxion.grad(loss)(prm, x, y)
        if axis_name is not None:
            g = lax.pmean(g, axis_name)
        return fluxion.tree_util.tree_map(lambda a, b: a - 0.5 * b, prm, g)

    reference = params
    replicated = fluxion.device_put_replicated(params, fluxion.local_devices())
    update = fluxion.pmap(lambda prm, x, y: step(prm, x, y, "i"), axis_name="i")
    for x, y in batches:
        reference = fluxion.jit(step)(reference, x, y)
        mine = slice(p * nloc * 2, (p + 1) * nloc * 2)
        replicated = update(replicated, x[mine].reshape(nloc, 2, 4), y[mine].reshape(nloc, 2, 3))
    return all(np.allclose(np.asarray(replicated[k])[i], np.asarray(reference[k]), rtol=1e-5, atol=1e-6)
               for k in params for i in range(nloc))


def global_arrays(fluxion, p, n) -> dict:
    """Global arrays built from per-process parts (exchanged over MPI) == the array every process could build."""
    from fluxion.sharding import NamedSharding, PartitionSpec as P
    mesh = fluxion.make_mesh((n // 2, 2), ("a", "b"))  # process p owns mesh row p
    glob = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    rows = NamedSharding(mesh, P("a", "b"))
    out = {}
    a = fluxion.make_array_from_process_local_data(rows, glob[4 * p:4 * p + 4])  # global shape inferred: (8, 6)
    out["local_data_inferred"] = a.shape == (8, 6) and np.array_equal(np.asarray(a), glob)
    full_cols = fluxion.make_array_from_process_local_data(rows, glob[4 * p:4 * p + 4], (8, 6))
    out["local_data_full_dim"] = np.array_equal(np.asarray(full_cols), glob)
    shards = a.addressable_shards
    out["addressable_shards"] = ([s.device.id for s in shards] == [2 * p, 2 * p + 1]
                                 and all(np.array_equal(np.asarray(s.data), glob[s.index]) for s in shards)
                                 and not a.is_fully_addressable)
    out["global_shards"] = ([(s.device.id, s.data is None) for s in a.global_shards]
                            == [(d, d // 2 != p) for d in range(n)])
    cb = fluxion.make_array_from_callback((8, 6), rows, lambda idx: glob[idx])
    out["from_callback"] = np.array_equal(np.asarray(cb), glob)
    idx = rows.addressable_devices_indices_map((8, 6))
    single = fluxion.make_array_from_single_device_arrays((8, 6), rows, [glob[idx[d]] for d in mesh.local_devices])
    out["from_single_device_arrays"] = np.array_equal(np.asarray(single), glob)
    return out


def missing(flag: str) -> None:
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    if rank == 1:  # joins MPI (so MPI_Init completes) but never calls fluxion.distributed.initialize()
        from mpi4py import MPI  # noqa: F401
        deadline = time.time() + 60
        while not os.path.exists(flag) and time.time() < deadline:
            time.sleep(0.05)
        return
    import fluxion
    t0 = time.time()
    try:
        fluxion.distributed.initialize(initialization_timeout=2)
        emit(rank=rank, error=None)
    except fluxion.distributed.DistributedTimeoutError as e:
        emit(rank=rank, error=str(e), missing=e.missing_ranks, seconds=time.time() - t0)
    finally:
        open(flag, "w").close()


def stops(how: str, flag: str) -> None:
    """Rank 1 joins, takes part in one psum, then hangs (`how == "hangs"`) or is killed (`"dies"`)."""
    import fluxion
    from fluxion import lax
    fluxion.distributed.initialize(collective_timeout=2)
    x = np.ones((fluxion.local_device_count(), 3), np.float32)
    fluxion.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(x)  # everyone alive: succeeds
    if fluxion.process_index() == 1:
        if how == "dies":
            os.kill(os.getpid(), signal.SIGKILL)
        deadline = time.time() + 60
        while not os.path.exists(flag) and time.time() < deadline:
            time.sleep(0.05)
        return
    t0 = time.time()
    try:
        fluxion.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(x)
        emit(rank=0, error=None)
    except fluxion.distributed.DistributedTimeoutError as e:
        emit(rank=0, error=str(e), missing=e.missing_ranks, seconds=time.time() - t0)
    finally:
        open(flag, "w").close()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "collectives":
        collectives()
    elif mode == "missing":
        missing(sys.argv[2])
    elif mode in ("hangs", "dies"):
        stops(mode, sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
