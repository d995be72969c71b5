"""The fused (Numba) tier against the NumPy path: regressions for the defects it had, the check mode, and a
differential test on randomly generated programs.

Every comparison runs one closed jaxpr through both tiers of the compiler (`compile_closed(fuse=False)`, the plain
NumPy path, and `fuse=True`) on the same inputs. The property test builds programs from elementwise chains,
reductions, broadcasts, transposed and sliced views over bool, integer and float dtypes, and runs the fused tier in
check mode, where every kernel call is compared with NumPy (`fusion.check`).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.flax.linen as nn
import fluxion.numpy as jnp
from fluxion import config, optax, random
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion, memory
from fluxion._src.backends.compiler.fusion import check
from fluxion.flax.training.train_state import TrainState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of  # noqa: E402

needs_numba = pytest.mark.skipif(not (compiler.enabled() and fusion.available()),
                                 reason="needs the jit compiler and Numba")


def run_tiers(closed, *args):
    """(NumPy-path outputs, fused-tier outputs, fused executable) for one program on `args` (copied per tier, and
    converted to the program's input dtypes as `jit` converts them: float64 becomes float32 without x64)."""
    args = [np.asarray(a).astype(v.aval.dtype) for a, v in zip(args, closed.jaxpr.invars)]
    plain = compiler.compile_closed(closed, fuse=False)
    fused = compiler.compile_closed(closed, fuse=True, sync=True)
    want = [np.asarray(o) for o in plain(*[np.array(a) for a in args])]
    got = [np.asarray(o) for o in fused(*[np.array(a) for a in args])]
    return want, got, fused


@pytest.fixture
def fusion_check_mode():
    with config.override("fluxion_check_fusion", True):
        yield


# -- regressions --------------------------------------------------------------------------------------------------

@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
def test_each_output_of_a_kernel_gets_its_own_buffer(rng):
    # log-softmax cross-entropy: one kernel computes `logits - max` and `exp` of it, both (1024, 10) and both
    # needed later, while `logits` dies there. Both outputs used to adopt the buffer of `logits`, so the shifted
    # logits were overwritten by their exponentials and the loss came out wrong (the MNIST MLP at batch 1024).
    logits = rng.standard_normal((1024, 10)).astype(np.float32) * 3
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 1024)]

    def loss(w, x, y):
        z = x @ w
        return -jnp.mean(jnp.sum(y * fluxion.nn.log_softmax(z, axis=-1), axis=-1)), fluxion.nn.softmax(z)

    closed = closed_of(loss, np.eye(10, dtype=np.float32), logits, labels)
    want, got, fused = run_tiers(closed, np.eye(10, dtype=np.float32), logits, labels)
    assert fused.tier == 1
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-7)


@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
def test_ufunc_results_feeding_kernels_are_c_contiguous():
    # Flax's causal mask compares two broadcasts of one constant index array; NumPy's default 'K' order follows the
    # operands' (zero) strides and returns a Fortran-ordered result. The compiler called it a fresh C-ordered buffer
    # and passed it to a kernel compiled for C arrays: "No matching definition for argument type(s) array(bool, 2d,
    # F)" at a transformer's training step.
    b, h, n = 8, 2, 64
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), (b, n))

    def masked(x):
        mask = jnp.greater_equal(idx[..., None], idx[..., None, :])[:, None]
        return jnp.where(mask, x * 2.0 + 1.0, -1e9)

    x = np.linspace(-2, 2, b * h * n * n, dtype=np.float32).reshape(b, h, n, n)
    closed = closed_of(masked, x)
    want, got, fused = run_tiers(closed, x)
    assert fused.tier == 1
    np.testing.assert_array_equal(got[0], want[0])


