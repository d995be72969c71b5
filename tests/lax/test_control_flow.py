"""Table-driven tests of structured control flow: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map` and
`associative_scan`.

One record per construct (or per parameterization of one): a function written against a library module `m`
(`fluxion`, or real `jax` as an oracle), a plain-NumPy reference (Python loops and `if`s), and an argument
generator `make_args(rng, k)`, where the example index `k` selects the predicate, switch index or trip count so
that every branch and the zero-trip loop are exercised. Each record is checked for:

* values against the NumPy reference, eagerly and under `fluxion.jit`; eager output avals against abstract
  evaluation (`eval_shape`, `make_jaxpr`); values, shapes and dtypes against real JAX where it is installed;
* first- and second-order JVPs and VJPs against finite differences where JAX supports them (`while_loop`, and
  `fori_loop` with traced bounds, are forward-mode only), and the jitted derivatives against the eager ones;
* `vmap` against a Python loop over the batch, over the operands and over the predicate / index / trip count
  (batched predicates take a different path), for several `in_axes` including an empty batch; `vmap` of `grad`
  and `grad` of `vmap`.

Closures over outer tracers are covered by records whose bodies close over a function argument (differentiated,
batched or staged by the transformation under test), and nested control flow by scan-in-cond-in-scan and
cond-in-while records. Known core bugs are kept as strict xfails in `KNOWN_FAILURES`, each with a reproducer.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy  # binds `fluxion.numpy`, which the records reach as `m.numpy`
from fluxion._src import test_util as tu
from fluxion.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

f32, i32 = np.float32, np.int32
bf16 = np.dtype(ml_dtypes.bfloat16)
BATCH = 4  # examples per vmap check (k = 0..3 selects predicates/indices/trip counts)


@dataclasses.dataclass(frozen=True)
class Case:
    """One control-flow construct under test.

    Attributes:
      name: test id.
      fn: fn(m, *args) written against the library module `m` (`fluxion` or `jax`); args may be pytrees.
      ref: the NumPy reference ref(*args) (plain loops and ifs), returning the same pytree structure.
      make_args: (rng, k) -> list of per-example NumPy arguments; `k` in range(BATCH) picks the branch/trip count.
      modes: derivative modes checked to second order (empty: not differentiated, e.g. data-dependent trip count).
      grad_ks: the example indices at which derivatives are checked (one per branch of interest).
      in_axes: extra vmap in_axes cases besides "all 0" and "one argument unmapped" (e.g. batch axis 1).
      tol: value tolerance.
      traced_rev: reverse mode also works when the integer arguments are traced (under vmap); False for
        `fori_loop` bounds, which make it a `while_loop` once traced (as in JAX).
    """

    name: str
    fn: Callable
    ref: Callable
    make_args: Callable
    modes: tuple = ("fwd", "rev")
    grad_ks: tuple = (0, 1)
    in_axes: tuple = ()
    tol: float = 1e-5
    traced_rev: bool = True

    @property
    def f(self) -> Callable:
        """The function under test, bound to fluxion."""
        return functools.partial(self.fn, fluxion)


def _normal(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(f32)


def _away_from_zero(rng, *shape):
    mag = rng.uniform(0.5, 2.0, shape)
    return np.where(rng.random(shape) < 0.5, -mag, mag).astype(f32)


def _f(i):
    """An integer (loop index) as float32, in either library."""
    return np.float32(i) if isinstance(i, (int, np.integer)) else i.astype(f32)


# --------------------------------------------------------------------------------------------------------------
# cond / switch
# --------------------------------------------------------------------------------------------------------------

def _cond_bool(m, p, x):
    return m.lax.cond(p, lambda x: m.numpy.sin(x) * 2.0, lambda x: m.numpy.cos(x) * x, x)


def _cond_bool_ref(p, x):
    return np.sin(x) * 2.0 if p else np.cos(x) * x


def _cond_int_pred(m, p, x, y):  # an integer predicate: nonzero (of either sign) is True
    return m.lax.cond(p, lambda x, y: x * y, lambda x, y: x - m.numpy.exp(y), x, y)


def _cond_int_pred_ref(p, x, y):
    return x * y if p != 0 else x - np.exp(y)


_INT_PREDS = (-2, 0, 3, 0)


def _cond_pytree(m, p, t):  # operands and outputs are nested containers with an integer leaf
    def yes(t):
        return {"s": m.numpy.dot(t["a"], t["b"][0]), "n": t["b"][1] + 1}

    def no(t):
        return {"s": m.numpy.sum(t["a"], axis=1) * m.numpy.sum(t["b"][0]), "n": t["b"][1] * 2}

    return m.lax.cond(p, yes, no, t)


def _cond_pytree_ref(p, t):
    a, (b, n) = t["a"], t["b"]
    if p:
        return {"s": a @ b, "n": n + 1}
    return {"s": a.sum(1) * b.sum(), "n": n * 2}


def _cond_pytree_args(rng, k):
    return [np.bool_(k % 2 == 0), {"a": _normal(rng, 2, 3), "b": (_normal(rng, 3), np.int32(k + 3))}]


def _cond_closure(m, p, x, w):  # the true branch closes over `w`; the false branch's output is constant
    return m.lax.cond(p, lambda x: m.numpy.sin(x * w), lambda x: m.numpy.ones_like(x) * 2.0, x)


def _cond_closure_ref(p, x, w):
    return np.sin(x * w) if p else np.ones_like(x) * 2.0


def _switch3(m, i, x, y):
    branches = [lambda x, y: m.numpy.sin(x) + y, lambda x, y: x * y * y, lambda x, y: m.numpy.ones_like(x)]
    return m.lax.switch(i, branches, x, y)


def _switch3_ref(i, x, y):
    i = min(max(int(i), 0), 2)  # out-of-range indices are clamped, as in JAX
    return [np.sin(x) + y, x * y * y, np.ones_like(x)][i]


_SWITCH_INDICES = (-1, 1, 2, 5)  # clamped low, middle, last, clamped high

# --------------------------------------------------------------------------------------------------------------
# while_loop / fori_loop
# --------------------------------------------------------------------------------------------------------------


def _while_counter(m, x):
    return m.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5 + m.numpy.sin(c[1])), (0, x))


def _while_counter_ref(x):
    i = 0
    while i < 3:
        i, x = i + 1, x * 1.5 + np.sin(x)
    return (i, x)


def _while_trip_count(m, n, x, w):  # cond closes over the trip count n, body over w
    init = (m.numpy.zeros((), np.int32), x)
    return m.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, m.numpy.tanh(c[1] * w) + 0.5), init)[1]


def _while_trip_count_ref(n, x, w):
    for _ in range(int(n)):
        x = np.tanh(x * w) + 0.5
    return x


def _while_data_dependent(m, x):  # the trip count depends on floating-point data
    return m.lax.while_loop(lambda v: m.numpy.sum(v * v) < 10.0, lambda v: v * 1.7 + 0.1, x)


def _while_data_dependent_ref(x):
    while np.sum(x * x) < 10.0:
        x = x * np.float32(1.7) + np.float32(0.1)
    return x


def _fori_static(m, x, w):
    return m.lax.fori_loop(0, 4, lambda i, v: m.numpy.sin(v) * w + _f(i) * 0.1, x)


def _fori_static_ref(x, w):
    for i in range(4):
        x = np.sin(x) * w + np.float32(i) * np.float32(0.1)
    return x


def _fori_traced(m, lo, hi, x):  # bounds are arguments: traced under jit/vmap
    return m.lax.fori_loop(lo, hi, lambda i, v: v * 0.9 + m.numpy.cos(v) * _f(i), x)


def _fori_traced_ref(lo, hi, x):
    for i in range(int(lo), int(hi)):
        x = x * np.float32(0.9) + np.cos(x) * np.float32(i)
    return x


_FORI_BOUNDS = ((0, 3), (1, 1), (-1, 2), (2, 4))  # trip counts 3, 0, 3, 2

# --------------------------------------------------------------------------------------------------------------
# scan / map / associative_scan
# --------------------------------------------------------------------------------------------------------------


def _rnn(reverse=False, unroll=1):
    """An RNN cell scanned over xs: carry (h, running sum), ys (h * sum, sum); the body closes over w."""
    def fn(m, h0, xs, w):
        def body(c, x):
            h, acc = c
            h = m.numpy.tanh(m.numpy.dot(w, h) + x)
            acc = acc + m.numpy.sum(h)
            return (h, acc), (h * acc, acc)
        return m.lax.scan(body, (h0, m.numpy.zeros((), f32)), xs, reverse=reverse, unroll=unroll)

    def ref(h0, xs, w):
        h, acc, ys_a, ys_b = h0, np.float32(0), [None] * len(xs), [None] * len(xs)
        for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            h = np.tanh(w @ h + xs[t])
            acc = acc + h.sum()
            ys_a[t], ys_b[t] = h * acc, acc
        return (h, acc), (np.stack(ys_a), np.stack(ys_b))

    return fn, ref


def _rnn_args(rng, k):
    return [_normal(rng, 2), _normal(rng, 4, 2), _normal(rng, 2, 2, scale=0.5)]


def _scan_no_xs(m, x):
    return m.lax.scan(lambda c, _: (c * 0.9 + m.numpy.sin(c), c * c), x, None, length=3)


def _scan_no_xs_ref(x):
    ys = []
    for _ in range(3):
        ys.append(x * x)
        x = x * np.float32(0.9) + np.sin(x)
    return x, np.stack(ys)


def _scan_pytree(m, c0, xs):  # pytree carry and xs with integer leaves; a None leaf in ys
    def body(c, x):
        v, n = c
        v = v * x["a"] + _f(x["b"])
        n = n + x["b"]
        return (v, n), (None, {"p": v * 2.0, "n": n})
    return m.lax.scan(body, c0, xs)


def _scan_pytree_ref(c0, xs):
    (v, n), ps, ns = c0, [], []
    for a, b in zip(xs["a"], xs["b"]):
        v = v * a + np.float32(b)
        n = n + b
        ps.append(v * 2)
        ns.append(n)
    return (v, n), (None, {"p": np.stack(ps), "n": np.stack(ns)})


def _scan_pytree_args(rng, k):
    return [(_normal(rng, 2), np.int32(k)),
            {"a": rng.uniform(0.5, 1.5, (3, 2)).astype(f32), "b": rng.integers(-3, 4, 3).astype(i32)}]


def _map_pytree(m, xs, batch_size=None):
    return m.lax.map(lambda t: (m.numpy.sin(t["a"]) * t["b"], m.numpy.sum(t["a"] * t["a"])), xs,
                     batch_size=batch_size)


def _map_pytree_ref(xs):
    outs = [(np.sin(a) * b, np.sum(a * a)) for a, b in zip(xs["a"], xs["b"])]
    return np.stack([o[0] for o in outs]), np.stack([o[1] for o in outs])


def _assoc_add(m, x):
    return m.lax.associative_scan(m.lax.add, x)


def _affine_compose(a, b):
    """Composition of affine maps x -> a1 x + b1, then x -> a2 x + b2 (associative, not commutative)."""
    (a1, b1), (a2, b2) = a, b
    return a1 * a2, b1 * a2 + b2


def _assoc_affine_reverse(m, a, b):
    return m.lax.associative_scan(_affine_compose, (a, b), reverse=True, axis=1)


def _assoc_affine_reverse_ref(a, b):
    out_a, out_b = np.empty_like(a), np.empty_like(b)
    acc_a, acc_b = a[:, -1], b[:, -1]
    out_a[:, -1], out_b[:, -1] = acc_a, acc_b
    for i in range(a.shape[1] - 2, -1, -1):  # element i combines slices i..n-1, composed from the end
        acc_a, acc_b = acc_a * a[:, i], acc_b * a[:, i] + b[:, i]
        out_a[:, i], out_b[:, i] = acc_a, acc_b
    return out_a, out_b


# --------------------------------------------------------------------------------------------------------------
# nested control flow
# --------------------------------------------------------------------------------------------------------------

def _nested_scan_cond_scan(m, xs, w):
    """scan over xs; each step conds on the sign of x[0]; the true branch runs an inner scan over the rows of w.

    The inner scan closes over nothing but its operands; the false branch closes over the outer scan's `x` (a
    tracer of the outer body) and every level closes over `w` (an argument of the whole function).
    """
    def step(c, x):
        def inner(c):
            return m.lax.scan(lambda a, wi: (m.numpy.sin(a) * wi + a, m.numpy.sum(a)), c, w)[0]

        c = m.lax.cond(x[0] > 0, inner, lambda c: c * 0.5 - x * w[0], c)
        return c, m.numpy.sum(c)

    return m.lax.scan(step, m.numpy.ones(2, f32), xs)


def _nested_scan_cond_scan_ref(xs, w):
    c, ys = np.ones(2, f32), []
    for x in xs:
        if x[0] > 0:
            for wi in w:
                c = np.sin(c) * wi + c
        else:
            c = c * np.float32(0.5) - x * w[0]
        ys.append(c.sum())
    return c, np.stack(ys)


def _nested_args(rng, k):
    xs = _away_from_zero(rng, 3, 2)  # the predicate x[0] > 0 stays put under finite differences
    xs[:, 0] = np.abs(xs[:, 0]) * np.where(np.arange(3) % 2 == k % 2, 1, -1)  # both branches, in varying order
    return [xs, _normal(rng, 2, 2, scale=0.5)]


def _nested_while_cond(m, n, x):
    def body(c):
        i, v = c
        v = m.lax.cond(i % 2 == 0, lambda v: m.numpy.sin(v) + 1.0, lambda v: v * 1.3, v)
        return i + 1, v
    return m.lax.while_loop(lambda c: c[0] < n, body, (m.numpy.zeros((), i32), x))[1]


def _nested_while_cond_ref(n, x):
    for i in range(int(n)):
        x = np.sin(x) + 1 if i % 2 == 0 else x * np.float32(1.3)
    return x


_RNN, _RNN_REF = _rnn()
_RNN_REV, _RNN_REV_REF = _rnn(reverse=True)

CASES = [
    # -- cond / switch ---------------------------------------------------------------------------------------------
    Case("cond_bool", _cond_bool, _cond_bool_ref, lambda rng, k: [np.bool_(k % 2 == 0), _normal(rng, 3)],
         in_axes=((None, 1),)),
    Case("cond_int_predicate", _cond_int_pred, _cond_int_pred_ref,
         lambda rng, k: [np.int32(_INT_PREDS[k]), _normal(rng, 3), _normal(rng, 3)], in_axes=((0, None, 1),)),
    Case("cond_pytree_operands", _cond_pytree, _cond_pytree_ref, _cond_pytree_args),
    Case("cond_closure_constant_branch", _cond_closure, _cond_closure_ref,
         lambda rng, k: [np.bool_(k % 2 == 0), _normal(rng, 3), _normal(rng, 3)]),
    Case("switch_3_branches_clamped", _switch3, _switch3_ref,
         lambda rng, k: [np.int32(_SWITCH_INDICES[k]), _normal(rng, 2, 3), _normal(rng, 2, 3)], grad_ks=(0, 1, 2),
         in_axes=((0, 1, -1),)),
    # -- while_loop / fori_loop ------------------------------------------------------------------------------------
    Case("while_counter", _while_counter, _while_counter_ref, lambda rng, k: [_normal(rng, 3)], modes=("fwd",),
         grad_ks=(0,)),
    Case("while_trip_count", _while_trip_count, _while_trip_count_ref,
         lambda rng, k: [np.int32(k), _normal(rng, 3), _normal(rng, 3)], modes=("fwd",), grad_ks=(0, 3)),
    Case("while_data_dependent", _while_data_dependent, _while_data_dependent_ref,
         lambda rng, k: [_normal(rng, 3, scale=0.5 + k)], modes=()),
    Case("fori_static_bounds", _fori_static, _fori_static_ref,
         lambda rng, k: [_normal(rng, 3), _normal(rng, 3)], grad_ks=(0,), in_axes=((1, 0),)),
    # Eagerly the bounds are concrete, so fori_loop lowers to scan and reverse mode works (as in JAX); under jit
    # they are traced and reverse mode raises (test_reverse_mode_through_while_loop_raises_like_jax).
    Case("fori_traced_bounds", _fori_traced, _fori_traced_ref,
         lambda rng, k: [np.int32(_FORI_BOUNDS[k][0]), np.int32(_FORI_BOUNDS[k][1]), _normal(rng, 3)],
         grad_ks=(0, 1), traced_rev=False),
    # -- scan / map / associative_scan -----------------------------------------------------------------------------
    Case("scan_carry_and_ys", _RNN, _RNN_REF, _rnn_args, grad_ks=(0,), in_axes=((None, 1, 0), (0, 2, None))),
    Case("scan_reverse", _RNN_REV, _RNN_REV_REF, _rnn_args, grad_ks=(0,)),
    Case("scan_unroll_2", _rnn(unroll=2)[0], _RNN_REF, _rnn_args, grad_ks=(0,)),
    Case("scan_unroll_3_of_4", _rnn(unroll=3)[0], _RNN_REF, _rnn_args, grad_ks=(0,)),
    Case("scan_length_without_xs", _scan_no_xs, _scan_no_xs_ref, lambda rng, k: [_normal(rng, 2)], grad_ks=(0,)),
    Case("scan_pytree_int_leaves_none_ys", _scan_pytree, _scan_pytree_ref, _scan_pytree_args, grad_ks=(0,)),
    Case("map_pytree", _map_pytree, _map_pytree_ref,
         lambda rng, k: [{"a": _normal(rng, 3, 2), "b": _normal(rng, 3)}], grad_ks=(0,)),
    Case("map_batch_size_2_of_3", lambda m, xs: _map_pytree(m, xs, batch_size=2), _map_pytree_ref,
         lambda rng, k: [{"a": _normal(rng, 3, 2), "b": _normal(rng, 3)}], grad_ks=(0,)),
    Case("associative_scan_add_odd", _assoc_add, lambda x: np.cumsum(x), lambda rng, k: [_normal(rng, 5)],
         grad_ks=(0,)),
    Case("associative_scan_add_even", _assoc_add, lambda x: np.cumsum(x), lambda rng, k: [_normal(rng, 4)],
         grad_ks=(0,)),
    Case("associative_scan_affine_reverse_axis1", _assoc_affine_reverse, _assoc_affine_reverse_ref,
         lambda rng, k: [rng.uniform(0.5, 1.5, (2, 5)).astype(f32), _normal(rng, 2, 5)], grad_ks=(0,)),
    # -- nested ----------------------------------------------------------------------------------------------------
    Case("nested_scan_cond_scan", _nested_scan_cond_scan, _nested_scan_cond_scan_ref, _nested_args),
    Case("nested_cond_in_while", _nested_while_cond, _nested_while_cond_ref,
         lambda rng, k: [np.int32(k + 1), _normal(rng, 3)], modes=("fwd",), grad_ks=(2,)),
]

CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names in the table"

# --------------------------------------------------------------------------------------------------------------
# Known core bugs (strict xfails): (check, case name) -> reason
# --------------------------------------------------------------------------------------------------------------

KNOWN_FAILURES: dict[tuple, str] = {}


def _marks(check: str, case_name: str) -> list:
    reason = KNOWN_FAILURES.get((check, case_name))
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


def _params(check: str, cases) -> list:
    return [pytest.param(c, id=c.name, marks=_marks(check, c.name)) for c in cases]


def _batch_params() -> list:
    out = []
    for c in CASES:
        nargs = len(c.make_args(np.random.default_rng(0), 0))
        axes_cases = [(0,) * nargs]
        if nargs > 1:  # each argument unmapped in turn (the predicate / trip count included)
            axes_cases += [tuple(None if j == i else 0 for j in range(nargs)) for i in range(nargs)]
        for axes in axes_cases + list(c.in_axes):
            out.append(pytest.param(c, axes, id=f"{c.name}-axes{axes}", marks=_marks("batching", c.name)))
    return out


# --------------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------------

def _stack(examples: list, axes: tuple) -> list:
    """Batched arguments from per-example argument lists: argument j's leaves stacked along axes[j]."""
    out = []
    for j, ax in enumerate(axes):
        if ax is None:
            out.append(examples[0][j])
        else:
            out.append(tree_map(lambda *leaves, ax=ax: np.stack(leaves, axis=ax), *[e[j] for e in examples]))
    return out


