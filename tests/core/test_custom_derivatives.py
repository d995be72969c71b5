"""Table-driven tests of user-defined derivatives: `custom_jvp`, `custom_vjp` and `lax.stop_gradient`.

One record per custom function. Each is built by `build(m)` against a library module `m` (`fluxion`, or real
`jax` as an oracle) and covers a feature: `nondiff_argnums` (static values and functions), pytrees in and out,
`defjvps`, residual pytrees, `None` cotangents. Records whose rule is the true derivative are checked against
finite differences (to second order); records whose rule deliberately differs from the derivative of the primal
(straight-through rounding, a scaled rule, gradient clipping, a dropped cotangent) carry a NumPy reference of the
rule's VJP, so a transformation that bypassed the rule and differentiated the primal instead would be caught.
Each record is checked for:

* values eagerly and under `jit` against NumPy, and against abstract evaluation;
* derivatives: finite differences (true rules) or the rule's reference (deliberate rules), eagerly and with
  `jit` inside and outside the differentiation;
* `vmap` of the function and of its derivatives against a Python loop (so the rules must be batched);
* values, JVPs (custom_jvp), VJPs, second derivatives and batched VJPs against real JAX where it is installed;
* forward mode on a `custom_vjp` function raises the error class JAX raises.

Closures over tracers (vmap, jit and control-flow tracers captured by the function and its rule), `stop_gradient`,
`symbolic_zeros` and the rules' error checks have their own tests at the end. Known core bugs are strict xfails,
each with a reproducer.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import pytest

import fluxion
from fluxion._src import test_util as tu
from fluxion.tree_util import tree_leaves, tree_map

f32 = np.float32


def _jax():
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")  # binds `jax.numpy`, which the builders reach as `m.numpy`
    return jax


@dataclasses.dataclass(frozen=True)
class Case:
    """One custom-derivative function under test.

    Attributes:
      name: test id.
      build: m -> the function (positional pytree arguments), built with `m.custom_jvp` / `m.custom_vjp`.
      ref: NumPy reference of the primal function.
      make_args: rng -> list of NumPy arguments (pytrees of float32 arrays).
      kind: "jvp" (custom_jvp: both modes) or "vjp" (custom_vjp: reverse mode only).
      vjp_ref: for a rule that is deliberately not the derivative of the primal, the NumPy VJP the rule defines,
        vjp_ref(args, cts) -> list of cotangents (one pytree per argument); None for true derivatives (then
        finite differences are the reference).
    """

    name: str
    build: Callable
    ref: Callable
    make_args: Callable
    kind: str = "jvp"
    vjp_ref: Callable | None = None

    @property
    def f(self) -> Callable:
        return self.build(fluxion)

    @property
    def modes(self) -> tuple:
        return ("fwd", "rev") if self.kind == "jvp" else ("rev",)


def _normal(rng, *shape):
    return rng.standard_normal(shape).astype(f32)


# --------------------------------------------------------------------------------------------------------------
# custom_jvp builders (cached per library module, so each library's custom function is created once)
# --------------------------------------------------------------------------------------------------------------

@functools.cache
def _log1pexp(m):
    """log(1 + e^x) with the numerically stable derivative sigmoid(x) (a true derivative)."""
    @m.custom_jvp
    def f(x):
        return m.numpy.log1p(m.numpy.exp(x))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t / (1.0 + m.numpy.exp(-x))

    return f


@functools.cache
def _power_static(m):
    """x ** n with n a static (nondiff_argnums) Python int, applied with n = 3."""
    @functools.partial(m.custom_jvp, nondiff_argnums=(1,))
    def f(x, n):
        return x ** n

    @f.defjvp
    def f_jvp(n, primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x, n), n * x ** (n - 1) * t

    return lambda x: f(x, 3)


@functools.cache
def _apply_function(m):
    """2 g(x) with the function g a nondiff argument; the rule differentiates g with a nested `jvp`."""
    @functools.partial(m.custom_jvp, nondiff_argnums=(0,))
    def f(g, x):
        return 2.0 * g(x)

    @f.defjvp
    def f_jvp(g, primals, tangents):
        (x,), (t,) = primals, tangents
        y, dy = m.jvp(g, (x,), (t,))
        return 2.0 * y, 2.0 * dy

    return lambda x: f(m.numpy.tanh, x)


def _apply_function_ref(x):
    return 2.0 * np.tanh(x)


@functools.cache
def _pytree_jvp(m):
    """{"a": x, "b": (y,)} -> (x * y, {"s": sin(x)}): pytrees in and out."""
    @m.custom_jvp
    def f(t):
        x, (y,) = t["a"], t["b"]
        return x * y, {"s": m.numpy.sin(x)}

    @f.defjvp
    def f_jvp(primals, tangents):
        (t,), (dt,) = primals, tangents
        x, (y,) = t["a"], t["b"]
        dx, (dy,) = dt["a"], dt["b"]
        return f(t), (dx * y + x * dy, {"s": m.numpy.cos(x) * dx})

    return f


def _pytree_jvp_ref(t):
    x, (y,) = t["a"], t["b"]
    return x * y, {"s": np.sin(x)}


@functools.cache
def _defjvps(m):
    """x * sin(y) with one rule per argument (`defjvps`)."""
    @m.custom_jvp
    def f(x, y):
        return x * m.numpy.sin(y)

    f.defjvps(lambda tx, ans, x, y: tx * m.numpy.sin(y), lambda ty, ans, x, y: x * m.numpy.cos(y) * ty)
    return f


@functools.cache
def _straight_through_round(m):
    """round(x) with the identity as its JVP (the straight-through estimator: deliberately not the derivative)."""
    @m.custom_jvp
    def f(x):
        return m.numpy.round(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0]))
    return f


@functools.cache
def _scaled_sin(m):
    """sin(x) with the rule 2 cos(x) t: twice the true derivative, so using the rule is observable (also in the
    second derivative, -2 sin(x))."""
    @m.custom_jvp
    def f(x):
        return m.numpy.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * m.numpy.cos(x) * t

    return f


# --------------------------------------------------------------------------------------------------------------
# custom_vjp builders
# --------------------------------------------------------------------------------------------------------------

@functools.cache
def _sin_times(m):
    """sin(x) * y with residuals (cos(x), sin(x), y) (a true derivative)."""
    @m.custom_vjp
    def f(x, y):
        return m.numpy.sin(x) * y

    def fwd(x, y):
        s = m.numpy.sin(x)
        return s * y, (m.numpy.cos(x), s, y)

    def bwd(res, ct):
        c, s, y = res
        return c * y * ct, s * ct

    f.defvjp(fwd, bwd)
    return f


@functools.cache
def _vjp_apply_function(m):
    """g(x) with the function g a nondiff argument; bwd takes g first and differentiates it with a nested `vjp`."""
    @functools.partial(m.custom_vjp, nondiff_argnums=(0,))
    def f(g, x):
        return g(x)

    def fwd(g, x):
        return g(x), x

    def bwd(g, x, ct):
        return (m.vjp(g, x)[1](ct)[0],)

    f.defvjp(fwd, bwd)
    return lambda x: f(m.numpy.sin, x)


@functools.cache
def _clip_gradient(m):
    """The identity whose cotangent is clipped to [lo, hi] (static float nondiff arguments lo=-0.5, hi=0.5)."""
    @functools.partial(m.custom_vjp, nondiff_argnums=(0, 1))
    def f(lo, hi, x):
        return x

    def fwd(lo, hi, x):
        return x, None

    def bwd(lo, hi, _, ct):
        return (m.numpy.clip(ct, lo, hi),)

    f.defvjp(fwd, bwd)
    return lambda x: f(-0.5, 0.5, x)


@functools.cache
def _dropped_cotangent(m):
    """(x, y) -> {"p": x * y, "q": x + y} whose bwd returns None for y (so y's gradient is zero by decree)."""
    @m.custom_vjp
    def f(t):
        x, y = t
        return {"p": x * y, "q": x + y}

    def fwd(t):
        return f(t), t[1]

    def bwd(y, ct):
        return ((ct["p"] * y + ct["q"], None),)

    f.defvjp(fwd, bwd)
    return f


@functools.cache
def _residual_pytree(m):
    """exp(x) * y: residuals are a dict holding a tuple (a true derivative)."""
    @m.custom_vjp
    def f(x, y):
        return m.numpy.exp(x) * y

    def fwd(x, y):
        e = m.numpy.exp(x)
        return e * y, {"e": e, "ys": (y,)}

    def bwd(res, ct):
        e, (y,) = res["e"], res["ys"]
        return e * y * ct, e * ct

    f.defvjp(fwd, bwd)
    return f


CASES = [
    # -- custom_jvp ------------------------------------------------------------------------------------------------
    Case("jvp_log1pexp", _log1pexp, lambda x: np.log1p(np.exp(x)), lambda rng: [3 * _normal(rng, 4)]),
    Case("jvp_nondiff_static_int", _power_static, lambda x: x ** 3, lambda rng: [_normal(rng, 2, 3)]),
    Case("jvp_nondiff_function", _apply_function, _apply_function_ref, lambda rng: [_normal(rng, 3)]),
    Case("jvp_pytrees_in_and_out", _pytree_jvp, _pytree_jvp_ref,
         lambda rng: [{"a": _normal(rng, 3), "b": (_normal(rng, 3),)}]),
    Case("jvp_defjvps", _defjvps, lambda x, y: x * np.sin(y), lambda rng: [_normal(rng, 3), _normal(rng, 3)]),
    Case("jvp_straight_through_round", _straight_through_round, np.round, lambda rng: [3 * _normal(rng, 4)],
         vjp_ref=lambda args, ct: [ct]),
    Case("jvp_scaled_rule", _scaled_sin, np.sin, lambda rng: [_normal(rng, 4)],
         vjp_ref=lambda args, ct: [2 * np.cos(args[0]) * ct]),
    # -- custom_vjp ------------------------------------------------------------------------------------------------
    Case("vjp_residuals", _sin_times, lambda x, y: np.sin(x) * y, lambda rng: [_normal(rng, 3), _normal(rng, 3)],
         kind="vjp"),
    Case("vjp_nondiff_function", _vjp_apply_function, np.sin, lambda rng: [_normal(rng, 2, 2)], kind="vjp"),
    Case("vjp_clip_gradient", _clip_gradient, lambda x: x, lambda rng: [_normal(rng, 5)], kind="vjp",
         vjp_ref=lambda args, ct: [np.clip(ct, -0.5, 0.5)]),
    Case("vjp_pytrees_none_cotangent", _dropped_cotangent, lambda t: {"p": t[0] * t[1], "q": t[0] + t[1]},
         lambda rng: [(_normal(rng, 3), _normal(rng, 3))], kind="vjp",
         vjp_ref=lambda args, ct: [(ct["p"] * args[0][1] + ct["q"], np.zeros_like(args[0][1]))]),
    Case("vjp_residual_pytree", _residual_pytree, lambda x, y: np.exp(x) * y,
         lambda rng: [_normal(rng, 3), _normal(rng, 3)], kind="vjp"),
]

CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names in the table"

_TRUE_RULES = [c for c in CASES if c.vjp_ref is None]
_DELIBERATE_RULES = [c for c in CASES if c.vjp_ref is not None]
_JVP_CASES = [c for c in CASES if c.kind == "jvp"]
_VJP_CASES = [c for c in CASES if c.kind == "vjp"]


def _params(cases) -> list:
    return [pytest.param(c, id=c.name) for c in cases]


def _random_like(rng, tree):
    return tree_map(lambda x: rng.standard_normal(np.shape(x)).astype(f32), tree)


def _vjp_fn(f: Callable) -> Callable:
    """(args..., cts) -> the cotangents of f's arguments (a function of primals and cotangents, to transform)."""
    def vjp(*args_and_cts):
        *args, cts = args_and_cts
        return tuple(fluxion.vjp(f, *args)[1](cts))
    return vjp


def _as_numpy(tree):
    return tree_map(np.asarray, tree)


# --------------------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params(CASES))
def test_values_eager_jit_and_abstract_eval(case: Case, rng):
    args = case.make_args(rng)
    tu.check_against_numpy(case.f, case.ref, args, tol=1e-5, check_dtypes=False, err_msg=f"{case.name} eager")
    tu.check_jit(case.f, args, atol=1e-6, rtol=1e-6, err_msg=f"{case.name} jit vs eager")
    tu.check_eval_shape(case.f, args, err_msg=f"{case.name} eval_shape")


# --------------------------------------------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params(_TRUE_RULES))
def test_true_rules_match_finite_differences_to_second_order(case: Case, rng):
    args = case.make_args(rng)
    tu.check_grads(case.f, args, order=2, modes=case.modes, rng=rng, err_msg=case.name)
    tu.check_grads(fluxion.jit(case.f), args, order=1, modes=case.modes, rng=rng, err_msg=f"{case.name} grad(jit)")


@pytest.mark.parametrize("case", _params(_DELIBERATE_RULES))
def test_deliberate_rules_are_used_eagerly_and_under_jit(case: Case, rng):
    """The VJP is the rule's (not the primal's derivative): eagerly, jitted inside and outside, and as a JVP."""
    args = case.make_args(rng)
    cts = _random_like(rng, case.ref(*args))
    expected = tuple(case.vjp_ref(args, cts))
    tu.assert_allclose(tuple(fluxion.vjp(case.f, *args)[1](cts)), expected, atol=1e-6, rtol=1e-6,
                       err_msg=f"{case.name} vjp")
    tu.assert_allclose(fluxion.jit(_vjp_fn(case.f))(*args, cts), expected, atol=1e-6, rtol=1e-6,
                       err_msg=f"{case.name} jit(vjp)")
    tu.assert_allclose(_vjp_fn(fluxion.jit(case.f))(*args, cts), expected, atol=1e-6, rtol=1e-6,
                       err_msg=f"{case.name} vjp(jit)")
    if case.kind == "jvp":  # the JVP is the transpose of the reference VJP: <ct, J t> == <J^T ct, t>
        ts = _random_like(rng, args)
        for jvp in (fluxion.jvp, fluxion.jit(fluxion.jvp, static_argnums=0)):
            _, t_out = jvp(case.f, tuple(args), tuple(ts))
            lhs = sum(float(np.sum(np.asarray(a) * b)) for a, b in zip(tree_leaves(t_out), tree_leaves(cts)))
            rhs = sum(float(np.sum(a * b)) for a, b in zip(tree_leaves(expected), tree_leaves(ts)))
            assert abs(lhs - rhs) <= 1e-5 * max(1.0, abs(rhs)), f"{case.name}: <ct, jvp> {lhs} != <vjp, t> {rhs}"


@pytest.mark.parametrize("case", _params(CASES))
def test_jitted_derivatives_match_eager(case: Case, rng):
    args = case.make_args(rng)
    cts = _random_like(rng, case.ref(*args))
    tu.check_jit(_vjp_fn(case.f), [*args, cts], atol=1e-6, rtol=1e-6, err_msg=f"{case.name} jit(vjp)")
    if case.kind == "jvp":
        ts = _random_like(rng, args)
        tu.check_jit(lambda *xs: fluxion.jvp(case.f, xs, tuple(ts)), args, atol=1e-6, rtol=1e-6,
                     err_msg=f"{case.name} jit(jvp)")


def _forward_mode_calls(args, ts) -> dict:
    return {"jvp": lambda m, f: m.jvp(f, tuple(args), ts),
            "jit_of_jvp": lambda m, f: m.jit(lambda *xs: m.jvp(f, xs, ts))(*args),
            "jvp_of_jit": lambda m, f: m.jvp(m.jit(f), tuple(args), ts),
            "jacfwd": lambda m, f: m.jacfwd(f)(*args)}


_JACFWD_CUSTOM_VJP = ("core bug: jacfwd of a custom_vjp function raises NotImplementedError 'Batching rule for "
                      "custom_lin not implemented' (jacfwd vmaps the JVP, and the custom_lin stand-in has no batching "
                      "rule) instead of JAX's TypeError \"can't apply forward-mode autodiff (jvp) to a custom_vjp "
                      "function\"; repro: fluxion.jacfwd(f)(x) for any custom_vjp f")


@pytest.mark.parametrize("how", [pytest.param(h, marks=[pytest.mark.xfail(reason=_JACFWD_CUSTOM_VJP, strict=True)]
                                              if h == "jacfwd" else []) for h in _forward_mode_calls([], ())])
@pytest.mark.parametrize("case", _params(_VJP_CASES))
def test_forward_mode_on_custom_vjp_raises_like_jax(case: Case, how, rng):
    args = case.make_args(rng)
    call = _forward_mode_calls(args, tuple(_random_like(rng, args)))[how]
    jax = _jax()
    with pytest.raises(TypeError):  # (the expectation is JAX's behaviour)
        call(jax, case.build(jax))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        call(fluxion, case.f)


# --------------------------------------------------------------------------------------------------------------
# Batching: the rules run batched
# --------------------------------------------------------------------------------------------------------------

B = 3  # batch size


def _batched_args(case, rng, n=B):
    examples = [case.make_args(rng) for _ in range(n)]
    return [tree_map(lambda *xs: np.stack(xs), *[e[j] for e in examples]) for j in range(len(examples[0]))]


def _vmap_axes(nargs: int) -> list:
    return [(0,) * nargs] + ([tuple(None if j == i else 0 for j in range(nargs)) for i in range(nargs)]
                             if nargs > 1 else [])


@pytest.mark.parametrize("case", _params(CASES))
def test_vmap_of_function_matches_loop(case: Case, rng):
    args = _batched_args(case, rng)
    for axes in _vmap_axes(len(args)):
        unbatched = [a if ax is not None else tree_map(lambda x: x[0], a) for a, ax in zip(args, axes)]
        tu.check_batching(case.f, unbatched, in_axes=axes, atol=1e-6, rtol=1e-6, err_msg=f"{case.name} {axes}")


@pytest.mark.parametrize("case", _params(CASES))
def test_vmap_of_derivatives_matches_loop(case: Case, rng):
    args = _batched_args(case, rng)
    cts = _random_like(rng, fluxion.vmap(case.f)(*args))
    nargs = len(args) + 1
    tu.check_batching(_vjp_fn(case.f), [*args, cts], in_axes=(0,) * nargs, atol=1e-5, rtol=1e-5,
                      err_msg=f"{case.name} vmap(vjp)")
    one = [tree_map(lambda x: x[0], a) for a in args]  # primals unbatched, cotangents batched
    tu.check_batching(_vjp_fn(case.f), [*one, cts], in_axes=(None,) * len(args) + (0,), atol=1e-5, rtol=1e-5,
                      err_msg=f"{case.name} vmap(vjp) over cotangents only")
    if case.vjp_ref is not None:  # and the batched rule is the rule
        got = fluxion.vmap(_vjp_fn(case.f))(*args, cts)
        def example(tree, i):
            return tree_map(lambda x: x[i], tree)

        want = [case.vjp_ref([example(a, i) for a in args], example(cts, i)) for i in range(B)]
        stacked = tuple(tree_map(lambda *xs: np.stack(xs), *[w[j] for w in want]) for j in range(len(args)))
        tu.assert_allclose(got, stacked, atol=1e-6, rtol=1e-6, err_msg=f"{case.name} vmap(vjp) vs rule")
    if case.kind == "jvp":
        ts = _random_like(rng, args)
        tu.check_batching(lambda *xs: fluxion.jvp(case.f, xs[:len(args)], xs[len(args):]), [*args, *ts], in_axes=0,
                          atol=1e-5, rtol=1e-5, err_msg=f"{case.name} vmap(jvp)")


@pytest.mark.parametrize("case", _params(_TRUE_RULES))
def test_grads_of_vmap_match_finite_differences(case: Case, rng):
    tu.check_grads(fluxion.vmap(case.f), _batched_args(case, rng), order=1, modes=case.modes, rng=rng,
                   err_msg=f"{case.name} grad(vmap)")


# --------------------------------------------------------------------------------------------------------------
# Real JAX as an oracle
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params(CASES))
def test_values_and_derivatives_match_jax(case: Case, rng):
    jax = _jax()
    fj, ff = case.build(jax), case.f
    args = case.make_args(rng)
    out = ff(*args)
    tu.assert_allclose(_as_numpy(out), _as_numpy(fj(*args)), atol=1e-6, rtol=1e-6, err_msg=f"{case.name} value")
    cts = _random_like(rng, _as_numpy(out))
    got = tuple(fluxion.vjp(ff, *args)[1](cts))
    want = tuple(jax.vjp(fj, *args)[1](cts))
    tu.assert_allclose(_as_numpy(got), _as_numpy(want), atol=1e-5, rtol=1e-5, err_msg=f"{case.name} vjp")
    if case.kind == "jvp":
        ts = tuple(_random_like(rng, args))
        tu.assert_allclose(_as_numpy(fluxion.jvp(ff, tuple(args), ts)[1]), _as_numpy(jax.jvp(fj, tuple(args), ts)[1]),
                           atol=1e-5, rtol=1e-5, err_msg=f"{case.name} jvp")
    # second order: reverse over the VJP (cotangents fixed), at a second cotangent
    cts2 = _random_like(rng, args)

    def second(m, f):
        return tuple(m.vjp(lambda *xs: tuple(m.vjp(f, *xs)[1](cts)), *args)[1](tuple(cts2)))

    tu.assert_allclose(_as_numpy(second(fluxion, ff)), _as_numpy(second(jax, fj)), atol=1e-5, rtol=1e-5,
                       err_msg=f"{case.name} second-order vjp")
    # batched VJP
    bargs = _batched_args(case, rng)
    bcts = _random_like(rng, _as_numpy(jax.vmap(fj)(*bargs)))
    got = fluxion.vmap(_vjp_fn(ff))(*bargs, bcts)
    want = jax.vmap(lambda *a: tuple(jax.vjp(fj, *a[:-1])[1](a[-1])))(*bargs, bcts)
    tu.assert_allclose(_as_numpy(got), _as_numpy(want), atol=1e-5, rtol=1e-5, err_msg=f"{case.name} vmap(vjp)")


