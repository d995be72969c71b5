"""Sharding scaling: a sharded matmul and a sharded MLP training step on 1, 2 and 4 CPU devices, beside the same
computation without shardings on one device, for fluxion and for JAX with the same device count.

    python -m benchmarks.sharding_scaling                  # prints the table
    python -m benchmarks.sharding_scaling --quick          # tiny sizes (smoke run)
    python -m benchmarks.sharding_scaling --markdown t.md  # also writes the README table

Every (framework, device count) runs in a fresh process: fluxion with `FLUXION_NUM_CPU_DEVICES=n`, JAX with
`XLA_FLAGS=--xla_force_host_platform_device_count=n` (device count 0 in the table = the unsharded program on one
device). The workloads are written once against the `jax` API (they receive `fluxion` or `jax` and its numpy):

* matmul: `jit(a @ b)` with `a` (rows split over a 1-D mesh 'x') and `b` replicated, out rows split over 'x';
* mlp step: SGD step of a 784-512-10 MLP with softmax cross-entropy (the MNIST example's shape), batch split over
  'data', parameters replicated, `jit` with in/out shardings.

Times are medians of repeated calls after warm-up (`benchmarks.workloads._bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE_COUNTS = (0, 1, 2, 4)  # 0: no mesh, no shardings
FRAMEWORKS = ("fluxion", "jax")

_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from benchmarks.sharding_scaling import run_child
print("@@RESULT@@" + json.dumps(run_child({framework!r}, {devices!r}, {quick!r})))
"""


def _sizes(quick: bool) -> dict:
    if quick:
        return {"n": 64, "batch": 32, "d_in": 32, "hidden": 16, "d_out": 4}
    return {"n": 1024, "batch": 512, "d_in": 784, "hidden": 512, "d_out": 10}


def _matmul(jax, jnp, devices: int, quick: bool) -> dict:
    import numpy as np
    from benchmarks.workloads import _bench
    n = _sizes(quick)["n"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    if devices == 0:
        f = jax.jit(lambda x, y: x @ y)
    else:
        NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
        mesh = jax.make_mesh((devices,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        rows, rep = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
        a, b = jax.device_put(a, rows), jax.device_put(b, rep)
        f = jax.jit(lambda x, y: x @ y, in_shardings=(rows, rep), out_shardings=rows)
    return _bench(lambda: jax.block_until_ready(f(a, b)), quick)


def _mlp_step(jax, jnp, devices: int, quick: bool) -> dict:
    import numpy as np
    from benchmarks.workloads import _bench
    s = _sizes(quick)
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((s["d_in"], s["hidden"])).astype(np.float32) * 0.05,
              "b1": np.zeros(s["hidden"], np.float32),
              "w2": rng.standard_normal((s["hidden"], s["d_out"])).astype(np.float32) * 0.05,
              "b2": np.zeros(s["d_out"], np.float32)}
    x = rng.standard_normal((s["batch"], s["d_in"])).astype(np.float32)
    labels = rng.integers(0, s["d_out"], s["batch"])
    y = np.eye(s["d_out"], dtype=np.float32)[labels]

    def loss(p, xb, yb):
        h = jax.nn.relu(xb @ p["w1"] + p["b1"])
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ p["w2"] + p["b2"]) * yb, axis=-1))

    def step(p, xb, yb):
        grads = jax.grad(loss)(p, xb, yb)
        return jax.tree_util.tree_map(lambda w, g: w - 0.1 * g, p, grads)

    if devices == 0:
        f = jax.jit(step)
    else:
        NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
        mesh = jax.make_mesh((devices,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
        batch, rep = NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P())
        params, x, y = jax.device_put(params, rep), jax.device_put(x, batch), jax.device_put(y, batch)
        f = jax.jit(step, in_shardings=(rep, batch, batch), out_shardings=rep)
    return _bench(lambda: jax.block_until_ready(f(params, x, y)), quick)


WORKLOADS = {"matmul": ("sharded matmul, {n}x{n} float32, rows over the mesh", _matmul),
             "mlp_step": ("MLP SGD step {d_in}-{hidden}-{d_out}, batch {batch} over the mesh", _mlp_step)}


def run_child(framework: str, devices: int, quick: bool) -> dict:
    """Entry point of a child process: every workload at one device count; {workload: median seconds}."""
    if framework == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_platforms", "cpu")
    else:
        import fluxion as jax
        import fluxion.numpy as jnp
    return {key: statistics.median(fn(jax, jnp, devices, quick)["samples"]) for key, (_, fn) in WORKLOADS.items()}


def _child_env(framework: str, devices: int) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", FLUXION_JIT_SYNC_KERNELS="1")
    env.pop("FLUXION_NUM_CPU_DEVICES", None)
    env.pop("XLA_FLAGS", None)
    count = str(max(devices, 1))
    if framework == "fluxion":
        env["FLUXION_NUM_CPU_DEVICES"] = count
    else:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={count}"
    return env


def measure(quick: bool, timeout: float = 900.0) -> dict:
    """{(framework, devices): {workload: seconds} or {"error": message}} for every framework and device count."""
    out = {}
    for framework in FRAMEWORKS:
        for devices in DEVICE_COUNTS:
            code = _CHILD.format(root=ROOT, framework=framework, devices=devices, quick=quick)
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                                  env=_child_env(framework, devices), cwd=ROOT)
            if proc.returncode != 0:
                last = proc.stderr.strip().splitlines()[-1:] or ["failed"]
                out[framework, devices] = {"error": last[0][:200]}
                continue
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1]
            out[framework, devices] = json.loads(line[len("@@RESULT@@"):])
    return out


def table(results: dict, quick: bool) -> str:
    """The markdown table: one row per (workload, device count), fluxion and JAX milliseconds side by side."""
    sizes = _sizes(quick)
    lines = ["| workload | devices | fluxion (ms) | JAX (ms) | JAX / fluxion |", "|---|---|---|---|---|"]
    for key, (title, _) in WORKLOADS.items():
        for devices in DEVICE_COUNTS:
            cells = []
            for framework in FRAMEWORKS:
                r = results.get((framework, devices), {})
                cells.append(r[key] * 1e3 if key in r else None)
            ratio = f"{cells[1] / cells[0]:.2f}" if None not in cells else "-"
            shown = [f"{c:.2f}" if c is not None else "failed" for c in cells]
            label = "1, no sharding" if devices == 0 else str(devices)
            lines.append(f"| {title.format(**sizes)} | {label} | {shown[0]} | {shown[1]} | {ratio} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    p.add_argument("--markdown", default=None, help="write the table to this file")
    args = p.parse_args(argv)
    results = measure(args.quick)
    for k, v in results.items():
        if "error" in v:
            print(f"# {k[0]} on {k[1]} device(s) failed: {v['error']}")
    text = table(results, args.quick)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