@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
@pytest.mark.parametrize("order", ["C", "F"])
def test_every_planned_layout_holds_for_any_argument_layout(order, rng, fusion_check_mode):
    # Check mode asserts at run time that every value planned as a C-contiguous buffer is one; arguments in
    # Fortran order (a transposed NumPy array) must not make any lowering break that promise.
    x = np.asarray(rng.standard_normal((96, 64)), dtype=np.float32, order=order)
    b = np.asarray(rng.standard_normal((96, 64)) > 0, order=order)

    def f(x, b):
        y = jnp.where(b, jnp.exp(x), x.astype(jnp.float64).astype(jnp.float32))
        z = jnp.maximum(y, 0.5) * jnp.clip(x, -1, 1) + jnp.concatenate([x, y], axis=0)[:96]
        return jnp.sum(z * z, axis=0), (z ** 2 - y).T, jnp.max(z, axis=1, keepdims=True) - z

    closed = closed_of(f, x, b)
    want, got, fused = run_tiers(closed, x, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _mlp_step(batch: int, rng):
    """The README's MNIST MLP (Dense 128 - relu - Dense 128 - relu - Dense 10, Adam) on synthetic images."""
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x.reshape(x.shape[0], -1) / 255.
            x = nn.relu(nn.Dense(128)(x))
            x = nn.relu(nn.Dense(128)(x))
            return nn.Dense(10)(x)

    images = rng.integers(0, 256, (batch, 28, 28)).astype(np.uint8)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    model = MLP()
    state = TrainState.create(apply_fn=model.apply, params=model.init(random.PRNGKey(0), images[:1]),
                              tx=optax.adam(1e-3))

    def step(state, x, y):
        def loss_fn(p):
            logits = state.apply_fn(p, x)
            return jnp.mean(-jnp.sum(y * fluxion.nn.log_softmax(logits, axis=-1), axis=-1))
        loss, grads = fluxion.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    return step, (state, images, onehot)


@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
def test_mnist_mlp_at_batch_1024_has_the_numpy_loss_and_update(rng):
    step, args = _mlp_step(1024, rng)
    leaves = fluxion.tree_util.tree_leaves(args)
    closed = fluxion.make_jaxpr(lambda *xs: step(*fluxion.tree_util.tree_unflatten(
        fluxion.tree_util.tree_structure(args), xs)))(*leaves)
    want, got, fused = run_tiers(closed, *[np.asarray(x) for x in leaves])
    assert fused.tier == 1
    assert abs(float(got[-1]) - float(want[-1])) < 1e-5 * abs(float(want[-1])), (got[-1], want[-1])
    # Parameters move by lr * m / (sqrt(v) + eps): for gradients near zero that ratio amplifies last-bit
    # differences up to the learning rate, so parameters get an absolute tolerance well below it (1e-3); the
    # moments and the loss are compared relative to their scale.
    for g, w in zip(got, want):
        scale = float(np.max(np.abs(w), initial=0.0))
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=max(1e-4 * scale, 1e-7) if scale < 1e-2 else 1e-4)


class _Block(nn.Module):
    """A pre-LayerNorm transformer block with a causal mask and a gelu MLP, and a token embedding and readout."""
    vocab: int
    dim: int
    heads: int

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(self.vocab, self.dim)(tokens)
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h, mask=nn.make_causal_mask(tokens))
        h = nn.Dense(self.dim)(nn.gelu(nn.Dense(4 * self.dim)(nn.LayerNorm()(x))))
        return nn.Dense(self.vocab)(nn.LayerNorm()(x + h))


@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
def test_transformer_training_steps_match_the_numpy_path(rng):
    vocab, batch, length = 17, 32, 128
    data = rng.integers(0, vocab, (batch, length + 1)).astype(np.int32)
    model = _Block(vocab, 32, 2)
    params = model.init(random.PRNGKey(0), data[:, :-1])

    def run(fuse: bool) -> list:
        state = TrainState.create(apply_fn=model.apply, params=params, tx=optax.adamw(1e-3))

        def step(state, x, y):
            def loss_fn(p):
                logits = state.apply_fn(p, x)
                return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            loss, grads = fluxion.value_and_grad(loss_fn)(state.params)
            return state.apply_gradients(grads=grads), loss

        closed = fluxion.make_jaxpr(step)(state, data[:, :-1], data[:, 1:])
        exe = compiler.compile_closed(closed, fuse=fuse, sync=True)
        assert exe.tier == int(fuse)
        tree = fluxion.tree_util.tree_structure(state)
        losses = []
        for _ in range(3):  # the crash came at the second step, on arguments computed by the first
            outs = exe(*[np.asarray(x) for x in fluxion.tree_util.tree_leaves((state, data[:, :-1], data[:, 1:]))])
            state = fluxion.tree_util.tree_unflatten(tree, [fluxion.numpy.asarray(o) for o in outs[:-1]])
            losses.append(float(outs[-1]))
        return losses

    np.testing.assert_allclose(run(True), run(False), rtol=1e-4)


# -- check mode ---------------------------------------------------------------------------------------------------