def test_second_derivative_through_custom_jvp_uses_the_rule():
    """grad(grad(f)) differentiates the rule's tangent output: for the scaled rule 2 cos(x) t it is -2 sin(x)."""
    f = _scaled_sin(fluxion)
    x = np.linspace(-1.0, 1.0, 5).astype(f32)
    d2 = fluxion.vmap(fluxion.grad(fluxion.grad(f)))(x)
    tu.assert_allclose(d2, -2 * np.sin(x), atol=1e-6, rtol=1e-6)
    tu.assert_allclose(fluxion.jit(fluxion.vmap(fluxion.grad(fluxion.grad(f))))(x), -2 * np.sin(x), atol=1e-6,
                       rtol=1e-6)
    tu.assert_allclose(fluxion.hessian(lambda v: fluxion.numpy.sum(f(v)))(x), np.diag(-2 * np.sin(x)), atol=1e-6,
                       rtol=1e-6)
    jax = _jax()
    fj = _scaled_sin(jax)
    tu.assert_allclose(d2, np.asarray(jax.vmap(jax.grad(jax.grad(fj)))(x)), atol=1e-6, rtol=1e-6)


def test_static_nondiff_argument_through_jit_and_vmap():
    """A custom_jvp with a static int nondiff argument under jit (static_argnums) and vmap (in_axes None)."""
    @functools.partial(fluxion.custom_jvp, nondiff_argnums=(1,))
    def f(x, n):
        return x ** n

    @f.defjvp
    def f_jvp(n, primals, tangents):  # 10x the true derivative, so the rule's use is visible
        (x,), (t,) = primals, tangents
        return f(x, n), 10 * n * x ** (n - 1) * t

    x = np.float32(0.7)
    want = 10 * 3 * 0.7 ** 2
    tu.assert_allclose(fluxion.grad(f)(x, 3), np.float32(want), atol=1e-5, rtol=1e-5)
    tu.assert_allclose(fluxion.jit(fluxion.grad(f), static_argnums=1)(x, 3), np.float32(want), atol=1e-5, rtol=1e-5)
    tu.assert_allclose(fluxion.vmap(fluxion.grad(f), in_axes=(0, None))(np.full(2, x), 3), np.full(2, want, f32),
                       atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------------------------------------------
# Closures over tracers
# --------------------------------------------------------------------------------------------------------------

def _closing_jvp(m, w):
    """sin(x) * w, closing over w (function and rule); the rule is scaled by 2 so its use is visible."""
    @m.custom_jvp
    def f(x):
        return m.numpy.sin(x) * w

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * m.numpy.cos(x) * w * t

    return f


def _closing_vjp(m, w):
    @m.custom_vjp
    def f(x):
        return m.numpy.sin(x) * w

    f.defvjp(lambda x: (f(x), m.numpy.cos(x)), lambda c, ct: (2.0 * c * w * ct,))
    return f


_CLOSURES = {"custom_jvp": _closing_jvp, "custom_vjp": _closing_vjp}

# how the closed-over w becomes a tracer: name -> (m, make) -> grad at x for each of ws
_CLOSURE_TRANSFORMS = {
    "vmap": lambda m, make, x, ws: m.vmap(lambda w: m.grad(make(m, w))(x))(ws),
    "jit": lambda m, make, x, ws: m.numpy.stack([m.jit(lambda w: m.grad(make(m, w))(x))(w) for w in ws]),
    "scan": lambda m, make, x, ws: m.lax.scan(lambda c, w: (c, m.grad(make(m, w))(x)), 0.0, ws)[1],
    "vmap_of_jit": lambda m, make, x, ws: m.vmap(m.jit(lambda w: m.grad(make(m, w))(x)))(ws),
}


@pytest.mark.parametrize("transform", list(_CLOSURE_TRANSFORMS))
@pytest.mark.parametrize("kind", list(_CLOSURES))
def test_closure_over_tracers(kind, transform):
    """The function and its rule close over a value that is a tracer of an enclosing vmap / jit / scan."""
    x = np.float32(0.7)
    ws = np.array([1.0, -2.0, 0.5], f32)
    got = _CLOSURE_TRANSFORMS[transform](fluxion, _CLOSURES[kind], x, ws)
    tu.assert_allclose(got, (2 * np.cos(x) * ws).astype(f32), atol=1e-6, rtol=1e-6)
    jax = _jax()
    tu.assert_allclose(got, np.asarray(_CLOSURE_TRANSFORMS[transform](jax, _CLOSURES[kind], x, ws)), atol=1e-6,
                       rtol=1e-6)


def test_custom_jvp_inside_scan_and_cond_bodies_uses_the_rule():
    """The staged custom_jvp_call equation keeps its rule inside control-flow bodies (scan and cond)."""
    f = _scaled_sin(fluxion)

    def loss(x):
        def body(c, xi):
            return c + fluxion.lax.cond(xi > 0, f, lambda v: 3.0 * v, xi), None
        return fluxion.lax.scan(body, np.float32(0), x)[0]

    x = np.array([0.3, -0.4, 1.1], f32)
    want = np.where(x > 0, 2 * np.cos(x), 3.0).astype(f32)
    tu.assert_allclose(fluxion.grad(loss)(x), want, atol=1e-6, rtol=1e-6)
    tu.assert_allclose(fluxion.jit(fluxion.grad(loss))(x), want, atol=1e-6, rtol=1e-6)


# --------------------------------------------------------------------------------------------------------------
# stop_gradient
# --------------------------------------------------------------------------------------------------------------

# name -> function of x (f32[3]) using stop_gradient; each compared with JAX and with its NumPy gradient
_STOP_GRADIENT = {
    "product": (lambda m, x: m.numpy.sum(x * m.lax.stop_gradient(x)), lambda x: x),
    "pytree": (lambda m, x: m.numpy.sum(m.lax.stop_gradient({"a": x, "b": (x * 2,)})["b"][0] * x), lambda x: 2 * x),
    "squared_norm_direction": (  # d/dx <x, sg(x)> / |sg(x)|^2 = sg(x) / |x|^2
        lambda m, x: m.numpy.sum(x * m.lax.stop_gradient(x)) / m.lax.stop_gradient(m.numpy.sum(x * x)),
        lambda x: x / np.sum(x * x)),
    "cubic_second_factor": (lambda m, x: m.numpy.sum(x ** 2 * m.lax.stop_gradient(x)), lambda x: 2 * x * x),
}


@pytest.mark.parametrize("name", list(_STOP_GRADIENT))
def test_stop_gradient(name):
    fn, grad_ref = _STOP_GRADIENT[name]
    f = functools.partial(fn, fluxion)
    x = np.array([0.5, -1.5, 2.0], f32)
    tu.assert_allclose(fluxion.grad(f)(x), grad_ref(x).astype(f32), atol=1e-6, rtol=1e-6)
    tu.assert_allclose(fluxion.jit(fluxion.grad(f))(x), grad_ref(x).astype(f32), atol=1e-6, rtol=1e-6)
    tu.check_batching(fluxion.grad(f), [np.stack([x, 2 * x, -x])], in_axes=0, atol=1e-6, rtol=1e-6)
    ts = np.array([1.0, 0.5, -2.0], f32)
    tu.assert_allclose(fluxion.jvp(f, (x,), (ts,))[1], np.float32(np.dot(grad_ref(x), ts)), atol=1e-5, rtol=1e-5)
    jax = _jax()
    fj = functools.partial(fn, jax)
    tu.assert_allclose(fluxion.grad(f)(x), np.asarray(jax.grad(fj)(x)), atol=1e-6, rtol=1e-6)
    tu.assert_allclose(fluxion.hessian(f)(x), np.asarray(jax.hessian(fj)(x)), atol=1e-5, rtol=1e-5)


def test_stop_gradient_values_dtypes_and_pytrees():
    tree = {"f": np.array([1.5, -2.0], f32), "i": np.arange(3, dtype=np.int32), "t": (np.float32(3),)}
    out = fluxion.lax.stop_gradient(tree)
    tu.assert_allclose(out, tree)
    tu.assert_allclose(fluxion.jit(fluxion.lax.stop_gradient)(tree), tree)
    tu.check_eval_shape(fluxion.lax.stop_gradient, [tree])
    assert float(fluxion.grad(lambda x: 3.0 * fluxion.lax.stop_gradient(x))(np.float32(2))) == 0.0


# --------------------------------------------------------------------------------------------------------------
# symbolic_zeros
# --------------------------------------------------------------------------------------------------------------

_SYMBOLIC_ZEROS_IGNORED = (
    "core gap: symbolic_zeros=True is accepted and silently ignored: a custom_jvp rule receives dense zero Arrays "
    "for unperturbed inputs (JAX passes SymbolicZero objects), and a custom_vjp fwd receives plain values (JAX "
    "passes CustomVJPPrimal objects with `.value` and `.perturbed`); repro: with f.defjvp(rule, "
    "symbolic_zeros=True) for f(x, y), fluxion.grad(f)(1., 2.) calls rule with an Array as y's tangent")


@pytest.mark.xfail(reason=_SYMBOLIC_ZEROS_IGNORED, strict=True)
def test_custom_jvp_symbolic_zeros_like_jax():
    def tangent_types(m):
        seen = []

        @m.custom_jvp
        def f(x, y):
            return x * y

        def rule(primals, tangents):
            seen.append(tuple(type(t).__name__ for t in tangents))
            (x, y), (tx, ty) = primals, tangents
            zero = type(ty).__name__ == "SymbolicZero"
            return f(x, y), tx * y if zero else tx * y + x * ty

        f.defjvp(rule, symbolic_zeros=True)
        g = m.grad(f)(np.float32(1.5), np.float32(-2))
        return float(g), seen[-1][1]

    jax = _jax()
    assert tangent_types(jax) == (-2.0, "SymbolicZero")  # (the expectation is JAX's behaviour)
    assert tangent_types(fluxion) == (-2.0, "SymbolicZero")


@pytest.mark.xfail(reason=_SYMBOLIC_ZEROS_IGNORED, strict=True)
def test_custom_vjp_symbolic_zeros_like_jax():
    def perturbed_flags(m):
        seen = []

        @m.custom_vjp
        def f(x, y):
            return x * y

        def fwd(x, y):
            seen.append((getattr(x, "perturbed", None), getattr(y, "perturbed", None)))
            return x.value * y.value, (x.value, y.value)

        f.defvjp(fwd, lambda res, ct: (ct * res[1], ct * res[0]), symbolic_zeros=True)
        g = m.grad(f)(np.float32(1.5), np.float32(-2))
        return float(g), seen[-1]

    jax = _jax()
    assert perturbed_flags(jax) == (-2.0, (True, False))
    assert perturbed_flags(fluxion) == (-2.0, (True, False))


# --------------------------------------------------------------------------------------------------------------
# Rule errors, against JAX's error classes
# --------------------------------------------------------------------------------------------------------------

def _jvp_rule_returning(make_tangent):
    def call(m):
        @m.custom_jvp
        def f(x):
            return x

        f.defjvp(lambda primals, tangents: (primals[0], make_tangent(m, tangents[0])))
        return m.jvp(f, (np.float32(1),), (np.float32(1),))
    return call


def _bwd_returning(make_cts, nargs=1):
    def call(m):
        @m.custom_vjp
        def f(*xs):
            return xs[0]

        f.defvjp(lambda *xs: (xs[0], None), lambda _, ct: make_cts(m, ct))
        return m.grad(f)(*[np.float32(1)] * nargs)
    return call


def _no_rule(decorator):
    def call(m):
        f = getattr(m, decorator)(lambda x: x)
        return f(np.float32(1))
    return call


_TANGENT_SHAPE = ("core divergence: a custom_jvp rule whose tangent has the wrong shape raises ValueError; JAX "
                  "raises TypeError ('Custom JVP rule must produce primal and tangent outputs with corresponding "
                  "shapes and dtypes'); repro: a rule returning (x, jnp.ones(3)) for a scalar x, under jvp")
_TANGENT_DTYPE = ("core bug: a custom_jvp rule returning an int32 tangent for a float32 output is accepted (the "
                  "tangent is silently cast); JAX raises TypeError; repro: a rule returning (x, jnp.ones((), "
                  "jnp.int32)) for a float32 scalar x: fluxion.jvp(f, (1.,), (1.,)) returns (1., 1.)")
_COTANGENT_SHAPE = ("core bug: a custom_vjp bwd returning a cotangent of the wrong shape is accepted, and the "
                    "gradient takes that shape; JAX raises ValueError ('Custom VJP bwd rule must produce an output "
                    "with the same type as the args tuple of the primal function'); repro: bwd returning "
                    "(jnp.ones(3),) for a scalar input: fluxion.grad(f)(1.) has shape (3,)")

# name -> (m -> the failing call, the exception class JAX raises, xfail reason or None)
_MISUSES = {
    "custom_jvp_without_rule": (_no_rule("custom_jvp"), AttributeError, None),
    "custom_vjp_without_rule": (_no_rule("custom_vjp"), AttributeError, None),
    "jvp_rule_structure_mismatch": (_jvp_rule_returning(lambda m, t: (t, t)), TypeError, None),
    "jvp_rule_tangent_shape": (_jvp_rule_returning(lambda m, t: m.numpy.ones(3, f32)), TypeError, _TANGENT_SHAPE),
    "jvp_rule_tangent_dtype": (_jvp_rule_returning(lambda m, t: m.numpy.ones((), np.int32)), TypeError,
                               _TANGENT_DTYPE),
    "bwd_returns_non_tuple": (_bwd_returning(lambda m, ct: ct), TypeError, None),
    "bwd_returns_too_few": (_bwd_returning(lambda m, ct: (ct,), nargs=2), TypeError, None),
    "bwd_cotangent_shape": (_bwd_returning(lambda m, ct: (m.numpy.ones(3, f32),)), ValueError, _COTANGENT_SHAPE),
}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[pytest.mark.xfail(reason=r, strict=True)] if r else []) for n, (_, _, r) in
    _MISUSES.items()])
