"""Work split between the chunk threads (`threads.run_chunks`): convolution chunks and stacks of small matrices,
each product on one BLAS thread, and fused kernels threaded in programs whose BLAS calls are single-threaded.

Every threaded path is checked against its NumPy path, and for identical bits with the load monitor saying the
machine is quiet (all cores) and busy (one thread), as `test_threads` does for products and fused kernels."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import blas, contractions, conv, convkernels, fusion, ir, threads, windowed
from fluxion._src.backends.compiler.fusion import runtime
from fluxion._src.backends.eager import convolution as eager_conv
from fluxion._src.backends.eager import windowed as eager_windowed
from fluxion._src.config import THREAD_LIMIT_VARIABLES

pytestmark = pytest.mark.skipif(not compiler.enabled(), reason="jit compiler disabled (FLUXION_JIT_COMPILER=0)")

QUIET, BUSY = max(threads.CORES, 2), 1
NHWC = ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
WEIGHT_GRADIENT = ((3, 0, 1, 2), (3, 0, 1, 2), (2, 3, 0, 1))   # JAX's transpose rule for an NHWC/HWIO conv


def _load_says(monkeypatch, n: int) -> None:
    """Makes the load monitor decide `n` threads from now on (as if other programs left `n` cores idle)."""
    for var in THREAD_LIMIT_VARIABLES + ("FLUXION_NUM_THREADS",):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(threads._monitor, "_measure", lambda now: n)
    threads._monitor.next_check = 0.0


def _under_loads(monkeypatch, fn) -> list:
    """fn()'s result (as bytes, with its dtype and shape) with the machine quiet, busy, quiet, busy."""
    outs = []
    for load in (QUIET, BUSY, QUIET, BUSY):
        _load_says(monkeypatch, load)
        out = np.asarray(fn())
        outs.append((out.dtype, out.shape, out.tobytes()))
    return outs


@pytest.fixture
def used(monkeypatch):
    """Records the thread count of every `run_chunks` call."""
    seen: list = []
    real = threads.run_chunks
    monkeypatch.setattr(threads, "run_chunks", lambda count, make_body: seen.append(real(count, make_body)) or
                        seen[-1])
    return seen


# --- run_chunks ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [0, 1, 2, 7, 64])
@pytest.mark.parametrize("load", [QUIET, BUSY])
def test_every_chunk_runs_once_with_per_thread_bodies(monkeypatch, count, load):
    _load_says(monkeypatch, load)
    done, bodies, lock = [], [], threading.Lock()

    def make_body():
        mine = []   # a thread's scratch state: never shared between threads
        with lock:
            bodies.append((threading.get_ident(), mine))

        def body(i):
            mine.append(i)
            with lock:
                done.append(i)
        return body
    n = threads.run_chunks(count, make_body)
    assert sorted(done) == list(range(count))
    assert len({ident for ident, _ in bodies}) == len(bodies)   # one body per participating thread
    assert sorted(i for _, mine in bodies for i in mine) == list(range(count))
    assert n == (1 if count <= 1 else min(load, threads.CORES, count))


def test_a_chunks_exception_reaches_the_caller_after_every_thread_stopped(monkeypatch):
    _load_says(monkeypatch, QUIET)
    running = []

    def make_body():
        def body(i):
            running.append(i)
            if i == 3:
                raise ValueError("chunk 3")
        return body
    with pytest.raises(ValueError, match="chunk 3"):
        threads.run_chunks(16, make_body)
    assert 3 in running