@needs_numba
def test_check_mode_reports_a_kernel_that_disagrees_with_numpy(fusion_check_mode, monkeypatch):
    # A deliberately wrong scalar form (exp computed as exp(x) + 1e-3 * exp(x)) must be caught on the first call,
    # with the kernel's equations in the message.
    from fluxion._src.backends.compiler.fusion import scalar
    from fluxion._src.lax.elementwise import exp_p
    wrong = dict(scalar.TEMPLATES)
    wrong[exp_p] = lambda a, in_dts, out_dt, params: \
        f"({'_expf' if out_dt == np.float32 else 'math.exp'}({a[0]}) * 1.001)"
    monkeypatch.setattr(scalar, "TEMPLATES", wrong)
    f = fluxion.jit(lambda x: jnp.exp(x) * 2.0 + 1.0)
    with pytest.raises(check.FusionMismatchError, match=r"differ from NumPy(.|\n)*exp"):
        f(np.linspace(-3, 3, 64, dtype=np.float32))


@needs_numba
def test_check_mode_reports_outputs_sharing_a_buffer(fusion_check_mode, monkeypatch):
    # The defect fixed above, re-created: let the planner hand out the same buffer twice.
    def take_twice(self, shape, dtype, i, operands):
        for o in operands:
            if getattr(o, "aval", None) is not None and o.aval.shape == shape and o.aval.dtype == dtype \
                    and self.inplace_ok(o, i):
                return o
        return None
    monkeypatch.setattr(memory.Planner, "take_buffer", take_twice)
    monkeypatch.setattr(memory, "MIN_PLANNED_ELEMENTS", 1)

    def f(x):
        # A donated argument, dying in the kernel below (kernels overwrite no computed operand, see `KernelNode`).
        s = x - jnp.max(x, axis=-1, keepdims=True)
        return s, jnp.exp(s)

    with pytest.raises(check.FusionMismatchError, match="share memory"):
        fluxion.jit(f, donate_argnums=0)(np.arange(60, dtype=np.float32).reshape(6, 10))


@needs_numba
def test_check_mode_reports_a_broken_layout_promise(fusion_check_mode, monkeypatch):
    from fluxion._src.backends.compiler import lowering
    monkeypatch.setattr(lowering, "c_order_needed", lambda g, eqn: False)
    f = fluxion.jit(lambda x: x + 1.0)  # a single addition: a NumPy ufunc, not a kernel
    with pytest.raises(memory.LayoutError, match="C-contiguous"):
        f(np.ones((40, 30), np.float32).T)


# -- random programs ----------------------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

DTYPES = ["float32", "float64", "int32", "int8", "uint8", "bool"]
EXACT_UNARY = ["neg", "abs", "square", "floor", "sign"]
INEXACT_UNARY = ["exp", "tanh", "log1p_abs", "sqrt_abs", "sin", "logistic"]
BINARY = ["add", "sub", "mul", "max", "min", "div", "and", "or", "xor", "lt", "eq", "ge"]
REDUCE = ["sum", "max", "min"]


def _cast(x, dtype):
    return x.astype(dtype) if x.dtype != np.dtype(dtype) else x


def _unary(op, x):
    if x.dtype == np.bool_:
        return jnp.logical_not(x)
    if op in INEXACT_UNARY or op == "floor":
        x = _cast(x, jnp.float32) if x.dtype.kind != "f" else x
    if op == "neg":
        return -x if x.dtype.kind != "u" else x + 1
    if op == "abs":
        return jnp.abs(x) if x.dtype.kind != "u" else x
    if op == "square":
        return x * x
    if op == "sign":
        return jnp.sign(x) if x.dtype.kind != "u" else x
    return {"floor": jnp.floor, "exp": jnp.exp, "tanh": jnp.tanh, "sin": jnp.sin,
            "logistic": fluxion.nn.sigmoid, "log1p_abs": lambda v: jnp.log1p(jnp.abs(v)),
            "sqrt_abs": lambda v: jnp.sqrt(jnp.abs(v))}[op](x)