def _is_float(x) -> bool:
    dt = getattr(x, "dtype", None)  # (tracers have a dtype; NumPy scalars and arrays too)
    return np.dtype(dt if dt is not None else np.asarray(x).dtype).kind == "f"


def _float_part(f: Callable, args: list) -> tuple[Callable, list]:
    """`f` as a function of the floating-point leaves of `args` alone (integer/bool leaves held fixed)."""
    leaves, tree = tree_flatten(tuple(args))
    idx = [i for i, x in enumerate(leaves) if _is_float(x)]

    def g(*xs):
        full = list(leaves)
        for i, x in zip(idx, xs):
            full[i] = x
        return f(*tree_unflatten(tree, full))

    return g, [leaves[i] for i in idx]


def _scalar_loss(f: Callable) -> Callable:
    """A scalar function of f's output: a fixed weighted sum of its floating-point leaves (integers ignored)."""
    def loss(*args):
        total = 0.0
        for n, leaf in enumerate(tree_leaves(f(*args))):
            if _is_float(leaf):
                total = total + fluxion.numpy.sum(leaf * fluxion.numpy.cos(leaf + n))
        return total
    return loss


def _float_argnums(args: list) -> tuple:
    return tuple(i for i, a in enumerate(args) if all(_is_float(x) for x in tree_leaves(a)))


