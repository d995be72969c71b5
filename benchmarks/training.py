"""Training-step workloads: MNIST MLP and CNN, a transformer block, ResNet-style basic blocks, and an LSTM gradient.

fluxion and JAX run the same program (the same Flax modules and Optax optimizers, imported from fluxion or from the
real libraries). Their parameters are drawn with NumPy from the shapes the model's `init` returns (`_redraw`), so
both start from the same numbers whatever their initializers do, and each workload reports the loss of its first two
steps in `info` (`loss@1` before any update, `loss@2` after one): the runner compares fluxion's with JAX's, so a
wrong result cannot hide behind a timing. PyTorch runs the same architectures with its own initialization (its
losses are not compared).

Each workload takes a batch multiplier (`x1`, `x4`, `x16` rows show how a step scales with the batch) and the number
of timing samples (fewer for the slow large-batch rows).
"""

from __future__ import annotations

import types
from typing import Callable

import numpy as np

from . import timing
from .threads import configure_torch

# --------------------------------------------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------------------------------------------


def _libs(framework: str) -> types.SimpleNamespace:
    """The JAX-like stack of `framework` ("fluxion" or "jax") under the same names."""
    if framework == "fluxion":
        import fluxion as jax
        import fluxion.flax.linen as nn
        import fluxion.numpy as jnp
        from fluxion import optax
        from fluxion.flax.training.train_state import TrainState
        ready = lambda x: x.block_until_ready() if hasattr(x, "block_until_ready") else x  # noqa: E731
    elif framework == "jax":
        import flax.linen as nn
        import jax
        import jax.numpy as jnp
        import optax
        from flax.training.train_state import TrainState
        jax.config.update("jax_platforms", "cpu")
        ready = jax.block_until_ready
    else:
        raise KeyError(framework)
    return types.SimpleNamespace(jax=jax, nn=nn, jnp=jnp, optax=optax, TrainState=TrainState, ready=ready)


def _torch():
    import torch
    configure_torch(torch)
    return torch


def _redraw(L, tree, seed: int = 0):
    """`tree` with every non-constant leaf replaced by NumPy normals scaled by 1/sqrt(fan_in) (same in both stacks).

    Constant leaves (zero biases, unit scales, batch statistics) are kept: they are the same in both stacks.
    """
    leaves, treedef = L.jax.tree_util.tree_flatten(tree)
    out = []
    for i, leaf in enumerate(leaves):
        a = np.asarray(leaf)
        if a.size == 0 or np.all(a == a.flat[0]):
            out.append(L.jnp.asarray(a))
            continue
        fan_in = int(np.prod(a.shape[:-1])) if a.ndim > 1 else a.shape[0]
        rng = np.random.default_rng(seed * 1000 + i)
        out.append(L.jnp.asarray((rng.standard_normal(a.shape) / np.sqrt(fan_in)).astype(a.dtype)))
    return L.jax.tree_util.tree_unflatten(treedef, out)


def _run_steps(step, state, batch, ready, quick: bool, repeat: int) -> dict:
    """Two checked steps (their losses go to `info`), then the settled timing of further steps."""
    losses = []
    for _ in range(2):
        state, loss = step(state, *batch)
        losses.append(float(ready(loss)))
    box = [state]

    def run():
        box[0], loss = step(box[0], *batch)
        ready(loss)
    out = timing.bench(run, quick, 0.5, repeat=repeat, min_calls=1)
    out["info"].update({"loss@1": round(losses[0], 6), "loss@2": round(losses[1], 6)})
    return out


def _train_state_step(L, model, params, tx, loss_of_logits):
    """(jitted step, TrainState); step(state, x, y) -> (state, loss), the loss taken before the update."""
    state = L.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

    @L.jax.jit
    def step(state, x, y):
        def loss_fn(p):
            return loss_of_logits(state.apply_fn(p, x), y)
        loss, grads = L.jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss
    return step, state


def _torch_train_step(framework: str, opt, loss_fn: Callable):
    """A PyTorch training step `step(*batch) -> loss` (backward, then `opt.step()`), compiled for torch.compile."""
    def step(*batch):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(*batch)
        loss.backward()
        opt.step()
        return loss
    if framework == "torch":
        return step
    import torch
    return torch.compile(step)