def _binary(op, x, y):
    y = _cast(y, x.dtype)
    if op in ("and", "or", "xor"):
        if x.dtype.kind == "f":
            x, y = x > 0, y > 0
        return {"and": jnp.bitwise_and, "or": jnp.bitwise_or, "xor": jnp.bitwise_xor}[op](x, y)
    if x.dtype == np.bool_ and op in ("add", "sub", "mul", "div"):
        x, y = _cast(x, jnp.int32), _cast(y, jnp.int32)
    if op == "div":
        x, y = (_cast(x, jnp.float32), _cast(y, jnp.float32)) if x.dtype.kind != "f" else (x, y)
        return x / y
    return {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "max": jnp.maximum, "min": jnp.minimum,
            "lt": jnp.less, "eq": jnp.equal, "ge": jnp.greater_equal}[op](x, y)


@st.composite
def programs(draw):
    """(input specs, instructions): inputs of one domain shape, some read through transposes and slices."""
    n, m = draw(st.sampled_from([(8, 8), (16, 16), (12, 12)]))
    k = draw(st.sampled_from([1, 3]))  # a third axis, or none
    shape = (n, m) if k == 1 else (n, m, k)
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        view = draw(st.sampled_from(["plain", "transposed", "sliced", "column"]))
        inputs.append((draw(st.sampled_from(DTYPES)), view))
    steps = []
    for _ in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "select", "cast", "reduce", "broadcast"]))
        a = draw(st.integers(0, 100))
        b = draw(st.integers(0, 100))
        c = draw(st.integers(0, 100))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(EXACT_UNARY + INEXACT_UNARY)), a))
        elif kind == "binary":
            steps.append(("binary", draw(st.sampled_from(BINARY)), a, b))
        elif kind == "select":
            steps.append(("select", a, b, c))
        elif kind == "cast":
            steps.append(("cast", draw(st.sampled_from(DTYPES)), a))
        elif kind == "reduce":
            steps.append(("reduce", draw(st.sampled_from(REDUCE)), draw(st.sampled_from([0, 1, -1, None])), a))
        else:
            steps.append(("broadcast", a))
    outputs = draw(st.integers(1, 3))
    return shape, inputs, steps, outputs


def _input_value(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        x = rng.standard_normal(shape) * 3
        specials = rng.random(shape)
        x[specials < 0.03] = np.nan
        x[(specials >= 0.03) & (specials < 0.05)] = np.inf
        x[(specials >= 0.05) & (specials < 0.07)] = -0.0
        return x.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype)


def _materialize(shape, inputs, rng):
    """NumPy arguments and, per input, a function turning the traced argument into a value of the domain shape."""
    args, views = [], []
    for dtype, view in inputs:
        if view == "transposed":  # stored transposed: the program reads it through a transpose
            args.append(_input_value(rng, dtype, shape[::-1]))
            views.append(lambda x: x.T)
        elif view == "sliced":  # a strided slice of a larger array
            args.append(_input_value(rng, dtype, (2 * shape[0] + 1,) + shape[1:]))
            views.append(lambda x: x[1::2])
        elif view == "column":  # broadcast along the last axis
            args.append(_input_value(rng, dtype, shape[:-1] + (1,)))
            views.append(lambda x: jnp.broadcast_to(x, shape))
        else:
            args.append(_input_value(rng, dtype, shape))
            views.append(lambda x: x)
    return args, views


def _build(shape, steps, views, outputs):
    def fun(*xs):
        pool = [v(x) for v, x in zip(views, xs)]
        extra = []
        for s in steps:
            pick = lambda i: pool[i % len(pool)]  # noqa: E731
            if s[0] == "unary":
                pool.append(_unary(s[1], pick(s[2])))
            elif s[0] == "binary":
                pool.append(_binary(s[1], pick(s[2]), pick(s[3])))
            elif s[0] == "select":
                pred = pick(s[1])
                pred = pred if pred.dtype == np.bool_ else pred > 0
                x = pick(s[2])
                pool.append(jnp.where(pred, x, _cast(pick(s[3]), x.dtype)))
            elif s[0] == "cast":
                pool.append(_cast(pick(s[2]), s[1]))
            elif s[0] == "reduce":
                x = pick(s[3])
                if x.dtype == np.bool_:
                    x = _cast(x, jnp.int32)
                fn = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min}[s[1]]
                r = fn(x, axis=s[2], keepdims=True)
                extra.append(r)
                pool.append(jnp.broadcast_to(r, shape) + _cast(x, r.dtype) * 0)  # back to the domain shape
            else:
                x = pick(s[1])
                pool.append(jnp.broadcast_to(x[..., :1], shape) if x.ndim else x)
        return tuple(pool[-outputs:]) + tuple(extra[-1:])
    return fun