def _jax():
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")  # binds `jax.numpy`, which the records reach as `m.numpy`
    return jax


# --------------------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params("values", CASES))
def test_values_eager_jit_and_abstract_eval(case: Case, rng):
    jitted = fluxion.jit(case.f)
    for k in range(BATCH):
        args = case.make_args(rng, k)
        expected = case.ref(*args)
        msg = f"{case.name} (k={k})"
        tu.check_against_numpy(case.f, case.ref, args, tol=case.tol, check_dtypes=False, err_msg=f"{msg} eager")
        tu.assert_allclose(jitted(*args), expected, atol=case.tol, rtol=case.tol, check_dtypes=False,
                           err_msg=f"{msg} jit vs NumPy")
        tu.check_jit(case.f, args, atol=case.tol, rtol=case.tol, err_msg=f"{msg} jit vs eager")
        tu.check_eval_shape(case.f, args, err_msg=f"{msg} eval_shape")


@pytest.mark.parametrize("case", _params("jax", CASES))
def test_values_shapes_and_dtypes_match_jax(case: Case, rng):
    jax = _jax()
    for k in range(BATCH):
        args = case.make_args(rng, k)
        got, want = case.f(*args), case.fn(jax, *args)
        want = jax.tree_util.tree_map(np.asarray, want)
        tu.assert_allclose(got, want, atol=case.tol, rtol=case.tol, check_dtypes=True,
                           err_msg=f"{case.name} (k={k}) vs jax")


