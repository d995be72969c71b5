"""Workload bodies: one function per (workload, framework), run in a fresh process by `benchmarks/run.py`.

Each function takes `quick` (tiny sizes, to keep the runner working in CI) and returns a dict with `samples` (a list
of measurements in the workload's base unit: seconds per operation, seconds, or bytes) and optionally `info`
(numbers worth printing, such as the final parameters of a training run). Frameworks: `fluxion`, `fluxion_eager`,
`jax` (jit), `jax_eager`, `torch` (eager), `torch_compile`, `numpy` (hand-written).

Steady-state rows are timed after `timing.settle`: every framework's callable runs for two seconds first, and
fluxion's until its background kernel compiler is idle, so the numbers are what a user gets once a program has run
for a moment (not the NumPy path fluxion runs while kernels compile). Training steps live in `training.py`.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable

import numpy as np

from . import timing, training
from .threads import configure_torch

# --------------------------------------------------------------------------------------------------------------
# Timing helpers
# --------------------------------------------------------------------------------------------------------------


def _bench(fn: Callable, quick: bool, target: float = 0.2) -> dict:
    """Settles `fn` (see `timing.settle`), then times it: `timing.REPEAT` samples of about `target` seconds."""
    return timing.bench(fn, quick, target)


def _fx():
    import fluxion
    import fluxion.numpy as jnp
    return fluxion, jnp


def _jax():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    return jax, jnp


def _torch():
    import torch
    configure_torch(torch)
    return torch


def _ready_fx(x):
    return x.block_until_ready() if hasattr(x, "block_until_ready") else x


def _ready_jax(x):
    import jax
    return jax.block_until_ready(x)


# --------------------------------------------------------------------------------------------------------------
# 1. eager x + y on 1,000 float32
# --------------------------------------------------------------------------------------------------------------

def eager_add(framework: str, quick: bool) -> dict:
    n = 1000
    if framework == "numpy":
        x, y = np.ones(n, np.float32), np.ones(n, np.float32)
        return _bench(lambda: x + y, quick, 0.1)
    if framework == "torch":
        torch = _torch()
        x, y = torch.ones(n), torch.ones(n)
        return _bench(lambda: x + y, quick, 0.1)
    if framework == "fluxion":
        _, jnp = _fx()
        x, y = jnp.ones(n, dtype=jnp.float32), jnp.ones(n, dtype=jnp.float32)
        return _bench(lambda: (x + y).block_until_ready(), quick, 0.1)
    if framework == "jax":
        _, jnp = _jax()
        x, y = jnp.ones(n, dtype=jnp.float32), jnp.ones(n, dtype=jnp.float32)
        return _bench(lambda: (x + y).block_until_ready(), quick, 0.1)
    raise KeyError(framework)


# --------------------------------------------------------------------------------------------------------------
# 2. a jitted function of three small arrays (call overhead)
# --------------------------------------------------------------------------------------------------------------

def jit_call(framework: str, quick: bool) -> dict:
    def f(a, b, c):
        return a * b + c

    if framework == "numpy":
        a, b, c = (np.ones(10, np.float32) for _ in range(3))
        return _bench(lambda: f(a, b, c), quick, 0.1)
    if framework in ("torch", "torch_compile"):
        torch = _torch()
        a, b, c = (torch.ones(10) for _ in range(3))
        g = torch.compile(f) if framework == "torch_compile" else f
        return _bench(lambda: g(a, b, c), quick, 0.1)
    if framework == "fluxion":
        fluxion, jnp = _fx()
        g = fluxion.jit(f)
        a, b, c = (jnp.ones(10, dtype=jnp.float32) for _ in range(3))
        return _bench(lambda: g(a, b, c).block_until_ready(), quick, 0.1)
    if framework == "jax":
        jax, jnp = _jax()
        g = jax.jit(f)
        a, b, c = (jnp.ones(10, dtype=jnp.float32) for _ in range(3))
        return _bench(lambda: g(a, b, c).block_until_ready(), quick, 0.1)
    raise KeyError(framework)


# --------------------------------------------------------------------------------------------------------------
# 3. selu on 1e6 float32 (jit and eager)
# --------------------------------------------------------------------------------------------------------------

def _selu_data(quick):
    return np.random.default_rng(0).standard_normal(1000 if quick else 1_000_000).astype(np.float32)


def _selu_np(x):
    return 1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67)


def _selu_bench(framework: str, quick: bool, jit: bool) -> dict:
    x_np = _selu_data(quick)
    info = {"bytes": 2 * x_np.nbytes}
    if framework == "numpy":
        out = _bench(lambda: _selu_np(x_np), quick)
    elif framework in ("torch", "torch_compile"):
        torch = _torch()
        x = torch.from_numpy(x_np)

        def selu(x):
            return 1.05 * torch.where(x > 0, x, 1.67 * torch.exp(x) - 1.67)
        g = torch.compile(selu) if framework == "torch_compile" else selu
        out = _bench(lambda: g(x), quick)
    elif framework in ("fluxion", "fluxion_eager"):
        fluxion, jnp = _fx()

        def selu(x):
            return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)
        g = fluxion.jit(selu) if jit else selu
        x = jnp.asarray(x_np)
        out = _bench(lambda: g(x).block_until_ready(), quick)
    elif framework in ("jax", "jax_eager"):
        jax, jnp = _jax()

        def selu(x):
            return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)
        g = jax.jit(selu) if jit else selu
        x = jnp.asarray(x_np)
        out = _bench(lambda: g(x).block_until_ready(), quick)
    else:
        raise KeyError(framework)
    out["info"] = info
    return out


def selu_jit(framework: str, quick: bool) -> dict:
    return _selu_bench(framework, quick, jit=True)


def selu_eager(framework: str, quick: bool) -> dict:
    return _selu_bench(framework, quick, jit=False)


# --------------------------------------------------------------------------------------------------------------
# 4. (X - X.mean(0)) / X.std(0) on 10000 x 100 (jit and eager)
# --------------------------------------------------------------------------------------------------------------

def _standardize_bench(framework: str, quick: bool, jit: bool) -> dict:
    x_np = np.random.default_rng(0).standard_normal((100, 10) if quick else (10000, 100)).astype(np.float32)
    if framework == "numpy":
        return _bench(lambda: (x_np - x_np.mean(0)) / x_np.std(0), quick)
    if framework in ("torch", "torch_compile"):
        torch = _torch()
        x = torch.from_numpy(x_np)

        def f(x):
            return (x - x.mean(0)) / x.std(0, unbiased=False)
        g = torch.compile(f) if framework == "torch_compile" else f
        return _bench(lambda: g(x), quick)
    if framework in ("fluxion", "fluxion_eager"):
        fluxion, jnp = _fx()
        f = lambda x: (x - x.mean(0)) / x.std(0)  # noqa: E731
        g = fluxion.jit(f) if jit else f
        x = jnp.asarray(x_np)
        return _bench(lambda: g(x).block_until_ready(), quick)
    if framework in ("jax", "jax_eager"):
        jax, jnp = _jax()
        f = lambda x: (x - x.mean(0)) / x.std(0)  # noqa: E731
        g = jax.jit(f) if jit else f
        x = jnp.asarray(x_np)
        return _bench(lambda: g(x).block_until_ready(), quick)
    raise KeyError(framework)


def standardize_time_to_steady(framework: str, quick: bool) -> dict:
    """Seconds from the first call of the jitted standardization (cold kernel cache) until a call runs at the
    steady speed (`timing.time_to_steady`)."""
    x_np = np.random.default_rng(0).standard_normal((100, 10) if quick else (10000, 100)).astype(np.float32)
    jax, jnp = _fx() if framework == "fluxion" else _jax()
    g = jax.jit(lambda x: (x - x.mean(0)) / x.std(0))
    x = jnp.asarray(x_np)
    ready = _ready_fx if framework == "fluxion" else _ready_jax
    return timing.time_to_steady(lambda: ready(g(x)), quick)


def standardize_jit(framework: str, quick: bool) -> dict:
    return _standardize_bench(framework, quick, jit=True)


def standardize_eager(framework: str, quick: bool) -> dict:
    return _standardize_bench(framework, quick, jit=False)


# --------------------------------------------------------------------------------------------------------------
# 5. linear regression, N = 1e6, 1,000 jitted gradient steps
# --------------------------------------------------------------------------------------------------------------

def _linreg_data(quick):
    n = 10_000 if quick else 1_000_000
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = (3.0 * x + 2.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    return x, y, (10 if quick else 1000)


def linreg(framework: str, quick: bool) -> dict:
    x_np, y_np, steps = _linreg_data(quick)
    lr = 0.1
    if framework == "numpy":
        def run():
            w, b = np.float32(0.0), np.float32(0.0)
            for _ in range(steps):
                err = w * x_np + b - y_np
                gw = 2.0 * np.mean(err * x_np)
                gb = 2.0 * np.mean(err)
                w, b = w - lr * gw, b - lr * gb
            return float(w), float(b)
    elif framework in ("torch", "torch_compile"):
        torch = _torch()
        from torch.func import grad
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def loss(params):
            w, b = params
            return torch.mean((w * x + b - y) ** 2)

        def step(params):
            g = grad(loss)(params)
            return tuple(p - lr * gp for p, gp in zip(params, g))
        st = torch.compile(step) if framework == "torch_compile" else step

        def run():
            params = (torch.tensor(0.0), torch.tensor(0.0))
            for _ in range(steps):
                params = st(params)
            return float(params[0]), float(params[1])
    elif framework == "fluxion" or framework == "jax":
        jax, jnp = _fx() if framework == "fluxion" else _jax()
        x, y = jnp.asarray(x_np), jnp.asarray(y_np)

        def loss(params, x, y):
            w, b = params
            return jnp.mean((w * x + b - y) ** 2)

        @jax.jit
        def step(params, x, y):
            g = jax.grad(loss)(params, x, y)
            return tuple(p - lr * gp for p, gp in zip(params, g))

        def run():
            params = (jnp.float32(0.0), jnp.float32(0.0))
            for _ in range(steps):
                params = step(params, x, y)
            return float(params[0]), float(params[1])
    else:
        raise KeyError(framework)
    timing.settle(run, quick, min_calls=1)
    w, b = run()
    samples = []
    for _ in range(1 if quick else 3):
        t0 = time.perf_counter()
        w, b = run()
        samples.append(time.perf_counter() - t0)
    return {"samples": samples, "info": {"w": round(w, 4), "b": round(b, 4)}}


# 6, 7. MNIST train steps (MLP batch 32 with Adam, CNN batch 128 with SGD momentum): see `training.py`
# --------------------------------------------------------------------------------------------------------------

def mnist_mlp_first_call(framework: str, quick: bool) -> dict:
    """Seconds from the first call of the jitted MLP train step to its result (trace + compile + run)."""
    if framework in ("torch", "torch_compile"):
        step, x, y = training.mnist_torch_step(framework, "mlp", 32)
        t0 = time.perf_counter()
        step(x, y)
        return {"samples": [time.perf_counter() - t0]}
    step, state, x, y, ready = training.mnist_jaxlike_step(framework, "mlp", 32)
    t0 = time.perf_counter()
    _, loss = step(state, x, y)
    ready(loss)
    return {"samples": [time.perf_counter() - t0]}


# --------------------------------------------------------------------------------------------------------------
# 8. vmapped one-hot of 60,000 labels
# --------------------------------------------------------------------------------------------------------------

def one_hot(framework: str, quick: bool) -> dict:
    labels_np = np.random.default_rng(0).integers(0, 10, 600 if quick else 60_000).astype(np.int32)
    if framework == "numpy":
        return _bench(lambda: (labels_np[:, None] == np.arange(10)).astype(np.float32), quick)
    if framework in ("torch", "torch_compile"):
        torch = _torch()
        labels = torch.from_numpy(labels_np.astype(np.int64))

        def f(l):
            return torch.nn.functional.one_hot(l, 10).float()
        g = torch.compile(f) if framework == "torch_compile" else f
        return _bench(lambda: g(labels), quick)
    jax, jnp = _fx() if framework == "fluxion" else _jax()
    f = jax.jit(jax.vmap(lambda l: (jnp.arange(10) == l).astype(jnp.float32)))
    labels = jnp.asarray(labels_np)
    ready = _ready_fx if framework == "fluxion" else _ready_jax
    return _bench(lambda: ready(f(labels)), quick)


# --------------------------------------------------------------------------------------------------------------
# 9. an eager grad call and a third derivative
# --------------------------------------------------------------------------------------------------------------

def _eager_grad(framework: str, quick: bool, order: int) -> dict:
    x_np = np.linspace(-1, 1, 100).astype(np.float32)
    if framework == "torch":
        torch = _torch()
        if order == 1:
            x = torch.from_numpy(x_np).requires_grad_(True)

            def call():
                (g,) = torch.autograd.grad(torch.sum(torch.tanh(x) ** 2), x)
                return g
        else:
            x = torch.tensor(2.0, requires_grad=True)

            def call():
                y = x ** 3 + 2 * x
                (g1,) = torch.autograd.grad(y, x, create_graph=True)
                (g2,) = torch.autograd.grad(g1, x, create_graph=True)
                (g3,) = torch.autograd.grad(g2, x)
                return g3
        return _bench(call, quick, 0.2)
    jax, jnp = _fx() if framework == "fluxion" else _jax()
    if order == 1:
        g = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))
        x = jnp.asarray(x_np)
    else:
        g = jax.grad(jax.grad(jax.grad(lambda x: x ** 3 + 2 * x)))
        x = 2.0
    ready = _ready_fx if framework == "fluxion" else _ready_jax
    return _bench(lambda: ready(g(x)), quick, 0.2)


def eager_grad(framework: str, quick: bool) -> dict:
    return _eager_grad(framework, quick, 1)


def eager_third_derivative(framework: str, quick: bool) -> dict:
    return _eager_grad(framework, quick, 3)


# --------------------------------------------------------------------------------------------------------------
# 10. dot(x, x) for 1e7 float32
# --------------------------------------------------------------------------------------------------------------

def dot_1e7(framework: str, quick: bool) -> dict:
    x_np = np.random.default_rng(0).standard_normal(1000 if quick else 10_000_000).astype(np.float32)
    if framework == "numpy":
        return _bench(lambda: np.dot(x_np, x_np), quick)
    if framework in ("torch", "torch_compile"):
        torch = _torch()
        x = torch.from_numpy(x_np)
        g = torch.compile(torch.dot) if framework == "torch_compile" else torch.dot
        return _bench(lambda: g(x, x), quick)
    jax, jnp = _fx() if framework == "fluxion" else _jax()
    f = jax.jit(jnp.dot)
    x = jnp.asarray(x_np)
    ready = _ready_fx if framework == "fluxion" else _ready_jax
    return _bench(lambda: ready(f(x, x)), quick)


# --------------------------------------------------------------------------------------------------------------
# 11. scan over 1,000 steps of a small RNN cell, with its gradient
# --------------------------------------------------------------------------------------------------------------

_RNN_H, _RNN_I = 32, 8


def _rnn_data(quick):
    rng = np.random.default_rng(0)
    steps = 20 if quick else 1000
    w = (rng.standard_normal((_RNN_H, _RNN_H)) * 0.3 / np.sqrt(_RNN_H)).astype(np.float32)
    u = (rng.standard_normal((_RNN_H, _RNN_I)) / np.sqrt(_RNN_I)).astype(np.float32)
    b = np.zeros(_RNN_H, np.float32)
    xs = rng.standard_normal((steps, _RNN_I)).astype(np.float32)
    return w, u, b, xs


def _rnn_numpy(w, u, b, xs):
    hs = [np.zeros(_RNN_H, np.float32)]
    for x in xs:
        hs.append(np.tanh(w @ hs[-1] + u @ x + b))
    loss = sum(float(np.sum(h * h)) for h in hs[1:])
    gw, gu, gb = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
    dh = np.zeros(_RNN_H, np.float32)
    for t in range(len(xs), 0, -1):
        dh = dh + 2 * hs[t]
        dz = dh * (1 - hs[t] * hs[t])
        gw += np.outer(dz, hs[t - 1])
        gu += np.outer(dz, xs[t - 1])
        gb += dz
        dh = w.T @ dz
    return loss, (gw, gu, gb)


def rnn_scan_grad(framework: str, quick: bool) -> dict:
    w_np, u_np, b_np, xs_np = _rnn_data(quick)
    if framework == "numpy":
        return _bench(lambda: _rnn_numpy(w_np, u_np, b_np, xs_np), quick, 0.5)
    if framework in ("torch", "torch_compile"):
        torch = _torch()
        params = [torch.from_numpy(a).requires_grad_(True) for a in (w_np, u_np, b_np)]
        xs = torch.from_numpy(xs_np)

        def loss_fn(w, u, b, xs):
            h = torch.zeros(_RNN_H)
            total = 0.0
            for x in xs:
                h = torch.tanh(w @ h + u @ x + b)
                total = total + torch.sum(h * h)
            return total

        fn = torch.compile(loss_fn) if framework == "torch_compile" else loss_fn

        def call():
            loss = fn(*params, xs)
            return torch.autograd.grad(loss, params)
        return _bench(call, quick, 0.5)
    jax, jnp = _fx() if framework == "fluxion" else _jax()
    lax = jax.lax

    def loss_fn(params, xs):
        w, u, b = params

        def cell(h, x):
            h = jnp.tanh(w @ h + u @ x + b)
            return h, jnp.sum(h * h)
        _, losses = lax.scan(cell, jnp.zeros(_RNN_H), xs)
        return jnp.sum(losses)

    f = jax.jit(jax.value_and_grad(loss_fn))
    params = tuple(jnp.asarray(a) for a in (w_np, u_np, b_np))
    xs = jnp.asarray(xs_np)
    ready = _ready_fx if framework == "fluxion" else _ready_jax
    return _bench(lambda: ready(f(params, xs)), quick, 0.5)


# --------------------------------------------------------------------------------------------------------------
# 12. peak memory of the in-place update chain
# --------------------------------------------------------------------------------------------------------------

def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux)
        return True
    except OSError:
        return False


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def update_chain_memory(framework: str, quick: bool) -> dict:
    """Peak bytes live during: build n float32, derive two updated copies with .at[i].set, keep the last one.

    Measured per framework with the tool that sees its allocations: `tracemalloc` for fluxion and NumPy (NumPy
    reports its buffers to it), XLA's compiled memory analysis (arguments + outputs + temporaries) for JAX, whose
    allocator reuses pages so that RSS would not grow, and the growth of peak RSS for PyTorch, whose buffers
    `tracemalloc` does not see.
    """
    import tracemalloc
    n = 1 << 16 if quick else 10_000_000
    info = {"array_bytes": 4 * n}
    if framework == "jax":
        jax, jnp = _jax()
        f = jax.jit(lambda i: jnp.arange(n, dtype=jnp.float32).at[i].set(-1.0).at[i + 1].set(-2.0))
        m = f.lower(3).compile().memory_analysis()
        total = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
        info["method"] = "XLA memory analysis"
        return {"samples": [float(total)], "info": info}
    if framework == "numpy":
        def chain():
            x = np.arange(n, dtype=np.float32) * 2.0
            y = x.copy()
            y[3] = -1.0
            z = y.copy()
            z[4] = -2.0
            return z
        method = "tracemalloc"
    elif framework in ("torch", "torch_compile"):
        torch = _torch()

        def base():
            x = torch.arange(n, dtype=torch.float32) * 2.0
            y = x.index_put((torch.tensor([3]),), torch.tensor(-1.0))
            return y.index_put((torch.tensor([4]),), torch.tensor(-2.0))
        chain = torch.compile(base) if framework == "torch_compile" else base
        method = "peak RSS"
    else:
        jax, jnp = _fx()

        def f(i):
            x = jnp.arange(n, dtype=jnp.float32) * 2.0
            y = x.at[i].set(-1.0)
            return y.at[i + 1].set(-2.0)
        g = jax.jit(f)

        def chain():
            return _ready_fx(g(3))
        method = "tracemalloc"
    timing.settle(chain, quick, min_calls=1)  # compile, settle tiered code and touch every page once
    samples = []
    for _ in range(3):
        if method == "tracemalloc":
            tracemalloc.start()
            out = chain()
            samples.append(float(tracemalloc.get_traced_memory()[1]))
            tracemalloc.stop()
        else:
            if not _reset_peak_rss():
                raise ModuleNotFoundError("peak RSS cannot be reset on this system")
            base_kb = _rss_kb("VmRSS")
            out = chain()
            samples.append(float(max(_rss_kb("VmHWM") - base_kb, 0) * 1024))
        del out
    info["method"] = method
    return {"samples": samples, "info": info}


# --------------------------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------------------------

class Workload:
    """One row of the table: its label, unit, the frameworks that run it, and how the runner runs it.

    `processes`: child processes per framework (their samples are pooled); `cold_cache`: each process gets an empty
    fluxion kernel cache (first-call and time-to-steady rows); `scaling`: (step name, batch multiplier) for the
    batch-scaling table.
    """

    def __init__(self, key: str, title: str, fn: Callable, frameworks: tuple, unit: str, scale: float,
                 processes: int = 1, cold_cache: bool = False, scaling: tuple | None = None):
        self.key, self.title, self.fn, self.frameworks = key, title, fn, frameworks
        self.unit, self.scale, self.processes, self.cold_cache = unit, scale, processes, cold_cache
        self.scaling = scaling


# --------------------------------------------------------------------------------------------------------------
# 13. PPO update (fluxion/examples/ppo_cartpole.py): the same program on fluxion and on real JAX + Haiku + Optax +
#     RLax
# --------------------------------------------------------------------------------------------------------------

# The example's imports and what they become on the real libraries; everything else in the file is unchanged.
_PPO_IMPORTS = {
    "import fluxion\n": "import jax as fluxion\n",
    "import fluxion.haiku as hk\n": "import haiku as hk\n",
    "import fluxion.numpy as jnp\n": "import jax.numpy as jnp\n",
    "from fluxion import optax, random, rlax\n": "import optax, rlax\nfrom jax import random\n",
}


def _ppo_module(framework: str):
    import fluxion.examples.ppo_cartpole as ppo
    if framework == "fluxion":
        return ppo
    import types
    source = open(ppo.__file__).read()
    for ours, theirs in _PPO_IMPORTS.items():
        if ours not in source:
            raise RuntimeError(f"ppo_cartpole.py no longer has the import {ours.strip()!r}; update _PPO_IMPORTS")
        source = source.replace(ours, theirs)
    module = types.ModuleType("ppo_cartpole_on_jax")
    module.__dict__["__name__"] = "ppo_cartpole_on_jax"
    import sys
    sys.modules[module.__name__] = module  # dataclasses resolve their module by name
    exec(compile(source, ppo.__file__, "exec"), module.__dict__)  # noqa: S102 -- our own example file
    return module


def ppo_update(framework: str, quick: bool) -> dict:
    """One PPO update as the example runs it: 4 epochs x 4 minibatches of the jitted update step on a 1,024-step
    rollout (8 environments x 128 steps), Adam with gradient clipping and a linear schedule."""
    if framework == "jax":
        _jax()
    ppo = _ppo_module(framework)
    cfg = ppo.Config(rollout_steps=16 if quick else 128)
    network = ppo.make_network(cfg.hidden_units)
    optimizer = ppo.make_optimizer(cfg, 100)
    _, _, _, _, update = ppo._build(cfg, network, optimizer)
    rng = np.random.default_rng(0)
    n = cfg.num_envs * cfg.rollout_steps
    mb = n // cfg.minibatches
    params = network.init(ppo.random.PRNGKey(0), np.zeros((1, ppo.OBS_SIZE), np.float32))
    opt_state = optimizer.init(params)
    batch = (rng.standard_normal((n, ppo.OBS_SIZE)).astype(np.float32), rng.integers(0, 2, n).astype(np.int32),
             np.log(np.full(n, 0.5, np.float32)), rng.standard_normal(n).astype(np.float32),
             rng.standard_normal(n).astype(np.float32))
    minibatches = [tuple(ppo.jnp.asarray(x[i * mb:(i + 1) * mb]) for x in batch) for i in range(cfg.minibatches)]
    ready = _ready_fx if framework == "fluxion" else _ready_jax
    state = [params, opt_state]

    def one_update():
        p, o = state
        for _ in range(cfg.epochs):
            for b in minibatches:
                p, o, loss, _ = update(p, o, *b)
        ready(loss)
        state[0], state[1] = p, o

    return _bench(one_update, quick)


JIT_PEERS = ("fluxion", "jax", "torch", "torch_compile", "numpy")
EAGER_PEERS = ("fluxion_eager", "jax_eager", "torch", "numpy")
STEP_PEERS = ("fluxion", "jax", "torch", "torch_compile")
SCALING_PEERS = ("fluxion", "jax")


def _step_rows(key: str, title: str, fn: Callable, peers: tuple, slow: bool) -> list:
    """The x1 row of a training step (all peers) and its x4 and x16 batch-scaling rows (fluxion and JAX; slow
    steps take 5 samples at x4 and 3 at x16)."""
    rows = [Workload(key, f"{title}, batch x1", partial(fn, scale=1), peers, "ms", 1e3, scaling=(key, 1))]
    for mult in (4, 16):
        repeat = {4: 5, 16: 3}[mult] if slow else timing.REPEAT
        rows.append(Workload(f"{key}_x{mult}", f"{title}, batch x{mult}", partial(fn, scale=mult, repeat=repeat),
                             SCALING_PEERS, "ms", 1e3, scaling=(key, mult)))
    return rows


def _mnist(model_name: str, batch: int):
    def fn(framework, quick, scale=1, repeat=timing.REPEAT):
        return training.mnist_step(framework, quick, model_name, batch * scale, repeat)
    return fn


WORKLOADS = [
    Workload("eager_add", "1. eager `x + y`, 1,000 float32", eager_add, ("fluxion", "jax", "torch", "numpy"),
             "us", 1e6),
    Workload("jit_call", "2. jitted `a*b + c`, three small arrays", jit_call, JIT_PEERS, "us", 1e6),
    Workload("selu_jit", "3. `selu`, 1e6 float32, jit", selu_jit, JIT_PEERS, "ms", 1e3),
    Workload("selu_eager", "3. `selu`, 1e6 float32, eager", selu_eager, EAGER_PEERS, "ms", 1e3),
    Workload("standardize_jit", "4. `(X - X.mean(0)) / X.std(0)`, 10000x100, jit", standardize_jit, JIT_PEERS,
             "ms", 1e3),
    Workload("standardize_eager", "4. `(X - X.mean(0)) / X.std(0)`, 10000x100, eager", standardize_eager,
             EAGER_PEERS, "ms", 1e3),
    Workload("standardize_steady", "4. standardize, jit: time to steady state (cold cache)",
             standardize_time_to_steady, ("fluxion", "jax"), "s", 1.0, processes=2, cold_cache=True),
    Workload("linreg", "5. linear regression, N=1e6, 1,000 jitted steps", linreg, JIT_PEERS, "s", 1.0),
    *_step_rows("mnist_mlp", "6. MNIST MLP train step (batch 32, Adam)", _mnist("mlp", 32), JIT_PEERS, False),
    Workload("mnist_mlp_1024", "6. MNIST MLP train step, batch 1024, Adam", _mnist("mlp", 1024), JIT_PEERS,
             "ms", 1e3),
    Workload("mnist_mlp_first_call", "6. MNIST MLP step, first call (trace + compile)", mnist_mlp_first_call,
             ("fluxion", "jax", "torch_compile"), "s", 1.0, processes=3, cold_cache=True),
    Workload("mnist_mlp_steady", "6. MNIST MLP step: time to steady state (cold cache)",
             training.mlp_time_to_steady, ("fluxion", "jax"), "s", 1.0, processes=2, cold_cache=True),
    *_step_rows("mnist_cnn", "7. MNIST CNN train step (batch 128, SGD momentum)", _mnist("cnn", 128), STEP_PEERS,
                True),
    Workload("one_hot", "8. `vmap`ed one-hot, 60,000 labels", one_hot, JIT_PEERS, "ms", 1e3),
    Workload("eager_grad", "9. eager `grad` call, 100 float32", eager_grad, ("fluxion", "jax", "torch"), "us", 1e6),
    Workload("third_derivative", "9. eager third derivative", eager_third_derivative, ("fluxion", "jax", "torch"),
             "us", 1e6),
    Workload("dot", "10. `dot(x, x)`, 1e7 float32", dot_1e7, JIT_PEERS, "ms", 1e3),
    Workload("rnn_scan", "11. RNN `scan`, 1,000 steps, value and gradient", rnn_scan_grad, JIT_PEERS, "ms", 1e3),
    Workload("update_chain_memory", "12. peak live memory, `.at[].set` chain on 1e7 float32 (40 MB)",
             update_chain_memory, ("fluxion", "jax", "torch", "torch_compile", "numpy"), "MB", 1e-6),
    Workload("ppo_update", "13. PPO update (16 jitted minibatch steps), the CartPole example's program",
             ppo_update, ("fluxion", "jax"), "ms", 1e3),
    Workload("lstm_grad", "14. LSTM `value_and_grad` through `scan` (hidden 128, 100 steps, batch 16, input 32)",
             training.lstm_grad, STEP_PEERS, "ms", 1e3),
    *_step_rows("transformer", "15. transformer block train step (batch 32 x 128 tokens, width 256, AdamW)",
                training.transformer_step, STEP_PEERS, True),
    *_step_rows("resnet", "16. ResNet-style basic blocks train step (batch 16, 3x32x32, 32 channels, SGD momentum)",
                training.resnet_step, STEP_PEERS, True),
]

BY_KEY = {w.key: w for w in WORKLOADS}


def run_in_this_process(key: str, framework: str, quick: bool) -> dict:
    """Entry point of a child process: runs one (workload, framework)."""
    return BY_KEY[key].fn(framework, quick)


def run_many(keys: list, framework: str, quick: bool) -> dict:
    """Entry point of a child process that runs several workloads (the quick run): key -> result, or
    {"missing": why} when a library is not installed, or {"error": message} when the workload raised."""
    out = {}
    for key in keys:
        t0 = time.perf_counter()
        try:
            out[key] = run_in_this_process(key, framework, quick)
            out[key]["wall_s"] = round(time.perf_counter() - t0, 2)
        except ModuleNotFoundError as e:
            out[key] = {"missing": str(e)}
        except Exception as e:  # noqa: BLE001 -- reported in the table, the other workloads still run
            out[key] = {"error": f"{type(e).__name__}: {e}"[:300]}
    return out
