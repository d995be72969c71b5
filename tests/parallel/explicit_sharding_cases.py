"""The explicit-sharding test table, written against the `jax` API so it runs unchanged on fluxion and on real JAX.

Each case is `f(jax) -> value` on a 4x2 mesh ('data', 'model') of Explicit axes (8 CPU devices), usually made the
current mesh with `set_mesh` for the case only. Types are compared as the text `jax.typeof` prints
(`float32[8@data,4]`); failing operations as (exception class, message). `tests/parallel/test_explicit_sharding.py`
runs the table on fluxion in-process and on JAX in a subprocess (see `sharding_cases.py` for `run_case`/`norm`).

This module must not import jax or fluxion itself.
"""

from __future__ import annotations

import numpy as np

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _mesh(jax):
    Explicit = jax.sharding.AxisType.Explicit
    return jax.make_mesh((4, 2), ("data", "model"), axis_types=(Explicit, Explicit))


def _data(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 10


def _put(jax, shape, *spec):
    return jax.device_put(_data(shape), jax.P(*spec))


def _outcome(jax, fn):
    """The type text of `fn()`'s result, or the error it raises (class name and message)."""
    try:
        return str(jax.typeof(fn()))
    except Exception as e:  # noqa: BLE001 - errors are part of the table
        return ("raises", type(e).__name__, str(e))


def _in_mesh(fn):
    """A case run with the explicit mesh set (restored afterwards)."""
    def run(jax):
        with jax.set_mesh(_mesh(jax)):
            return fn(jax)
    run.__name__ = fn.__name__
    return case(run)


@_in_mesh
def typeof_text(jax):
    S = jax.sharding
    arrays = [_put(jax, (8, 4), "data", None), _put(jax, (8, 4), None, "model"), _put(jax, (8, 4), "data"),
              _put(jax, (8, 4), ("data", "model")), _put(jax, (8, 4), "model", "data"), _put(jax, (8, 4)),
              jax.numpy.zeros((8, 4)), jax.numpy.float32(2.0)]
    # (JAX also gives arrays created under an Explicit mesh a NamedSharding; fluxion leaves them unplaced, so the
    # last two arrays' `.sharding` is not compared.)
    out = [(str(jax.typeof(a)), repr(jax.typeof(a))) + ((repr(a.sharding.spec),) if k < 6 else ())
           for k, a in enumerate(arrays)]
    t = jax.typeof(arrays[0])
    return (out, repr(t.sharding.spec), isinstance(t.sharding, S.NamedSharding), repr(t.sharding.mesh),
            t == jax.typeof(arrays[2]), t == jax.typeof(arrays[1]))


@case
def typeof_without_set_mesh(jax):
    """An array placed with a NamedSharding over an Explicit mesh is typed even without a current mesh."""
    m = _mesh(jax)
    x = jax.device_put(_data((8, 4)), jax.sharding.NamedSharding(m, jax.P("data", None)))
    return (str(jax.typeof(x)), str(jax.typeof(x * 2)), str(jax.typeof(x.sum(0))), _outcome(jax, lambda: x.T @ x))


@_in_mesh
def elementwise(jax):
    jnp = jax.numpy
    x = _put(jax, (8, 4), "data", None)
    a = _put(jax, (8, 4), None, "model")
    b = _put(jax, (8, 4), None, "data")
    col = _put(jax, (8, 1), "data", None)
    row = _put(jax, (1, 4), None, "model")
    cases = [lambda: x + 1, lambda: jnp.sin(x), lambda: x * jnp.float32(2), lambda: x + a, lambda: a - x,
             lambda: x + jnp.ones(4), lambda: x + col, lambda: a * col, lambda: x + row, lambda: x.astype(jnp.int32),
             lambda: jnp.where(x > 1, x, a), lambda: jnp.maximum(x, 0.5), lambda: x ** 2, lambda: -x,
             lambda: x + b]
    return [_outcome(jax, f) for f in cases] + [np.asarray(x + a)]


@_in_mesh
def dot_general(jax):
    jnp = jax.numpy
    x = _put(jax, (8, 4), "data", None)
    w_out = _put(jax, (4, 6), None, "model")
    w_in = _put(jax, (4, 6), "model", None)
    xt = _put(jax, (4, 8), None, "data")
    v = _put(jax, (8,), "data")
    bl = _put(jax, (4, 8, 4), "data", None, None)
    br = _put(jax, (4, 4, 2), "data", None, None)
    br_other = _put(jax, (4, 4, 2), "model", None, None)
    cases = [lambda: x @ w_out, lambda: jnp.dot(x, w_out), lambda: x @ w_in, lambda: jnp.einsum("ij,jk->ik", x, w_out),
             lambda: xt @ x, lambda: x.T @ x, lambda: v @ v, lambda: jnp.matmul(bl, br),
             lambda: jax.lax.dot_general(bl, br_other, (((2,), (1,)), ((0,), (0,)))),
             lambda: jax.lax.dot_general(bl, br, (((2,), (1,)), ((0,), (0,)))),
             lambda: jnp.matmul(xt, x, out_sharding=jax.P(None, "model")),
             lambda: jnp.dot(xt, x, out_sharding=jax.P()),
             lambda: jnp.einsum("ij,jk->ik", xt, x, out_sharding=jax.P("model", None)),
             lambda: jnp.matmul(x, w_out, out_sharding=jax.P(None, None))]
    return [_outcome(jax, f) for f in cases] + [np.asarray(jnp.matmul(xt, x, out_sharding=jax.P(None, "model")))]


@_in_mesh
def reductions(jax):
    jnp = jax.numpy
    x = _put(jax, (8, 4), "data", "model")
    y = _put(jax, (2, 8, 4), None, "data", None)
    cases = [lambda: x.sum(0), lambda: x.sum(1), lambda: x.sum(), lambda: jnp.sum(x, axis=0, keepdims=True),
             lambda: jnp.max(x, axis=1), lambda: jnp.mean(x, axis=0), lambda: jnp.argmax(x, axis=0),
             lambda: jnp.prod(y, axis=(0, 2)), lambda: jnp.min(y, axis=1)]
    return [_outcome(jax, f) for f in cases] + [np.asarray(x.sum(0))]


@_in_mesh
def reshape_transpose_broadcast(jax):
    jnp = jax.numpy
    x = _put(jax, (8, 4), "data", None)
    z = _put(jax, (8, 4), None, "model")
    t = _put(jax, (8, 1, 4), "data", None, None)
    cases = [lambda: x.T, lambda: jnp.transpose(_put(jax, (2, 8, 4), None, "data", "model"), (2, 0, 1)),
             lambda: x.reshape(4, 2, 4), lambda: x.reshape(2, 4, 4), lambda: x.reshape(16, 2),
             lambda: x.reshape(4, 8), lambda: x.reshape(32), lambda: z.reshape(32), lambda: z.reshape(8, 2, 2),
             lambda: x.reshape(8, 1, 4), lambda: t.reshape(8, 4), lambda: x[None], lambda: x[:, None],
             lambda: jnp.broadcast_to(x, (3, 8, 4)), lambda: jnp.expand_dims(z, 0), lambda: t.squeeze(1),
             lambda: x.reshape(8, 4)]
    return [_outcome(jax, f) for f in cases] + [np.asarray(x.reshape(4, 2, 4))]


@_in_mesh
def jit_types(jax):
    jnp = jax.numpy
    x = _put(jax, (8, 4), "data", None)
    w = _put(jax, (4, 6), None, "model")
    seen = []

    def f(a, b):
        seen.append((str(jax.typeof(a)), str(jax.typeof(b))))
        h = jnp.tanh(a @ b)
        seen.append(str(jax.typeof(h)))
        return h, h.sum(0)

    h, s = jax.jit(f)(x, w)
    return (seen[:2], str(jax.typeof(h)), str(jax.typeof(s)), repr(h.sharding.spec), repr(s.sharding.spec),
            np.asarray(s), _outcome(jax, lambda: jax.jit(lambda a: a.T @ a)(x)))


@_in_mesh
def reshard_and_constraint(jax):
    x = _put(jax, (8, 4), "data", None)
    seen = []

    def f(a):
        b = jax.sharding.reshard(a, jax.P(None, "data"))
        seen.append(str(jax.typeof(b)))
        c = jax.lax.with_sharding_constraint(b * 2, jax.P(None, "data"))  # on Explicit axes: an assertion
        seen.append(str(jax.typeof(c)))
        return c

    out = jax.jit(f)(x)
    eager = jax.sharding.reshard(x, jax.P(("data", "model")))
    mismatch = _outcome(jax, lambda: jax.lax.with_sharding_constraint(x, jax.P("model", None)))
    return (seen, str(jax.typeof(out)), repr(out.sharding.spec), str(jax.typeof(eager)), np.asarray(out),
            str(jax.typeof(jax.sharding.reshard(x, jax.P()))), mismatch)


@_in_mesh
def grad_through_explicit_matmul(jax):
    jnp = jax.numpy
    x = _put(jax, (8, 4), "data", None)
    p = {"w": _put(jax, (4, 6), None, "model"), "b": _put(jax, (6,), "model")}

    def loss(q, xb):
        return jnp.mean(jnp.tanh(xb @ q["w"] + q["b"]) ** 2)

    value, g = jax.jit(jax.value_and_grad(loss))(p, x)
    eager_value, eager_g = jax.value_and_grad(loss)(p, x)
    return (str(jax.typeof(value)), str(jax.typeof(g["w"])), str(jax.typeof(g["b"])), str(jax.typeof(eager_g["w"])),
            np.asarray(value), np.asarray(g["w"]), np.asarray(eager_value), np.asarray(eager_g["b"]))


@_in_mesh
def auto_and_explicit_axes(jax):
    S = jax.sharding
    x = _put(jax, (8, 4), "data", None)
    seen = []

    def f(a):
        seen.append(repr(S.get_abstract_mesh().axis_types))
        return a * 2

    y = S.auto_axes(f, out_sharding=jax.P(None, "data"))(x)
    z = S.explicit_axes(f, in_sharding=jax.P("model", None))(x)
    return (seen, str(jax.typeof(y)), str(jax.typeof(z)), np.asarray(y))


@case
def auto_mode_jit_output_shardings(jax):
    """Auto axes: the shardings `jit` outputs get from XLA's propagation in the common cases (fluxion follows the
    program's equations with the explicit-mode rules, made lenient): `x @ w` with `w` split on its output
    dimension, an MLP layer pair, reductions, transposes, reshapes, broadcasts."""
    jnp, S = jax.numpy, jax.sharding
    m = jax.make_mesh((4, 2), ("data", "model"), axis_types=(S.AxisType.Auto,) * 2)

    def put(shape, *spec):
        return jax.device_put(_data(shape), S.NamedSharding(m, jax.P(*spec)))

    x, xr, xm = put((8, 4), "data", None), put((8, 4)), put((8, 4), None, "model")
    w, wr, w2, b = put((4, 6), None, "model"), put((4, 6)), put((6, 4), "model", None), put((6,), "model")
    table = [(lambda a, c: a @ c, x, w), (lambda a, c: a @ c, xr, w), (lambda a, c: a @ c, x, wr),
             (lambda a, c, d, e: jnp.tanh(a @ c + d) @ e, x, w, b, w2), (lambda a, c, d: jnp.tanh(a @ c + d), x, w, b),
             (lambda a, c: (a @ c).sum(0), x, w), (lambda a: a.T @ a, x), (lambda a: a.T, w), (lambda a: a * 2, x),
             (lambda a: a.reshape(32), x), (lambda a, c: jax.nn.relu(a @ c), x, w), (lambda a, c: a @ c, xm, w),
             (lambda a, c: c.T @ a.T, x, w), (lambda a, c: a[:, :, None] * c[None], x, w)]
    out = []
    for f, *args in table:
        y = jax.jit(f)(*args)
        out.append((repr(y.sharding.spec), np.asarray(y)))
    return out


@_in_mesh
def slicing_concat_and_transforms(jax):
    jnp, lax = jax.numpy, jax.lax
    x = _put(jax, (8, 4), "data", None)
    w = _put(jax, (4, 6), None, "model")
    other = _put(jax, (8, 4), None, "model")
    cases = [lambda: jax.vmap(lambda r: r @ w)(x), lambda: jax.vmap(lambda r: r.sum())(x),
             lambda: lax.fori_loop(0, 3, lambda i, c: c * 2, x),
             lambda: jax.jit(lambda a: lax.fori_loop(0, 3, lambda i, c: c * 2 + 1, a))(x),
             lambda: lax.scan(lambda c, r: (c + r, r.sum()), jnp.zeros(4), x)[0],
             lambda: jnp.cumsum(x, axis=1), lambda: lax.slice(x, (0, 1), (8, 3)), lambda: lax.slice(x, (2, 0), (6, 4)),
             lambda: lax.dynamic_slice(x, (0, 0), (6, 4)), lambda: lax.pad(x, 0.0, ((0, 0, 0), (1, 1, 0))),
             lambda: jnp.concatenate([x, x], axis=1), lambda: jnp.concatenate([x, other], axis=0),
             lambda: jax.nn.softmax(x @ w), lambda: jnp.flip(x, 0),
             lambda: jax.grad(lambda a: jax.vmap(lambda r: (r @ w).sum())(a).sum())(x)]
    return [_outcome(jax, f) for f in cases]


@_in_mesh
def lax_out_sharding(jax):
    """`out_sharding=` of `lax.reshape`, `jnp.reshape` and `lax.dot_general`: the way past the rules' ambiguity
    errors."""
    lax = jax.lax
    x = _put(jax, (8, 4), "data", None)
    contract0 = (((0,), (0,)), ((), ()))
    cases = [lambda: lax.reshape(x, (2, 4, 4), out_sharding=jax.P(None, "data")),
             lambda: jax.jit(lambda a: lax.reshape(a, (16, 2), out_sharding=jax.P("model")))(x),
             lambda: lax.dot_general(x, x, contract0, out_sharding=jax.P("model", None)),
             lambda: jax.jit(lambda a: lax.dot_general(a, a, contract0, out_sharding=jax.P(None, "data")))(x),
             lambda: lax.dot_general(x, x, contract0),
             lambda: jax.numpy.reshape(x, (4, 8), out_sharding=jax.P("data", "model")),
             lambda: jax.numpy.reshape(x, (4, 8))]
    return [_outcome(jax, f) for f in cases] + [np.asarray(lax.reshape(x, (2, 4, 4), out_sharding=jax.P(None, "data")))]