# --------------------------------------------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------------------------------------------

_DIFF_CASES = [c for c in CASES if c.modes]
_TRACED_REV_CASES = [c for c in CASES if "rev" in c.modes and c.traced_rev]


def _traced_modes(case: Case) -> tuple:
    """The derivative modes that work once the case's integer arguments are traced (batched)."""
    return tuple(md for md in case.modes if md == "fwd" or case.traced_rev)


@pytest.mark.parametrize("case", _params("grads", _DIFF_CASES))
def test_grads_first_and_second_order(case: Case, rng):
    for k in case.grad_ks:
        args = case.make_args(rng, k)
        tu.check_grads(case.f, args, order=2, modes=case.modes, rng=rng, err_msg=f"{case.name} (k={k})")


@pytest.mark.parametrize("case", _params("jit_grads", _DIFF_CASES))
def test_jitted_derivatives_match_eager(case: Case, rng):
    """The control-flow JVP (and transpose) rules staged and compiled give the eager derivatives."""
    args = case.make_args(rng, case.grad_ks[0])
    g, xs = _float_part(case.f, args)
    ts = [rng.standard_normal(np.shape(x)).astype(f32) for x in xs]

    def jvp(*xs):
        return fluxion.jvp(g, tuple(xs), tuple(ts))

    tu.check_jit(jvp, xs, atol=1e-5, rtol=1e-5, err_msg=f"{case.name} jit(jvp)")
    if "rev" in case.modes:
        out = g(*xs)
        cts = tree_map(lambda o: rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype)
                       if _is_float(o) else np.zeros(np.shape(o), np.asarray(o).dtype), out)

        def vjp(*xs):
            return fluxion.vjp(g, *xs)[1](cts)

        tu.check_jit(vjp, xs, atol=1e-5, rtol=1e-5, err_msg=f"{case.name} jit(vjp)")


