"""Unit tests of the IR passes: jaxpr in, jaxpr out (checked structurally and against the reference interpreter)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src import core
from fluxion._src.backends.compiler import ir, passes
from fluxion._src.backends.compiler.passes import cse, dce, fold_constants, inline_calls, simplify

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import assert_same_values, closed_of, prim_names, reference  # noqa: E402


# -- inlining ----------------------------------------------------------------------------------------------------

def test_inline_replaces_custom_jvp_call_by_its_body():
    @fluxion.custom_jvp
    def f(x):
        return jnp.sin(x) * 2.0

    f.defjvp(lambda p, t: (f(p[0]), t[0]))
    closed = closed_of(lambda x: f(x) + 1.0, np.float32(0.5))
    assert "custom_jvp_call" in prim_names(closed)
    out = inline_calls(closed)
    assert "custom_jvp_call" not in prim_names(out)
    assert prim_names(out) == ["sin", "mul", "add"]
    ir.check_closed_jaxpr(out)
    assert_same_values(reference(out, np.float32(0.5)), reference(closed, np.float32(0.5)))


def test_inline_inside_scan_bodies_and_twice_inlined_callee_gets_fresh_variables():
    @fluxion.custom_jvp
    def g(x):
        return jnp.exp(x)

    g.defjvp(lambda p, t: (g(p[0]), t[0] * g(p[0])))

    def body(c, x):
        return c + g(x) + g(2.0 * x), c

    closed = closed_of(lambda xs: lax.scan(body, 0.0, xs), np.arange(3, dtype=np.float32))
    out = inline_calls(closed)
    assert "custom_jvp_call" not in prim_names(out)
    ir.check_closed_jaxpr(out)  # a callee inlined twice must not define a variable twice
    xs = np.arange(3, dtype=np.float32)
    assert_same_values(reference(out, xs), reference(closed, xs))


def test_inline_cond_with_literal_index_keeps_the_taken_branch_only():
    closed = closed_of(lambda x: lax.switch(1, [lambda v: v + 1.0, lambda v: v * 3.0], x), np.float32(2.0))
    out = inline_calls(fold_constants(closed))  # folding turns the clamped index into a literal
    names = prim_names(out)
    assert "cond" not in names and "mul" in names and "add" not in names
    assert reference(out, np.float32(2.0))[0] == np.float32(6.0)


# -- dead code elimination --------------------------------------------------------------------------------------

def test_dce_removes_unused_equations_and_constants():
    c = jnp.arange(4.0)

    def f(x):
        unused = jnp.exp(x) * c
        del unused
        return x + 1.0

    closed = closed_of(f, np.ones(4, np.float32))
    assert "exp" in prim_names(closed)
    out = dce(closed)
    assert prim_names(out) == ["add"]
    assert out.jaxpr.constvars == [] and out.consts == []


def test_dce_prunes_unused_scan_outputs_and_their_body_equations():
    def f(xs):
        carry, (ys, zs) = lax.scan(lambda c, x: (c + x, (jnp.sin(x), jnp.cos(x))), 0.0, xs)
        return carry, ys

    closed = closed_of(f, np.arange(5, dtype=np.float32))
    out = dce(closed)
    scan = [e for e in out.jaxpr.eqns if e.primitive.name == "scan"][0]
    assert len(scan.outvars) == 2  # carry and ys; zs is gone
    assert "cos" not in prim_names(out) and "sin" in prim_names(out)
    ir.check_closed_jaxpr(out)
    xs = np.arange(5, dtype=np.float32)
    assert_same_values(reference(out, xs), reference(closed, xs))


# -- common subexpression elimination ---------------------------------------------------------------------------

def test_cse_merges_identical_equations_but_not_different_parameters():
    def f(x):
        a = jnp.sum(jnp.exp(x), axis=0)
        b = jnp.sum(jnp.exp(x), axis=0)
        c = jnp.sum(jnp.exp(x), axis=1)
        return a + b, c

    closed = closed_of(f, np.ones((2, 3), np.float32))
    out = dce(cse(closed))
    names = prim_names(out)
    assert names.count("exp") == 1
    assert names.count("reduce_sum") == 2  # axis=0 once, axis=1 once
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same_values(reference(out, x), reference(closed, x))


def test_cse_treats_commutative_operands_as_unordered():
    closed = closed_of(lambda x, y: (x * y, y * x, x - y, y - x), np.float32(1.0), np.float32(2.0))
    out = dce(cse(closed))
    names = prim_names(out)
    assert names.count("mul") == 1 and names.count("sub") == 2
    assert_same_values(reference(out, np.float32(1.0), np.float32(2.0)),
                       reference(closed, np.float32(1.0), np.float32(2.0)))


def test_cse_distinguishes_literals_by_dtype_and_value():
    def f(x, i):
        return x * 2.0, x * 3.0, i * 2

    closed = closed_of(f, np.float32(1.0), np.int32(1))
    out = cse(closed)
    assert prim_names(out).count("mul") == 3


# -- constant folding ----------------------------------------------------------------------------------------------

def test_fold_evaluates_literal_and_constant_operands_once():
    table = jnp.arange(8.0)

    def f(x):
        scale = jnp.exp(jnp.float32(0.0)) * 2.0        # literals only -> folded to a literal
        w = jnp.sum(table * table)                       # a closed-over constant -> folded
        return x * scale + w

    closed = closed_of(f, np.float32(1.0))
    out = dce(fold_constants(closed))
    assert prim_names(out) == ["mul", "add"]
    x = np.float32(3.0)
    assert_same_values(reference(out, x), reference(closed, x))


def test_fold_leaves_large_results_to_run_time():
    closed = closed_of(lambda x: x + jnp.zeros((300, 300), jnp.float32) * 2.0, np.ones((300, 300), np.float32))
    out = fold_constants(closed)
    # the broadcast of 0.0 (90,000 elements) must not become a stored constant
    assert all(np.size(getattr(c, "_value", c)) <= passes.fold.FOLD_MAX_ELEMENTS for c in out.consts)
    assert "broadcast_in_dim" in prim_names(out)


def test_fold_keeps_equations_whose_implementation_refuses_the_values():
    closed = closed_of(lambda x: x + lax.convert_element_type(jnp.float32(np.nan), jnp.int32), np.int32(1))
    out = fold_constants(closed)  # saturating conversion folds fine; result must equal the interpreter's
    assert_same_values(reference(out, np.int32(1)), reference(closed, np.int32(1)))


# -- algebraic simplification -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fun,gone", [
    (lambda x: x * 1.0, "mul"),
    (lambda x: 1.0 * x, "mul"),
    (lambda x: x + 0.0, "add"),
    (lambda x: x - 0.0, "sub"),
    (lambda x: x / 1.0, "div"),
    (lambda x: -(-x), "neg"),  # noqa: B002 -- a double negation, meant
    (lambda x: x.T.T, "transpose"),
    (lambda x: x.reshape(2, 3), "reshape"),
    (lambda x: lax.convert_element_type(x, jnp.float32), "convert_element_type"),
    (lambda x: lax.broadcast_in_dim(x, (2, 3), (0, 1)), "broadcast_in_dim"),
    (lambda x: lax.stop_gradient(x), "stop_gradient"),
    (lambda x: lax.slice(x, (0, 0), (2, 3)), "slice"),
    (lambda x: lax.select(jnp.ones((2, 3), bool), x, x), "select_n"),
])
def test_simplify_removes_identities(fun, gone):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    closed = closed_of(fun, x)
    out = dce(simplify(closed))
    assert gone not in prim_names(out)
    assert_same_values(reference(out, x), reference(closed, x))


def test_simplify_uses_broadcast_of_one_and_keeps_dtype_changing_identities():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    closed = closed_of(lambda x: jnp.ones((2, 3), jnp.float32) * x, x)
    assert "mul" not in prim_names(dce(simplify(closed)))
    # int32 * 1.0 promotes to float32: not an identity, must stay
    closed = closed_of(lambda i: i * 1.0, np.arange(3, dtype=np.int32))
    out = dce(simplify(closed))
    assert_same_values(reference(out, np.arange(3, dtype=np.int32)), reference(closed, np.arange(3, dtype=np.int32)))
    assert out.jaxpr.outvars[0].aval.dtype == np.float32


def test_simplify_composes_transposes_and_reshapes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    closed = closed_of(lambda x: jnp.transpose(jnp.transpose(x, (1, 0, 2)), (0, 2, 1)).reshape(3, 8).reshape(24), x)
    out = dce(simplify(closed))
    names = prim_names(out)
    assert names.count("transpose") == 1 and names.count("reshape") == 1
    assert_same_values(reference(out, x), reference(closed, x))


@pytest.mark.parametrize("fun,shapes", [
    (lambda a, b: (a.T @ b).T, [(5, 3), (5, 4)]),            # the weight gradient autodiff writes
    (lambda a, b: jnp.transpose(a @ b), [(3, 5), (5, 4)]),
    (lambda a, b: jnp.swapaxes(jnp.einsum("bij,bjk->bik", a, b), 1, 2), [(2, 3, 5), (2, 5, 4)]),
    (lambda a, b: lax.dot_general(a, b, (((0,), (1,)), ((), ()))).T, [(5, 3), (4, 5)]),
])
def test_simplify_computes_transposed_products_in_the_wanted_layout(fun, shapes, rng):
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    closed = closed_of(fun, *args)
    out = dce(simplify(closed))
    assert "transpose" not in prim_names(out) or prim_names(out).count("transpose") < prim_names(closed).count(
        "transpose")
    assert prim_names(out).count("dot_general") == 1
    assert_same_values(reference(out, *args), reference(closed, *args), exact=False)


def test_simplify_keeps_the_transpose_of_a_product_read_elsewhere(rng):
    a, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)

    def fun(a, b):
        p = a @ b
        return p.T, p * 2.0
    closed = closed_of(fun, a, b)
    out = dce(simplify(closed))
    assert prim_names(out).count("dot_general") == 1 and "transpose" in prim_names(out)
    assert_same_values(reference(out, a, b), reference(closed, a, b), exact=False)


# -- the pipeline and its debug type check ----------------------------------------------------------------------

def test_pipeline_preserves_values_of_a_gradient_program(rng):
    def loss(w, x):
        return jnp.mean((jnp.tanh(x @ w) - 1.0) ** 2)

    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    closed = closed_of(fluxion.grad(loss), w, x)
    out = passes.optimize(closed, check=True)
    assert len(out.jaxpr.eqns) < len(closed.jaxpr.eqns)
    assert_same_values(reference(out, w, x), reference(closed, w, x), exact=False)


def test_debug_typecheck_names_the_pass_that_breaks_the_ir():
    closed = closed_of(lambda x: jnp.sin(x) + 1.0, np.ones(3, np.float32))

    def broken(c):
        j = c.jaxpr
        bad = j.eqns[0]._replace(invars=[core.Var(core.ShapedArray((7,), np.dtype(np.float32)))])
        return core.ClosedJaxpr(core.Jaxpr(j.constvars, j.invars, j.outvars, [bad] + j.eqns[1:]), c.consts)

    with pytest.raises(core.JaxprTypeError, match="broken"):
        passes.optimize(closed, passes=(simplify, broken), check=True)
    passes.optimize(closed, passes=(simplify, broken), check=False)  # no check, no error


def test_typecheck_recurses_into_sub_jaxprs():
    closed = closed_of(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs), np.ones(3, np.float32))
    scan = closed.jaxpr.eqns[-1]
    body = scan.params["jaxpr"]
    bj = body.jaxpr
    bad_eqn = bj.eqns[0]._replace(outvars=[core.Var(core.ShapedArray((2,), np.dtype(np.float32)))])
    bad_body = core.ClosedJaxpr(core.Jaxpr(bj.constvars, bj.invars, bj.outvars, [bad_eqn] + bj.eqns[1:]), [])
    bad = scan._replace(params=dict(scan.params, jaxpr=bad_body))
    broken = core.ClosedJaxpr(core.Jaxpr([], closed.jaxpr.invars, closed.jaxpr.outvars, closed.jaxpr.eqns[:-1] + [bad]),
                              closed.consts)
    with pytest.raises(core.JaxprTypeError):
        ir.check_closed_jaxpr(broken)