def test_rule_errors_raise_the_class_jax_raises(name):
    call, expected, _ = _MISUSES[name]
    jax = _jax()
    with pytest.raises(expected):  # (the table matches JAX)
        call(jax)
    with pytest.raises(expected):
        call(fluxion)


def _weak_jvp(m):
    @m.custom_jvp
    def f(x, y):
        return x * y, x + 1.0

    f.defjvp(lambda p, t: (f(*p), (t[0] * p[1] + t[1] * p[0], t[0])))
    return f


def _weak_vjp(m):
    @m.custom_vjp
    def f(x, y):
        return x * y, x + 1.0

    f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: (g[0] * r[1] + g[1], g[0] * r[0]))
    return f


def _weak_types(out):
    return [(np.dtype(o.dtype).name, bool(o.weak_type)) for o in tree_leaves(out)]


@pytest.mark.parametrize("build", [_weak_jvp, _weak_vjp], ids=["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("weak", [True, False], ids=["weak_args", "strong_args"])
def test_outputs_keep_the_weak_type_of_the_function_under_tracing_as_in_jax(build, weak):
    # A staged custom-derivative call once dropped weak types, so `f(w)[0] + float16_array` promoted to float32
    # under jit but stayed float16 eagerly (and in JAX either way).
    jax = _jax()
    got = {}
    for m in (fluxion, jax):
        f = build(m)
        w = m.numpy.asarray(2.0) * 1.0 if weak else m.numpy.float32(2.0)  # weakly typed, or float32
        assert bool(w.weak_type) == weak
        h = np.ones(3, np.float16)
        fns = {
            "outs": lambda a, b: f(a, b),
            "promoted": lambda a, b: f(a, b)[0] + b,
            "vmapped": lambda a, b: m.vmap(lambda z: f(z, z)[1])(m.numpy.stack([a, a])),
            "grad": lambda a, b: m.grad(lambda z: f(z, z)[0] + f(z, z)[1])(a),
        }
        got[m.__name__] = {k: (_weak_types(fn(w, h if k == "promoted" else w)),
                               _weak_types(m.jit(fn)(w, h if k == "promoted" else w))) for k, fn in fns.items()}
        for k, (eager, jitted) in got[m.__name__].items():
            assert eager == jitted, (m.__name__, k)
    assert got["fluxion"] == got["jax"]