def test_chunks_inside_chunks_run_on_the_thread_that_asked(monkeypatch):
    # A pool thread that runs chunked work itself does not wait for the pool (which it occupies).
    _load_says(monkeypatch, QUIET)
    inner = []

    def make_inner():
        return lambda i: inner.append((threading.get_ident(), i))

    def make_body():
        def body(i):
            threads.run_chunks(4, make_inner)
        return body
    threads.run_chunks(4, make_body)
    assert len(inner) == 16


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_runs_chunks_with_a_pool_of_its_own(monkeypatch):
    _load_says(monkeypatch, QUIET)
    threads.run_chunks(8, lambda: lambda i: None)   # the parent's pool threads exist now
    pid = os.fork()
    if pid == 0:   # the child: its pool must not be the parent's (whose threads it does not have)
        signal.alarm(20)
        done = []

        def make_body():
            def body(i):
                time.sleep(0.005)   # long enough for the pool thread to take chunks too
                done.append((i, threading.get_ident()))
            return body
        threads.run_chunks(20, make_body)
        ok = sorted(i for i, _ in done) == list(range(20))
        os._exit(0 if ok and len({t for _, t in done}) == min(QUIET, threads.CORES) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# --- convolutions ----------------------------------------------------------------------------------------------

needs_kernels = pytest.mark.skipif(not runtime.numba_installed(), reason="Numba is not installed")


@pytest.fixture(scope="module")
def conv_kernels():
    if not runtime.numba_installed():
        pytest.skip("Numba is not installed")
    for k in convkernels.ALL:
        assert k.get(block=True) is not None, k.name


# (lhs shape, rhs shape, strides, padding, dimension numbers): every kernel path of `conv` with several chunks.
CONV_CASES = {
    "winograd forward": ((9, 12, 10, 8), (3, 3, 8, 11), (1, 1), ((1, 1), (1, 1)), NHWC),
    "winograd weight gradient": ((9, 12, 10, 8), (9, 12, 10, 11), (1, 1), ((1, 1), (1, 1)), WEIGHT_GRADIENT),
    "im2col forward, strided": ((7, 13, 11, 5), (3, 3, 5, 6), (2, 1), ((1, 2), (0, 1)), NHWC),
    "im2col forward, 5x5": ((6, 12, 12, 9), (5, 5, 9, 4), (1, 1), ((2, 2), (2, 2)), NHWC),
    "im2col weight gradient (few features)": ((8, 12, 12, 3), (8, 12, 12, 6), (1, 1), ((1, 1), (1, 1)),
                                              WEIGHT_GRADIENT),
    "one-row forward": ((5, 1, 40, 7), (1, 3, 7, 5), (1, 1), ((0, 0), (1, 1)), NHWC),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_threaded_convolution_chunks_give_the_same_bits_under_any_load(monkeypatch, rng, conv_kernels, used,
                                                                       case, dtype):
    xs, ws, strides, padding, dn = CONV_CASES[case]
    monkeypatch.setattr(conv, "PATCH_ELEMENTS", 1 << 10)   # several chunks even for these small operands
    monkeypatch.setattr(conv, "MIN_ROWS", 16)
    monkeypatch.setattr(conv, "WINOGRAD_TILES", 20)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    params = dict(window_strides=strides, padding=padding, lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                  dimension_numbers=dn)
    want = eager_conv.conv_general_dilated(x, w, **params)
    outs = _under_loads(monkeypatch, lambda: conv.conv(x, w, **params, out_shape=want.shape, general=None))
    assert all(o == outs[0] for o in outs)
    got = np.frombuffer(outs[0][2], dtype).reshape(want.shape)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=(2e-5 if dtype == np.float32 else 1e-12) * scale)
    assert len(used) == 4 and max(used) == min(QUIET, threads.CORES)   # the quiet runs did use the threads
    assert min(used) == 1


@pytest.mark.skipif(not blas.available(), reason="this NumPy's BLAS has no thread controls")
def test_convolution_chunks_multiply_on_one_blas_thread(monkeypatch, rng, conv_kernels):
    _load_says(monkeypatch, QUIET)
    counts = []
    real = np.matmul

    def recording(*args, **kwargs):
        counts.append(blas.get_threads())
        return real(*args, **kwargs)
    monkeypatch.setattr(conv.np, "matmul", recording)
    x = rng.standard_normal((4, 8, 8, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 8)).astype(np.float32)
    previous = blas.get_threads()
    threads.blas_for(True)   # as generated code sets it before a large convolution
    try:
        conv.conv(x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                  dimension_numbers=NHWC, out_shape=(4, 8, 8, 8))
    finally:
        blas.set_threads(previous)
        threads._local.blas = previous
    assert counts and set(counts) == {1}


@needs_kernels
def test_a_jitted_conv_step_has_the_same_bits_under_any_load(monkeypatch, rng, conv_kernels):
    # Convolutions (forward, input and weight gradients), BatchNorm-like fused kernels and a small dense layer:
    # the kernels of such a program are threaded (its BLAS calls are single-threaded), and so are its chunks.
    monkeypatch.setattr(conv, "WINOGRAD_TILES", 16)
    x = rng.standard_normal((6, 10, 10, 8)).astype(np.float32)
    k1 = (0.2 * rng.standard_normal((3, 3, 8, 8))).astype(np.float32)
    k2 = (0.2 * rng.standard_normal((3, 3, 8, 8))).astype(np.float32)
    dense = rng.standard_normal((8, 3)).astype(np.float32)

    def loss(params, x):
        a, b, d = params
        h = lax.conv_general_dilated(x, a, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = (h - h.mean(axis=(0, 1, 2))) / jnp.sqrt(jnp.var(h, axis=(0, 1, 2)) + 1e-5)
        h = fluxion.nn.relu(h)
        h = lax.conv_general_dilated(h, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + x
        return jnp.mean(jnp.tanh(h.mean(axis=(1, 2)) @ d) ** 2)
    params = (k1, k2, dense)
    closed = fluxion.make_jaxpr(fluxion.grad(loss))(params, x)
    assert not threads.multithreaded_blas(closed)
    step = fluxion.jit(fluxion.value_and_grad(loss))
    with fluxion.config.override("fluxion_jit_sync_kernels", True):
        outs = _under_loads(monkeypatch, lambda: np.concatenate(
            [np.ravel(v) for v in fluxion.tree_util.tree_leaves(step(params, x))]))
    assert all(o == outs[0] for o in outs)
    want = np.concatenate([np.ravel(v) for v in fluxion.tree_util.tree_leaves(
        fluxion.value_and_grad(loss)(params, x))])
    np.testing.assert_allclose(np.frombuffer(outs[0][2], np.float32), want, rtol=2e-4, atol=2e-6)


# --- windowed reductions --------------------------------------------------------------------------------------

# operand shape, window, strides, padding, window dilation: max pooling, average pooling (a sum) with padding (the
# padded-table kernel), a dilated window, a 3-D operand (lifted to 4-D, one row), one long first axis.
WINDOWS = {
    "2x2 pooling": ((37, 14, 14, 8), (1, 2, 2, 1), (1, 2, 2, 1), ((0, 0),) * 4, (1, 1, 1, 1)),
    "padded 3x3": ((21, 9, 11, 6), (1, 3, 3, 1), (1, 1, 2, 1), ((0, 0), (1, 1), (1, 2), (0, 0)), (1, 1, 1, 1)),
    "dilated, strided first axis": ((40, 8, 8, 4), (2, 2, 1, 1), (3, 1, 1, 1), ((0, 0),) * 4, (2, 1, 2, 1)),
    "rank 3": ((30, 30, 30), (2, 2, 2), (1, 1, 1), ((0, 0),) * 3, (1, 1, 1)),
    "long first axis": ((5000, 3, 7, 2), (3, 1, 2, 1), (1, 1, 1, 1), ((1, 1), (0, 0), (0, 0), (0, 0)), (1, 1, 1, 1)),
}


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(windowed, "THREADED_MIN_WORK", 1 << 10)
    monkeypatch.setattr(windowed, "CHUNK_ELEMENTS", 1 << 9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("case", list(WINDOWS))
def test_threaded_window_reductions_give_the_same_bits_under_any_load(monkeypatch, rng, conv_kernels, used,
                                                                      small_chunks, case, kind, dtype):
    shape, dims, strides, padding, dil = WINDOWS[case]
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x.reshape(-1)[::97] = np.nan   # max and min propagate NaN
    params = dict(window_dimensions=dims, window_strides=strides, padding=padding, window_dilation=dil)
    eager = {"sum": eager_windowed.reduce_window_sum, "max": eager_windowed.reduce_window_max,
             "min": eager_windowed.reduce_window_min}[kind]
    want = eager(x, base_dilation=(1,) * x.ndim, **params)
    op = {"sum": np.add, "max": np.maximum, "min": np.minimum}[kind]
    ident = eager_windowed.identity(kind, x.dtype)
    outs = _under_loads(monkeypatch, lambda: windowed.reduce_window(x, op=op, identity=ident, out_shape=want.shape,
                                                                    **params))
    assert all(o == outs[0] for o in outs)
    got = np.frombuffer(outs[0][2], dtype).reshape(want.shape)
    if kind == "sum" and np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)
    if case != "rank 3":   # one row after lifting: nothing to split
        assert len(used) == 4 and max(used) == min(QUIET, threads.CORES) and min(used) == 1
    # The tap-by-tap NumPy path gives the same bits (sums in tap order).
    with monkeypatch.context() as m:
        for k in convkernels.ALL:
            m.setattr(k, "get", lambda block=False: None)
        numpy_path = windowed.reduce_window(x, op=op, identity=ident, out_shape=want.shape, **params)
    np.testing.assert_array_equal(got, numpy_path)


@needs_kernels
def test_jitted_pooling_gradient_has_the_same_bits_under_any_load(monkeypatch, rng, conv_kernels, small_chunks):
    x = rng.standard_normal((12, 10, 10, 4)).astype(np.float32)

    def loss(x):
        y = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        z = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
        return jnp.sum(y ** 2) + jnp.sum(jnp.sin(z))
    f = fluxion.jit(fluxion.value_and_grad(loss))
    outs = _under_loads(monkeypatch, lambda: np.concatenate([np.ravel(v) for v in f(x)]))
    assert all(o == outs[0] for o in outs)
    want = np.concatenate([np.ravel(v) for v in fluxion.value_and_grad(loss)(x)])
    np.testing.assert_allclose(np.frombuffer(outs[0][2], np.float32), want, rtol=1e-5, atol=1e-4)


# --- stacks of small matrices ----------------------------------------------------------------------------------

# einsum spec, lhs shape, rhs shape: batched products whose matrices are small and whose total is large (the
# matmul template with leading batch axes, transposed operands, and the batched-product plan's views).
STACKS = {
    "leading batch": ("bij,bjk->bik", (24, 128, 64), (24, 64, 128)),
    "transposed rhs": ("bhqd,bhkd->bhqk", (6, 4, 128, 64), (6, 4, 128, 64)),
    "attention layout (plan)": ("bqhd,bkhd->bhqk", (6, 128, 4, 64), (6, 128, 4, 64)),
    "matrix-vector": ("bij,bj->bi", (520, 128, 128), (520, 128)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(STACKS))
def test_stacked_products_give_the_same_bits_under_any_load(monkeypatch, rng, used, case, dtype):
    spec, ls, rs = STACKS[case]
    if case == "matrix-vector" and dtype == np.float64:
        pytest.skip("68 MB of operands: float32 covers the template")
    a = rng.standard_normal(ls).astype(dtype)
    b = rng.standard_normal(rs).astype(dtype)
    f = fluxion.jit(lambda a, b: jnp.einsum(spec, a, b))
    with fluxion.config.override("jax_enable_x64", dtype == np.float64):
        (eqn,) = [e for e in ir.all_eqns(fluxion.make_jaxpr(f)(a, b).jaxpr) if e.primitive in blas.BLAS_PRIMITIVES]
        assert threads.stacked_blas(eqn)
        outs = _under_loads(monkeypatch, lambda: f(a, b))
    assert outs[0][0] == dtype
    assert all(o == outs[0] for o in outs)
    got = np.frombuffer(outs[0][2], dtype).reshape(outs[0][1])
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, np.einsum(spec, a.astype(np.float64), b.astype(np.float64)), **tol)
    # Quiet: the matrices on the chunk threads; busy: one np.matmul over the stack (the same per-matrix calls).
    assert used == [min(QUIET, threads.CORES)] * 2 if threads.CORES > 1 else not used


@pytest.mark.skipif(not blas.available(), reason="this NumPy's BLAS has no thread controls")
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_stacked_matmul_is_numpys_matmul_on_one_blas_thread(monkeypatch, rng, layout):
    a = rng.standard_normal((9, 33, 17)).astype(np.float32)
    b = rng.standard_normal((9, 17, 21)).astype(np.float32)
    if layout == "transposed":
        a = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    elif layout == "sliced":
        a = rng.standard_normal((18, 33, 34)).astype(np.float32)[::2, :, ::2]
    threads.blas_for(False)
    want = np.matmul(a, b)
    _load_says(monkeypatch, QUIET)
    assert contractions.stacked_matmul(a, b).tobytes() == want.tobytes()
    _load_says(monkeypatch, BUSY)
    assert contractions.stacked_matmul(a, b).tobytes() == want.tobytes()
    for x, y in ((a[0], b[0]), (a[:1], b[:1]), (a, b[0])):   # no stack, one matrix, broadcast: np.matmul as is
        np.testing.assert_array_equal(contractions.stacked_matmul(x, y), np.matmul(x, y))


def test_which_products_run_on_the_chunk_threads():
    def eqn_of(f, *shapes):
        args = [np.ones(s, np.float32) for s in shapes]
        (e,) = [e for e in ir.all_eqns(fluxion.make_jaxpr(f)(*args).jaxpr) if e.primitive in blas.BLAS_PRIMITIVES]
        return e
    bmm = lambda a, b: a @ b  # noqa: E731
    assert threads.stacked_blas(eqn_of(bmm, (32, 128, 64), (32, 64, 128)))       # 1M per matrix, 33M in all
    assert not threads.stacked_blas(eqn_of(bmm, (2, 128, 64), (2, 64, 128)))     # 2M in all: one thread anyway
    assert not threads.stacked_blas(eqn_of(bmm, (4, 512, 256), (4, 256, 128)))   # 16M per matrix: BLAS threads
    assert not threads.stacked_blas(eqn_of(bmm, (512, 256), (256, 128)))         # no batch
    assert not threads.stacked_blas(eqn_of(lambda x: jnp.linalg.cholesky(x), (64, 48, 48)))


def test_which_programs_keep_their_fused_kernels_serial():
    def program(f, *shapes):
        return fluxion.make_jaxpr(f)(*[np.ones(s, np.float32) for s in shapes])
    assert threads.multithreaded_blas(program(lambda a, b: a @ b, (512, 784), (784, 128)))
    assert not threads.multithreaded_blas(program(lambda a, b: a @ b, (32, 784), (784, 128)))
    assert not threads.multithreaded_blas(program(lambda a, b: a @ b, (32, 128, 64), (32, 64, 128)))
    conv_ = lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME",  # noqa: E731
                                                  dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert not threads.multithreaded_blas(program(conv_, (16, 32, 32, 32), (3, 3, 32, 32)))
    grouped = lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME",  # noqa: E731
                                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                    feature_group_count=2)
    assert threads.multithreaded_blas(program(grouped, (16, 32, 32, 32), (3, 3, 16, 32)))  # the general path
    # Inside a loop body too.
    looped = lambda a, b: lax.scan(lambda c, _: (c @ b, None), a, None, length=3)[0]  # noqa: E731
    assert threads.multithreaded_blas(program(looped, (512, 784), (784, 784)))


@needs_kernels
@pytest.mark.parametrize("m, parallel", [(32, True), (512, False)])
def test_fused_kernels_are_threaded_beside_single_threaded_blas_calls(monkeypatch, m, parallel):
    # A large elementwise group after a product: threaded where the product runs on one BLAS thread.
    if not fusion.parallel_possible():
        pytest.skip("one core, or thread-limit variables pin compiled code to one thread")
    a, b = np.ones((m, 784), np.float32), np.ones((784, 128), np.float32)
    big = np.ones((256, 1024), np.float32)
    closed = fusion.prepare(fluxion.make_jaxpr(lambda a, b, x: (jnp.tanh(a @ b), jnp.exp(x) * 2 + x))(a, b, big))
    with fluxion.config.override("fluxion_parallel_min_work", 1 << 10):
        pairs, _ = fusion.Planner(load=False).specs(closed)
    assert pairs and any(spec.parallel for _, spec in pairs) == parallel
