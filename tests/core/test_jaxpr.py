"""Tests of tracing to jaxprs: `make_jaxpr` printing, the jaxpr data structure, evaluation and type checking.

Printed jaxprs are compared with literal strings in JAX's text format (as printed by JAX 0.4.3x and later) and,
where JAX is installed, with `str(jax.make_jaxpr(...))` of the same program written against real `jax.lax`.
Programs whose equations carry parameters JAX prints differently (sharding annotations and the like) are compared
by their sequence of primitive names only.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion as jax
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion._src import core
from fluxion._src import test_util as tu

X3 = np.ones(3, np.float32)
M23 = np.ones((2, 3), np.float32)


def _programs(lax_mod, jnp_mod):
    """name -> (function, example args): the same programs for fluxion and real JAX."""
    def chain30(x):
        for _ in range(30):
            x = lax_mod.sin(x)
        return x

    return {
        "sin": (lambda x: lax_mod.sin(x), (X3,)),
        "add_mul_literal": (lambda x, y: lax_mod.add(lax_mod.sin(x), lax_mod.mul(y, 2.0)), (X3, X3)),
        "unary_chain": (lambda x: lax_mod.exp(lax_mod.neg(lax_mod.cos(lax_mod.sin(x)))), (X3,)),
        "transpose": (lambda m: lax_mod.transpose(m, (1, 0)), (M23,)),
        "convert": (lambda x: lax_mod.convert_element_type(x, np.int32), (X3,)),
        "jnp_add_python_float": (lambda x: x + 1.0, (X3,)),
        "jnp_int_times_float": (lambda i: i * 2.5, (np.arange(3, dtype=np.int32),)),
        "pytree_output": (lambda x: (x, {"a": lax_mod.sin(x)}), (X3,)),
        "captured_constant": (lambda x: x + np.arange(3, dtype=np.float32), (X3,)),
        "select_n": (lambda p, x: lax_mod.select_n(p, x, lax_mod.neg(x)), (np.array([True, False, True]), X3)),
        "integer_pow": (lambda x: lax_mod.integer_pow(x, 3), (1.0,)),
        "compare_literal": (lambda x: x > 0, (1.0,)),
        "two_outputs_literals": (lambda x, i: (x * 2, i + 1), (np.float32(1), 3)),
        "weak_scalar_times_array": (lambda p: p["b"] * p["a"], ({"b": 1.0, "a": np.ones(2, np.float32)},)),
        "chain30_names": (chain30, (1.0,)),
    }


EXPECTED = {
    "sin": "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }",
    "add_mul_literal": ("{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = sin a\n    d:f32[3] = mul b 2.0:f32[]\n"
                        "    e:f32[3] = add c d\n  in (e,) }"),
    "transpose": "{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = transpose[permutation=(1, 0)] a\n  in (b,) }",
    "convert": ("{ lambda ; a:f32[3]. let\n    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
                "  in (b,) }"),
    "jnp_add_python_float": "{ lambda ; a:f32[3]. let b:f32[3] = add a 1.0:f32[] in (b,) }",
    "jnp_int_times_float": ("{ lambda ; a:i32[3]. let\n"
                            "    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=True] a\n"
                            "    c:f32[3] = mul b 2.5:f32[]\n  in (c,) }"),
    "pytree_output": "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (a, b) }",
    "captured_constant": "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }",
    "integer_pow": "{ lambda ; a:f32[]. let b:f32[] = integer_pow[y=3] a in (b,) }",
    "compare_literal": "{ lambda ; a:f32[]. let b:bool[] = gt a 0.0:f32[] in (b,) }",
    "two_outputs_literals": ("{ lambda ; a:f32[] b:i32[]. let\n    c:f32[] = mul a 2.0:f32[]\n"
                             "    d:i32[] = add b 1:i32[]\n  in (c, d) }"),
    "weak_scalar_times_array": ("{ lambda ; a:f32[2] b:f32[]. let\n"
                                "    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n"
                                "    d:f32[2] = mul c a\n  in (d,) }"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_printed_jaxpr_literal(name):
    fn, args = _programs(lax, jnp)[name]
    assert str(jax.make_jaxpr(fn)(*args)) == EXPECTED[name]


def test_variable_names_continue_after_z():
    fn, args = _programs(lax, jnp)["chain30_names"]
    text = str(jax.make_jaxpr(fn)(*args))
    assert "    ba:f32[] = sin z\n    bb:f32[] = sin ba\n" in text
    assert text.endswith("    be:f32[] = sin bd\n  in (be,) }")


@pytest.mark.parametrize("name", sorted(_programs(lax, jnp)))
def test_printed_jaxpr_matches_real_jax(name):
    real = pytest.importorskip("jax")
    from jax import lax as real_lax
    import jax.numpy as real_jnp
    fn, args = _programs(lax, jnp)[name]
    rfn, rargs = _programs(real_lax, real_jnp)[name]
    assert str(jax.make_jaxpr(fn)(*args)) == str(real.make_jaxpr(rfn)(*rargs))


def _param_programs(lax_mod, jnp_mod):
    """Programs whose equations carry parameters that JAX prints with extra annotations (e.g. sharding)."""
    return {
        "reduce_sum": (lambda m: lax_mod.reduce_sum(m, (1,)), (M23,)),
        "broadcast_in_dim": (lambda x: lax_mod.broadcast_in_dim(x, (2, 3), (1,)), (X3,)),
        "dot_general": (lambda m, x: lax_mod.dot_general(m, x, (((1,), (0,)), ((), ()))), (M23, X3)),
        "reshape": (lambda m: lax_mod.reshape(m, (3, 2)), (M23,)),
        "iota": (lambda: lax_mod.iota(np.int32, 4), ()),
        "jnp_sum_tanh": (lambda m: jnp_mod.sum(jnp_mod.tanh(m) * 2.0, axis=0), (M23,)),
        "jnp_mean_square": (lambda m: jnp_mod.mean(m ** 2, axis=1), (M23,)),
        "jnp_matmul_transpose": (lambda m: m.T @ m, (M23,)),
    }


@pytest.mark.parametrize("name", sorted(_param_programs(lax, jnp)))
def test_primitive_sequence_and_types_match_real_jax(name):
    real = pytest.importorskip("jax")
    from jax import lax as real_lax
    import jax.numpy as real_jnp
    fn, args = _param_programs(lax, jnp)[name]
    rfn, rargs = _param_programs(real_lax, real_jnp)[name]
    ours, theirs = jax.make_jaxpr(fn)(*args), real.make_jaxpr(rfn)(*rargs)
    assert [e.primitive.name for e in ours.eqns] == [e.primitive.name for e in theirs.eqns]
    assert [(tuple(v.aval.shape), np.dtype(v.aval.dtype)) for e in ours.eqns for v in e.outvars] == [
        (tuple(v.aval.shape), np.dtype(v.aval.dtype)) for e in theirs.eqns for v in e.outvars]


def test_jaxpr_structure_and_avals():
    closed = jax.make_jaxpr(lambda x, y: (jnp.dot(x, y), x.sum()))(M23, X3)
    assert [a.str_short() for a in closed.in_avals] == ["f32[2,3]", "f32[3]"]  # jaxpr text's form
    assert [str(a) for a in closed.out_avals] == ["float32[2]", "float32[]"]  # str(aval), as JAX prints it
    assert len(closed.jaxpr.invars) == 2 and len(closed.jaxpr.outvars) == 2
    assert all(isinstance(e, core.JaxprEqn) for e in closed.eqns)


def test_captured_array_becomes_constvar():
    c = np.arange(3, dtype=np.float32)
    closed = jax.make_jaxpr(lambda x: x * c)(X3)
    assert len(closed.jaxpr.constvars) == 1
    tu.assert_allclose(closed.consts[0], c)


def test_scalar_constants_are_inlined_as_literals():
    closed = jax.make_jaxpr(lambda x: x * 3.0 + 1)(X3)
    assert closed.jaxpr.constvars == []
    literals = [v for e in closed.eqns for v in e.invars if isinstance(v, core.Literal)]
    assert sorted(float(np.asarray(lit.val)) for lit in literals) == [1.0, 3.0]


def test_make_jaxpr_static_argnums_and_return_shape():
    closed = jax.make_jaxpr(lambda x, n: x * n, static_argnums=(1,))(X3, 4)
    assert len(closed.jaxpr.invars) == 1
    assert "4.0:f32[]" in str(closed) or "4:f32[]" in str(closed)
    closed, shapes = jax.make_jaxpr(lambda x: {"y": x * 2}, return_shape=True)(X3)
    assert shapes["y"].shape == (3,) and shapes["y"].dtype == np.float32


def test_pytree_inputs_are_flattened_in_key_order():
    closed = jax.make_jaxpr(lambda p: p["b"] + p["a"])({"b": X3, "a": np.ones(3, np.int32).astype(np.float32)})
    assert len(closed.jaxpr.invars) == 2


def _run(closed, *args):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *[core.to_array(np.asarray(a)) for a in args])


@pytest.mark.parametrize("transform", ["plain", "grad", "vmap", "jvp", "hessian"])
def test_traced_jaxprs_evaluate_like_the_function_and_typecheck(transform, rng):
    def f(x):
        return jnp.sum(jnp.sin(x) * jnp.exp(x / 2.0))

    x = rng.standard_normal(4).astype(np.float32)
    g = {"plain": f, "grad": jax.grad(f), "vmap": jax.vmap(lambda v: jnp.sin(v) * v),
         "jvp": lambda v: jax.jvp(f, (v,), (jnp.ones_like(v),)), "hessian": jax.hessian(f)}[transform]
    closed = jax.make_jaxpr(g)(x)
    core.check_jaxpr(closed.jaxpr)
    outs = _run(closed, x)
    tu.assert_allclose(outs, jax.tree_util.tree_leaves(g(x)), atol=1e-6, rtol=1e-6)


def test_check_jaxpr_rejects_inconsistent_types():
    closed = jax.make_jaxpr(lambda x: lax.sin(x))(X3)
    eqn = closed.eqns[0]
    bad_var = core.Var(core.ShapedArray((4,), np.dtype(np.float32)))
    bad = core.Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars, [bad_var],
                     [eqn._replace(outvars=[bad_var])])
    with pytest.raises(core.JaxprTypeError, match=r"f32\[4\]"):
        core.check_jaxpr(bad)
    unbound = core.Jaxpr([], [], closed.jaxpr.outvars, [])
    with pytest.raises(core.JaxprTypeError, match="before definition"):
        core.check_jaxpr(unbound)


def test_jit_traces_once_and_prints_side_effects_once(capsys):
    @jax.jit
    def f(x):
        print("tracing")
        return x + 1

    f(X3)
    f(X3 * 2)
    assert capsys.readouterr().out == "tracing\n"


def test_lowered_text_is_the_jaxpr():
    low = jax.jit(lambda x: lax.sin(x)).lower(X3)
    assert low.as_text() == EXPECTED["sin"]