@pytest.mark.parametrize("case", _params("linearize", _DIFF_CASES))
def test_linearize_tangents_match_jvp(case: Case, rng):
    """`linearize` (forward mode staged into a linear jaxpr; the only route for while_loop) agrees with `jvp`."""
    for k in case.grad_ks:
        args = case.make_args(rng, k)
        g, xs = _float_part(case.f, args)
        ts = [rng.standard_normal(np.shape(x)).astype(f32) for x in xs]
        _, f_jvp = fluxion.linearize(g, *xs)
        tu.assert_allclose(f_jvp(*ts), fluxion.jvp(g, tuple(xs), tuple(ts))[1], atol=1e-5, rtol=1e-5,
                           err_msg=f"{case.name} (k={k}) linearize vs jvp")


@pytest.mark.parametrize("case", _params("linearize_primal", _DIFF_CASES))
def test_linearize_and_vjp_return_concrete_primal_outputs(case: Case, rng):
    args = case.make_args(rng, case.grad_ks[0])
    g, xs = _float_part(case.f, args)
    expected = g(*xs)
    for how, (out, _) in [("linearize", fluxion.linearize(g, *xs)), ("vjp", fluxion.vjp(g, *xs))]:
        for leaf in tree_leaves(out):
            assert isinstance(leaf, fluxion.Array), f"{case.name}: {how} primal output {leaf!r} is not an Array"
        tu.assert_allclose(out, expected, err_msg=f"{case.name} {how} primal output")