def _sized_step(framework: str, quick: bool, scale: int, repeat: int, sizes: Callable, torch_step: Callable,
                jaxlike_step: Callable) -> dict:
    """Times a training step whose sizes come from `sizes(quick)`, with the batch multiplied by `scale`."""
    s = sizes(quick)
    s["batch"] *= scale
    if framework in ("torch", "torch_compile"):
        step, batch = torch_step(framework, s)
        return _torch_bench(step, batch, quick, repeat)
    step, state, batch, ready = jaxlike_step(framework, s)
    return _run_steps(step, state, batch, ready, quick, repeat)


def _torch_bench(step, batch, quick: bool, repeat: int) -> dict:
    return timing.bench(lambda: step(*batch), quick, 0.5, repeat=repeat, min_calls=1)


# --------------------------------------------------------------------------------------------------------------
# MNIST MLP (Adam) and CNN (SGD with momentum)
# --------------------------------------------------------------------------------------------------------------

def mnist_batch(batch: int):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (batch, 28, 28)).astype(np.uint8)
    labels = rng.integers(0, 10, batch)
    y = np.eye(10, dtype=np.float32)[labels]
    return x, y


def _mnist_models(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x.reshape(x.shape[0], -1) / 255.
            x = nn.relu(nn.Dense(128)(x))
            x = nn.relu(nn.Dense(128)(x))
            return nn.Dense(10)(x)

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x.reshape(x.shape[0], 28, 28, 1) / 255.
            x = nn.relu(nn.Conv(32, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = nn.relu(nn.Conv(64, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = x.reshape(x.shape[0], -1)
            x = nn.relu(nn.Dense(256)(x))
            return nn.Dense(10)(x)
    return {"mlp": MLP, "cnn": CNN}


def mnist_optimizer(optax, model_name: str):
    """Adam for the MLP, SGD with momentum for the CNN (as the issue's table names them)."""
    return optax.adam(1e-3) if model_name == "mlp" else optax.sgd(0.01, momentum=0.9)


def mnist_jaxlike_step(framework: str, model_name: str, batch: int):
    """(step, state, x, y, ready) for fluxion or JAX+Flax+Optax; step(state, x, y) -> (state, loss)."""
    L = _libs(framework)
    model = _mnist_models(L.nn)[model_name]()
    x, y = mnist_batch(batch)
    x, y = L.jnp.asarray(x), L.jnp.asarray(y)
    params = _redraw(L, model.init(L.jax.random.PRNGKey(0), x[:1]))

    def loss_of_logits(logits, y):
        return L.jnp.mean(-L.jnp.sum(y * L.jax.nn.log_softmax(logits, axis=-1), axis=-1))
    step, state = _train_state_step(L, model, params, mnist_optimizer(L.optax, model_name), loss_of_logits)
    return step, state, x, y, L.ready


def _torch_mnist_model(torch, model_name):
    nn = torch.nn
    if model_name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Unflatten(1, (1, 28)), nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 7 * 7, 256), nn.ReLU(), nn.Linear(256, 10))


def mnist_torch_step(framework: str, model_name: str, batch: int):
    torch = _torch()
    model = _torch_mnist_model(torch, model_name)
    if model_name == "mlp":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x_np, y_np = mnist_batch(batch)
    x = torch.from_numpy(x_np.astype(np.float32) / 255.0)
    y = torch.from_numpy(y_np)

    def loss_fn(x, y):
        return torch.mean(-torch.sum(y * torch.log_softmax(model(x), dim=-1), dim=-1))
    return _torch_train_step(framework, opt, loss_fn), x, y


class NumpyMLP:
    """The MLP with a hand-written backward pass and Adam (the NumPy peer)."""

    def __init__(self, batch: int):
        rng = np.random.default_rng(0)
        self.params = []
        for fan_in, fan_out in [(784, 128), (128, 128), (128, 10)]:
            self.params += [(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
                            np.zeros(fan_out, np.float32)]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0
        x, self.y = mnist_batch(batch)
        self.x = x.reshape(batch, -1).astype(np.float32) / 255.0

    def step(self):
        w1, b1, w2, b2, w3, b3 = self.params
        x, y = self.x, self.y
        h1 = np.maximum(x @ w1 + b1, 0)
        h2 = np.maximum(h1 @ w2 + b2, 0)
        logits = h2 @ w3 + b3
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        loss = np.mean(-np.sum(y * logp, -1))
        n = x.shape[0]
        d = (np.exp(logp) - y) / n
        g3, gb3 = h2.T @ d, d.sum(0)
        d2 = (d @ w3.T) * (h2 > 0)
        g2, gb2 = h1.T @ d2, d2.sum(0)
        d1 = (d2 @ w2.T) * (h1 > 0)
        g1, gb1 = x.T @ d1, d1.sum(0)
        self.t += 1
        lr, b1_, b2_, eps = 1e-3, 0.9, 0.999, 1e-8
        for i, g in enumerate((g1, gb1, g2, gb2, g3, gb3)):
            self.m[i] = b1_ * self.m[i] + (1 - b1_) * g
            self.v[i] = b2_ * self.v[i] + (1 - b2_) * g * g
            mh = self.m[i] / (1 - b1_ ** self.t)
            vh = self.v[i] / (1 - b2_ ** self.t)
            self.params[i] = self.params[i] - lr * mh / (np.sqrt(vh) + eps)
        return loss


def mnist_step(framework: str, quick: bool, model_name: str, batch: int, repeat: int = timing.REPEAT) -> dict:
    if quick:
        batch = max(2, batch // 16)
    if framework == "numpy":
        if model_name != "mlp":
            raise ModuleNotFoundError("no hand-written NumPy CNN")  # reported as not available
        return timing.bench(NumpyMLP(batch).step, quick, 0.5, repeat=repeat)
    if framework in ("torch", "torch_compile"):
        step, x, y = mnist_torch_step(framework, model_name, batch)
        return _torch_bench(step, (x, y), quick, repeat)
    step, state, x, y, ready = mnist_jaxlike_step(framework, model_name, batch)
    return _run_steps(step, state, (x, y), ready, quick, repeat)


# --------------------------------------------------------------------------------------------------------------
# Transformer block: embedding, pre-LayerNorm causal self-attention and gelu MLP, next-token cross-entropy, AdamW
# --------------------------------------------------------------------------------------------------------------

def transformer_sizes(quick: bool) -> dict:
    if quick:
        return {"vocab": 32, "width": 16, "heads": 4, "seq": 8, "batch": 2}
    return {"vocab": 256, "width": 256, "heads": 4, "seq": 128, "batch": 32}


def transformer_tokens(batch: int, seq: int, vocab: int) -> np.ndarray:
    """`batch` rows of `seq + 1` tokens: inputs are the first `seq`, targets the last `seq`."""
    return np.random.default_rng(0).integers(0, vocab, (batch, seq + 1)).astype(np.int32)


def _transformer_model(nn, s):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            x = nn.Embed(s["vocab"], s["width"])(tokens)
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=s["heads"])(h, mask=nn.make_causal_mask(tokens))
            h = nn.LayerNorm()(x)
            x = x + nn.Dense(s["width"])(nn.gelu(nn.Dense(4 * s["width"])(h)))
            return nn.Dense(s["vocab"])(nn.LayerNorm()(x))
    return Block()


def transformer_jaxlike_step(framework: str, s: dict):
    L = _libs(framework)
    model = _transformer_model(L.nn, s)
    tokens = L.jnp.asarray(transformer_tokens(s["batch"], s["seq"], s["vocab"]))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    params = _redraw(L, model.init(L.jax.random.PRNGKey(0), inputs[:1]))

    def loss_of_logits(logits, targets):
        return L.optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()
    step, state = _train_state_step(L, model, params, L.optax.adamw(1e-3, weight_decay=1e-4), loss_of_logits)
    return step, state, (inputs, targets), L.ready


def transformer_torch_step(framework: str, s: dict):
    torch = _torch()
    nn = torch.nn
    w = s["width"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(s["vocab"], w)
            self.ln1, self.ln2, self.ln3 = nn.LayerNorm(w), nn.LayerNorm(w), nn.LayerNorm(w)
            self.attn = nn.MultiheadAttention(w, s["heads"], batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(w, 4 * w), nn.GELU(approximate="tanh"), nn.Linear(4 * w, w))
            self.head = nn.Linear(w, s["vocab"])

        def forward(self, tokens):
            x = self.embed(tokens)
            n = tokens.shape[1]
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True = masked out
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
            x = x + self.mlp(self.ln2(x))
            return self.head(self.ln3(x))

    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    tokens = torch.from_numpy(transformer_tokens(s["batch"], s["seq"], s["vocab"]).astype(np.int64))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def loss_fn(inputs, targets):
        logits = model(inputs)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, s["vocab"]), targets.reshape(-1))
    return _torch_train_step(framework, opt, loss_fn), (inputs, targets)


def transformer_step(framework: str, quick: bool, scale: int = 1, repeat: int = timing.REPEAT) -> dict:
    return _sized_step(framework, quick, scale, repeat, transformer_sizes, transformer_torch_step,
                       transformer_jaxlike_step)


# --------------------------------------------------------------------------------------------------------------
# ResNet-18-style basic blocks on 32x32 images: stem conv, two basic blocks with BatchNorm in training mode, global
# average pool, dense; SGD with momentum
# --------------------------------------------------------------------------------------------------------------

def resnet_sizes(quick: bool) -> dict:
    if quick:
        return {"image": 8, "width": 8, "batch": 2}
    return {"image": 32, "width": 32, "batch": 16}


def resnet_batch(batch: int, image: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, image, image, 3)).astype(np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    return x, labels


def _resnet_model(nn, jnp, width: int):
    class BasicBlock(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.Conv(width, (3, 3), use_bias=False)(x)
            y = nn.relu(nn.BatchNorm(use_running_average=False)(y))
            y = nn.Conv(width, (3, 3), use_bias=False)(y)
            y = nn.BatchNorm(use_running_average=False)(y)
            return nn.relu(x + y)

    class ResNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(width, (3, 3), use_bias=False)(x)
            x = nn.relu(nn.BatchNorm(use_running_average=False)(x))
            x = BasicBlock()(BasicBlock()(x))
            return nn.Dense(10)(jnp.mean(x, axis=(1, 2)))
    return ResNet()


def resnet_jaxlike_step(framework: str, s: dict):
    L = _libs(framework)
    model = _resnet_model(L.nn, L.jnp, s["width"])
    x_np, labels_np = resnet_batch(s["batch"], s["image"])
    x, labels = L.jnp.asarray(x_np), L.jnp.asarray(labels_np)
    variables = model.init(L.jax.random.PRNGKey(0), x[:1])
    params, batch_stats = _redraw(L, variables["params"]), variables["batch_stats"]
    tx = L.optax.sgd(0.1, momentum=0.9)

    @L.jax.jit
    def step(state, x, labels):
        params, batch_stats, opt_state = state

        def loss_fn(p):
            logits, updated = model.apply({"params": p, "batch_stats": batch_stats}, x, mutable=["batch_stats"])
            loss = L.optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
            return loss, updated["batch_stats"]
        (loss, batch_stats), grads = L.jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (L.optax.apply_updates(params, updates), batch_stats, opt_state), loss
    return step, (params, batch_stats, tx.init(params)), (x, labels), L.ready


def resnet_torch_step(framework: str, s: dict):
    torch = _torch()
    nn = torch.nn
    w = s["width"]

    def conv_bn(c_in):
        return [nn.Conv2d(c_in, w, 3, padding=1, bias=False), nn.BatchNorm2d(w)]

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(*conv_bn(w), nn.ReLU(), *conv_bn(w))

        def forward(self, x):
            return torch.relu(x + self.body(x))

    model = nn.Sequential(*conv_bn(3), nn.ReLU(), BasicBlock(), BasicBlock(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(w, 10))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x_np, labels_np = resnet_batch(s["batch"], s["image"])
    x = torch.from_numpy(np.ascontiguousarray(x_np.transpose(0, 3, 1, 2)))
    labels = torch.from_numpy(labels_np.astype(np.int64))

    def loss_fn(x, labels):
        return torch.nn.functional.cross_entropy(model(x), labels)
    return _torch_train_step(framework, opt, loss_fn), (x, labels)


def resnet_step(framework: str, quick: bool, scale: int = 1, repeat: int = timing.REPEAT) -> dict:
    return _sized_step(framework, quick, scale, repeat, resnet_sizes, resnet_torch_step, resnet_jaxlike_step)


# --------------------------------------------------------------------------------------------------------------
# LSTM: value_and_grad of a hand-written LSTM cell through lax.scan
# --------------------------------------------------------------------------------------------------------------

def lstm_sizes(quick: bool) -> dict:
    if quick:
        return {"hidden": 8, "steps": 5, "batch": 2, "input": 4}
    return {"hidden": 128, "steps": 100, "batch": 16, "input": 32}


def lstm_data(s: dict):
    """Input-to-gates, hidden-to-gates and bias (gates in the order i, f, g, o) and the input sequence."""
    rng = np.random.default_rng(0)
    h, i = s["hidden"], s["input"]
    wx = (rng.standard_normal((i, 4 * h)) / np.sqrt(i)).astype(np.float32)
    wh = (rng.standard_normal((h, 4 * h)) / np.sqrt(h)).astype(np.float32)
    b = np.zeros(4 * h, np.float32)
    xs = rng.standard_normal((s["steps"], s["batch"], i)).astype(np.float32)
    return (wx, wh, b), xs


def lstm_loss_fn(jax, jnp, hidden: int):
    """loss(params, xs): mean square of every hidden state of an LSTM run over `xs` [steps, batch, input]."""
    def loss(params, xs):
        wx, wh, b = params

        def cell(carry, x):
            h, c = carry
            z = x @ wx + h @ wh + b
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zeros = jnp.zeros((xs.shape[1], hidden), xs.dtype)
        _, hs = jax.lax.scan(cell, (zeros, zeros), xs)
        return jnp.mean(hs * hs)
    return loss


def lstm_grad(framework: str, quick: bool) -> dict:
    s = lstm_sizes(quick)
    params_np, xs_np = lstm_data(s)
    if framework in ("torch", "torch_compile"):
        torch = _torch()
        params = [torch.from_numpy(p).requires_grad_(True) for p in params_np]
        xs = torch.from_numpy(xs_np)

        def loss_fn(wx, wh, b, xs):
            h = c = torch.zeros(xs.shape[1], s["hidden"])
            total = 0.0
            for x in xs:
                i, f, g, o = torch.chunk(x @ wx + h @ wh + b, 4, dim=-1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                total = total + torch.sum(h * h)
            return total / (xs.shape[0] * xs.shape[1] * s["hidden"])
        fn = torch.compile(loss_fn) if framework == "torch_compile" else loss_fn

        def call():
            loss = fn(*params, xs)
            return loss, torch.autograd.grad(loss, params)
        out = timing.bench(call, quick, 0.5)
        out["info"]["loss@1"] = round(float(call()[0]), 6)
        return out
    L = _libs(framework)
    f = L.jax.jit(L.jax.value_and_grad(lstm_loss_fn(L.jax, L.jnp, s["hidden"])))
    params = tuple(L.jnp.asarray(p) for p in params_np)
    xs = L.jnp.asarray(xs_np)
    loss, grads = f(params, xs)
    info = {"loss@1": round(float(loss), 6),
            "grad_norm": round(float(np.sqrt(sum(np.sum(np.asarray(g, np.float64) ** 2) for g in grads))), 6)}
    out = timing.bench(lambda: L.ready(f(params, xs)), quick, 0.5)
    out["info"].update(info)
    return out


# --------------------------------------------------------------------------------------------------------------
# Time to steady state (cold kernel cache): the MLP step
# --------------------------------------------------------------------------------------------------------------

def mlp_time_to_steady(framework: str, quick: bool) -> dict:
    step, state, x, y, ready = mnist_jaxlike_step(framework, "mlp", 2 if quick else 32)
    if framework == "fluxion" and not quick:  # (the quick run shares its process with other workloads)
        import fluxion._src.backends.compiler as compiler
        compiler.wait_for_kernels()  # kernels of `init`, compiled before the clock starts
    box = [state]

    def run():
        box[0], loss = step(box[0], x, y)
        ready(loss)
    return timing.time_to_steady(run, quick)