@needs_numba
@pytest.mark.usefixtures("fusion_check_mode")
@hypothesis.settings(deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow, hypothesis.HealthCheck.data_too_large])
@hypothesis.given(programs(), st.integers(0, 2 ** 32 - 1))
def test_random_programs_fused_tier_matches_numpy(program, seed):
    shape, inputs, steps, outputs = program
    rng = np.random.default_rng(seed)
    args, views = _materialize(shape, inputs, rng)
    fun = _build(shape, steps, views, outputs)
    closed = closed_of(fun, *args)
    # In check mode every kernel call below is compared with NumPy (FusionMismatchError), and every planned layout
    # is asserted (LayoutError).
    want, got, fused = run_tiers(closed, *args)
    exact = all(check.groups.exact(e) for e in closed.jaxpr.eqns if e.primitive.name != "reduce_sum"
                ) and not any(e.primitive.name == "reduce_sum" and e.invars[0].aval.dtype.kind == "f"
                              for e in closed.jaxpr.eqns)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact:  # only exactly rounded operations: the tiers agree bit for bit
            np.testing.assert_array_equal(g, w)


@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
def test_fused_maximum_and_minimum_order_signed_zeros_as_xla():
    # IEEE 754-2019 maximum/minimum, as XLA computes them: +0 > -0, and NaN wins.
    jax = pytest.importorskip("jax")
    a = np.tile(np.array([-0.0, 0.0, -0.0, 0.0, np.nan, 1.0, 2.0], np.float32), 1024)
    b = np.tile(np.array([0.0, -0.0, -0.0, 0.0, 1.0, np.nan, 2.0], np.float32), 1024)

    def f(np_, a, b):
        a, b = a * 2.0, b * 2.0  # keeps the sign of zeros, and makes each result a chain worth a kernel
        return np_.maximum(a, b), np_.minimum(a, b), np_.clip(a, b, 2.0)

    closed = closed_of(lambda a, b: f(jnp, a, b), a, b)
    _, got, fused = run_tiers(closed, a, b)
    assert fused.tier == 1 and "_minimum" not in fused.source and "_maximum" not in fused.source
    for g, w in zip(got, jax.jit(lambda a, b: f(jax.numpy, a, b))(a, b)):
        w = np.asarray(w)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


@needs_numba
@pytest.mark.usefixtures("without_fusion_check")
def test_a_value_compared_with_its_own_maximum_is_fused_in_two_kernels(rng):
    # `x == max(x)` needs the maximum before the comparison starts. Grouping merged the comparison into the group of
    # its own reduction (through the broadcast of the maximum), and kernel generation failed with a KeyError; found
    # by differentiating `max(x * y)` through `jit` in check mode.
    x = rng.random(100_000).astype(np.float32)

    def f(x):
        y = x * 2.0
        return jnp.sum((y == jnp.max(y)).astype(jnp.float32) * x)

    closed = closed_of(f, x)
    want, got, fused = run_tiers(closed, x)
    assert fused.tier == 1 and all(k.status == "compiled" for k in fused.kernels)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


@needs_numba
def test_groups_feeding_each_other_through_different_members_are_not_formed():
    # Two groups G and H whose members are independent inside each group, with G's first member feeding H and H's
    # second member feeding G: each group passed the per-group cycle check, but as kernels each needs the other
    # first ("fusion produced a cyclic schedule"). Found compiling optax.contrib.mechanize(adam)'s update.
    rng = np.random.default_rng(0)
    shapes = {"dense": {"kernel": (4, 3), "bias": (3,)}, "conv": {"kernel": (3, 3, 2, 4)}, "temperature": ()}
    tree = lambda: fluxion.tree_util.tree_map(lambda s: jnp.asarray(rng.standard_normal(s).astype(np.float32)),
                                              shapes, is_leaf=lambda s: isinstance(s, tuple))
    params, grads = tree(), tree()
    # The second: a group reading a scalar computed early in another group whose later members read this group's
    # reduction (the walk skipped equations before the new group's first member).
    for tx in (optax.contrib.mechanize(optax.adam(1e-2)),
               optax.contrib.prodigy(0.5, beta3=0.9, weight_decay=1e-2, safeguard_warmup=True, estim_lr0=1e-3)):
        state = tx.init(params)
        want = tx.update(grads, state, params)
        got = fluxion.jit(tx.update)(grads, state, params)
        for a, b in zip(fluxion.tree_util.tree_leaves(got), fluxion.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)