@pytest.mark.parametrize("case", _params("vmap_grad", _TRACED_REV_CASES))
def test_vmap_of_grad_matches_loop(case: Case, rng):
    examples = [case.make_args(rng, k) for k in range(BATCH)]
    argnums = _float_argnums(examples[0])
    grad = fluxion.grad(_scalar_loss(case.f), argnums=argnums)
    tu.check_batching(grad, _stack(examples, (0,) * len(examples[0])), in_axes=0, atol=1e-5, rtol=1e-5,
                      err_msg=f"{case.name} vmap(grad)")


@pytest.mark.parametrize("case", _params("grad_vmap", _DIFF_CASES))
def test_grads_of_vmap(case: Case, rng):
    """Derivatives of the batched function (batched predicates and trip counts included) against differences."""
    examples = [case.make_args(rng, k) for k in range(BATCH)]
    batched = fluxion.vmap(case.f, in_axes=0)
    tu.check_grads(batched, _stack(examples, (0,) * len(examples[0])), order=1, modes=_traced_modes(case), rng=rng,
                   err_msg=f"{case.name} grad(vmap)")


# --------------------------------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case,axes", _batch_params())
def test_vmap_matches_loop(case: Case, axes, rng):
    examples = [case.make_args(rng, k) for k in range(BATCH)]
    tu.check_batching(case.f, _stack(examples, axes), in_axes=axes, atol=case.tol, rtol=case.tol,
                      err_msg=f"{case.name} vmap{axes}")


@pytest.mark.parametrize("case", _params("jit_vmap", [CASES_BY_NAME[n] for n in (
    "cond_bool", "switch_3_branches_clamped", "while_trip_count", "fori_traced_bounds", "nested_scan_cond_scan",
    "nested_cond_in_while")]))
def test_jit_of_vmap_matches_eager(case: Case, rng):
    """Batched predicates / trip counts staged and compiled (the batched while and select paths)."""
    examples = [case.make_args(rng, k) for k in range(BATCH)]
    tu.check_jit(fluxion.vmap(case.f), _stack(examples, (0,) * len(examples[0])), atol=1e-6, rtol=1e-6,
                 err_msg=f"{case.name} jit(vmap)")


# --------------------------------------------------------------------------------------------------------------
# Reverse mode through while_loop, and structural errors, against JAX's error classes
# --------------------------------------------------------------------------------------------------------------

def _raised(fn) -> type:
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the class is what is compared)
        return type(e)
    raise AssertionError("expected an exception")


_X = np.linspace(0.5, 1.0, 3).astype(f32)


def _grad_while_counter(m):
    return m.grad(lambda x: m.numpy.sum(_while_counter(m, x)[1]))(_X)


def _grad_while_constant_trip_count(m):  # the trip count is a closed-over constant, but the loop is a while_loop
    return m.grad(lambda x: m.numpy.sum(_while_trip_count(m, np.int32(2), x, x)))(_X)


def _jit_grad_fori_traced_bounds(m):
    return m.jit(lambda n, x: m.grad(lambda x: m.numpy.sum(_fori_traced(m, 0, n, x)))(x))(np.int32(3), _X)


def _grad_vmap_while(m):
    def loss(x):
        return m.numpy.sum(m.vmap(lambda n, x: _while_trip_count(m, n, x, x))(np.arange(3, dtype=i32), x))
    return m.grad(loss)(np.ones((3, 3), f32))


@pytest.mark.parametrize("fn", [_grad_while_counter, _grad_while_constant_trip_count, _jit_grad_fori_traced_bounds,
                                _grad_vmap_while], ids=lambda f: f.__name__.lstrip("_"))
def test_reverse_mode_through_while_loop_raises_like_jax(fn):
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        fn(fluxion)
    assert _raised(lambda: fn(_jax())) is ValueError


def test_fori_loop_with_concrete_bounds_supports_reverse_mode_like_jax():
    x = np.linspace(0.5, 1.0, 3).astype(f32)
    lo, hi = np.int32(1), np.int32(4)

    def loss(m):
        return m.grad(lambda x: m.numpy.sum(_fori_traced(m, lo, hi, x)))

    got = loss(fluxion)(x)
    tu.check_grads(lambda x: _fori_traced(fluxion, lo, hi, x), [x], order=2, rng=np.random.default_rng(1))
    jax = _jax()
    tu.assert_allclose(got, np.asarray(loss(jax)(x)), atol=1e-5, rtol=1e-5)


_X3 = np.ones(3, f32)

# name -> (m -> the failing call, the exception class JAX raises)
_MISUSES = {
    "cond_branch_shapes_differ": (lambda m: m.lax.cond(True, lambda x: x, lambda x: x[:2], _X3), TypeError),
    "cond_branch_structures_differ": (lambda m: m.lax.cond(True, lambda x: x, lambda x: (x, x), _X3), TypeError),
    "cond_branch_dtypes_differ": (lambda m: m.lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), _X3),
                                  TypeError),
    "cond_nonscalar_predicate": (lambda m: m.lax.cond(np.ones(2, bool), lambda x: x, lambda x: x, _X3), TypeError),
    "switch_no_branches": (lambda m: m.lax.switch(0, [], _X3), ValueError),
    "switch_float_index": (lambda m: m.lax.switch(np.float32(1), [lambda x: x, lambda x: x], _X3), TypeError),
    "while_cond_not_boolean": (lambda m: m.lax.while_loop(lambda c: c, lambda c: c, np.float32(1)), TypeError),
    "while_body_changes_shape": (lambda m: m.lax.while_loop(lambda c: c[0] < 1, lambda c: c[:2], _X3), TypeError),
    "scan_carry_dtype_changes": (lambda m: m.lax.scan(lambda c, x: (c.astype(np.int32), x), np.float32(1), _X3),
                                 TypeError),
    "scan_carry_structure_changes": (lambda m: m.lax.scan(lambda c, x: ((c, c), x), np.float32(1), _X3),
                                     TypeError),
    "scan_without_xs_or_length": (lambda m: m.lax.scan(lambda c, x: (c, x), np.float32(1), None), ValueError),
    "scan_inconsistent_lengths": (lambda m: m.lax.scan(lambda c, x: (c, x), np.float32(1), (_X3, np.ones(4, f32))),
                                  ValueError),
    "scan_length_disagrees_with_xs": (lambda m: m.lax.scan(lambda c, x: (c, x), np.float32(1), _X3, length=4),
                                      ValueError),
}


@pytest.mark.parametrize("name", list(_MISUSES))
def test_misuse_raises_the_error_class_jax_raises(name):
    call, expected = _MISUSES[name]
    with pytest.raises(expected):
        call(fluxion)
    jax = _jax()
    assert issubclass(_raised(lambda: call(jax)), expected), "the table's expected class is not what JAX raises"


# --------------------------------------------------------------------------------------------------------------
# Weak types of control-flow outputs (they decide the dtype of later arithmetic with low-precision arrays)
# --------------------------------------------------------------------------------------------------------------

_WEAK_OUTPUTS = {
    "cond_literal_branches": lambda m: m.lax.cond(True, lambda: 1.0, lambda: 2.0),
    "cond_strong_operand": lambda m: m.lax.cond(True, lambda x: x, lambda x: x * 2, _X3),
    "cond_mixed_weak_and_strong": lambda m: m.lax.cond(True, lambda: 1.0, lambda: np.float32(2)),
    "switch_literal_branches": lambda m: m.lax.switch(1, [lambda: 0, lambda: 1, lambda: 2]),
    "while_literal_counter": lambda m: m.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2),
                                                         (0, _X3)),
    "fori_literal_carry": lambda m: m.lax.fori_loop(0, 3, lambda i, c: c + 1.0, 0.0),
    "scan_literal_carry_without_xs": lambda m: m.lax.scan(lambda c, _: (c + 1.0, c * 2), 0.0, None, length=3),
}

@pytest.mark.parametrize("name", list(_WEAK_OUTPUTS))
def test_output_weak_types_match_jax(name):
    jax = _jax()
    fn = _WEAK_OUTPUTS[name]
    got = [(np.dtype(x.dtype), bool(x.weak_type)) for x in tree_leaves(fn(fluxion))]
    want = [(np.dtype(x.dtype), bool(x.weak_type)) for x in jax.tree_util.tree_leaves(fn(jax))]
    assert got == want
    staged = [(np.dtype(a.dtype), bool(a.weak_type)) for a in fluxion.make_jaxpr(lambda: fn(fluxion))().out_avals]
    assert staged == want


# --------------------------------------------------------------------------------------------------------------
# Weakly typed initial carries take the body's dtype (JAX promotes a weak init carry to the body output's dtype)
# --------------------------------------------------------------------------------------------------------------

_XS5 = np.arange(5, dtype=f32)
_XS5_BF16 = _XS5.astype(ml_dtypes.bfloat16)

# name -> (m -> the loop's outputs (a pytree), [(dtype, weak_type, value) per leaf] as JAX 0.10 gives them)
_WEAK_CARRIES = {
    "fori_static_bounds": (lambda m, xs: m.lax.fori_loop(0, 5, lambda i, c: c + xs[i], 0), _XS5,
                           [(f32, False, 10.0)]),
    # The upper bound is traced under jit (fori_loop lowers to while_loop there) and concrete eagerly (scan).
    "fori_traced_bounds": (lambda m, xs: m.lax.fori_loop(0, (xs[0] * 0).astype(np.int32) + 5,
                                                         lambda i, c: c + xs[i], 0), _XS5, [(f32, False, 10.0)]),
    "while_counter_and_sum": (lambda m, xs: m.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] + xs[c[0]]),
                                                             (0, 0)), _XS5, [(i32, True, 5), (f32, False, 10.0)]),
    "scan_int_literal": (lambda m, xs: m.lax.scan(lambda c, x: (c + x, c), 0, xs), _XS5,
                         [(f32, False, 10.0), (f32, False, [0, 0, 1, 3, 6])]),
    "scan_float_literal_bf16_body": (lambda m, xs: m.lax.scan(lambda c, x: (c + x, c), 0.0, xs), _XS5_BF16,
                                     [(bf16, False, 10.0), (bf16, False, [0, 0, 1, 3, 6])]),
    "fori_bf16_body": (lambda m, xs: m.lax.fori_loop(0, 5, lambda i, c: c * 0.5 + xs[i], 1.0), _XS5_BF16,
                       [(bf16, False, 6.15625)]),
    "scan_weak_int_to_weak_float": (lambda m, xs: m.lax.scan(lambda c, x: (c + 0.5, x), 0, xs), _XS5,
                                    [(f32, False, 2.5), (f32, False, [0, 1, 2, 3, 4])]),
}


@pytest.mark.parametrize("mode", ["eager", "jit", "fused"])
@pytest.mark.parametrize("name", list(_WEAK_CARRIES))
def test_weak_initial_carry_takes_the_body_dtype(name, mode):
    fn, xs, want = _WEAK_CARRIES[name]
    if mode == "eager":
        out = fn(fluxion, fluxion.numpy.asarray(xs))
    else:
        with fluxion.config.override("fluxion_check_fusion", mode == "fused"):
            out = fluxion.jit(lambda v: fn(fluxion, v))(xs)
    got = tree_leaves(out)
    assert [(np.dtype(x.dtype), bool(x.aval.weak_type)) for x in got] == [(np.dtype(d), w) for d, w, _ in want]
    for x, (_, _, v) in zip(got, want):
        np.testing.assert_array_equal(np.asarray(x, np.float64), np.asarray(v, np.float64))


@pytest.mark.parametrize("name", list(_WEAK_CARRIES))
def test_weak_initial_carry_table_is_what_jax_gives(name):
    jax = _jax()
    fn, xs, want = _WEAK_CARRIES[name]
    got = jax.tree_util.tree_leaves(fn(jax, jax.numpy.asarray(xs)))
    assert [(np.dtype(x.dtype), bool(x.weak_type)) for x in got] == [(np.dtype(d), w) for d, w, _ in want]
    for x, (_, _, v) in zip(got, want):
        np.testing.assert_array_equal(np.asarray(x, np.float64), np.asarray(v, np.float64))


@pytest.mark.parametrize("loop, call", [
    ("fori_loop", lambda m: m.lax.fori_loop(0, 2, lambda i, c: c.astype(np.int32), _X3)),
    ("fori_loop", lambda m: m.lax.fori_loop(0, m.numpy.int32(2), lambda i, c: (c[0], c[1][:2]), (1.0, _X3))),
    ("while_loop", lambda m: m.lax.while_loop(lambda c: False, lambda c: c.astype(np.int32), _X3)),
    ("scan", lambda m: m.lax.scan(lambda c, x: ({"w": c["w"].astype(np.int32)}, x), {"w": _X3}, _X3)),
])
def test_carry_type_errors_name_the_loop_called(loop, call):
    with pytest.raises(TypeError, match=rf"^{loop} body function carry input and carry output must have equal "
                                         r"types") as info:
        call(fluxion)
    assert "init_val" in str(info.value) or "init['w']" in str(info.value)
    assert issubclass(_raised(lambda: call(_jax())), TypeError)
