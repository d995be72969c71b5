"""Host callbacks: `pure_callback`, `io_callback`, `debug.callback` and `debug.print`, in every transformation.

Each scenario is a function of a library module `m` (fluxion, or real JAX as the oracle), run eagerly and/or under
`jit`; what it prints (captured) and returns are compared with hard-coded expectations and, where JAX is installed,
with JAX's.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src import test_util as tu


def _sd(m, x):
    return m.ShapeDtypeStruct(x.shape, x.dtype)


def _io(m):
    return fluxion.experimental.io_callback if m is fluxion else __import__("jax.experimental").experimental.io_callback


# name -> (scenario(m) -> result, expected printed lines, expected result or None)
SCENARIOS = {
    "print eager": (lambda m: m.debug.print("x={x} y={}", 1.5, x=m.numpy.arange(3.0)), ["x=[0. 1. 2.] y=1.5"], None),
    "print jit twice": (lambda m: [m.jit(lambda x: m.debug.print("s={s}", s=x.sum()))(m.numpy.ones(3))
                                   for _ in range(2)], ["s=3.0", "s=3.0"], None),
    "print format spec": (lambda m: m.debug.print("{:.2f} {}", 1.23456, "text"), ["1.23 text"], None),
    "print vmap": (lambda m: m.vmap(lambda x: m.debug.print("v={}", x))(m.numpy.arange(3.0)),
                   ["v=0.0", "v=1.0", "v=2.0"], None),
    "print jit vmap": (lambda m: m.jit(m.vmap(lambda x: m.debug.print("v={}", x)))(m.numpy.arange(2.0)),
                       ["v=0.0", "v=1.0"], None),
    "print grad": (lambda m: m.grad(lambda x: (m.debug.print("g={}", x), x ** 2)[1])(2.0), ["g=2.0"], 4.0),
    "print grad jit": (lambda m: m.grad(m.jit(lambda x: (m.debug.print("g={}", x), x ** 3)[1]))(2.0),
                       ["g=2.0"], 12.0),
    "print unused result kept": (lambda m: m.jit(lambda x: (m.debug.print("kept {}", x), x)[1] * 0)(
        m.numpy.arange(2.0)), ["kept [0. 1.]"], [0.0, 0.0]),
    "print in scan": (lambda m: m.jit(lambda xs: m.lax.scan(
        lambda c, x: (m.debug.print("step {} {}", c, x) or c + x, None), 0.0, xs)[0])(m.numpy.arange(3.0)),
        ["step 0.0 0.0", "step 0.0 1.0", "step 1.0 2.0"], 3.0),
    "print in cond": (lambda m: m.jit(lambda x: m.lax.cond(x > 0, lambda v: m.debug.print("pos {}", v) or v,
                                                           lambda v: m.debug.print("neg {}", v) or -v, x))(-2.0),
                      ["neg -2.0"], 2.0),
    "debug callback": (lambda m: m.jit(lambda x: m.debug.callback(lambda v: print("cb", np.asarray(v) * 2), x))(
        m.numpy.arange(2.0)), ["cb [0. 2.]"], None),
    "pure eager": (lambda m: m.pure_callback(lambda v: np.sin(np.asarray(v)), _sd(m, np.ones(3, np.float32)),
                                             m.numpy.arange(3.0)), [], list(np.sin(np.arange(3.0, dtype=np.float32)))),
    "pure jit kwargs pytree": (lambda m: m.jit(lambda x: m.pure_callback(
        lambda d, k: {"a": np.asarray(d["a"]) * k}, {"a": _sd(m, x)}, {"a": x}, k=2.0))(m.numpy.arange(3.0))["a"],
        [], [0.0, 2.0, 4.0]),
    "pure result dtype converted": (lambda m: m.pure_callback(lambda v: np.ones(3, np.float64),
                                                              _sd(m, np.ones(3, np.float32)), m.numpy.arange(3.0)),
                                    [], [1.0, 1.0, 1.0]),
    "pure unused is dropped under jit": (lambda m: m.jit(lambda x: (m.pure_callback(
        lambda v: print("ran") or v, _sd(m, x), x), x + 1)[1])(m.numpy.arange(2.0)), [], [1.0, 2.0]),
    "pure vmap sequential": (lambda m: m.vmap(lambda x: m.pure_callback(
        lambda v: print("shape", np.shape(v)) or np.asarray(v) * 2, _sd(m, x), x, vmap_method="sequential"))(
        m.numpy.ones((2, 3))), ["shape (3,)", "shape (3,)"], [[2.0] * 3] * 2),
    "pure vmap expand_dims": (lambda m: m.vmap(lambda x, y: m.pure_callback(
        lambda v, w: print("shapes", np.shape(v), np.shape(w)) or np.asarray(v) + np.asarray(w), _sd(m, x), x, y,
        vmap_method="expand_dims"), in_axes=(0, None))(m.numpy.ones((2, 3)), m.numpy.ones(3)),
        ["shapes (2, 3) (1, 3)"], [[2.0] * 3] * 2),
    "pure vmap broadcast_all": (lambda m: m.vmap(lambda x, y: m.pure_callback(
        lambda v, w: print("shapes", np.shape(v), np.shape(w)) or np.asarray(v) + np.asarray(w), _sd(m, x), x, y,
        vmap_method="broadcast_all"), in_axes=(0, None))(m.numpy.ones((2, 3)), m.numpy.ones(3)),
        ["shapes (2, 3) (2, 3)"], [[2.0] * 3] * 2),
    "io jit": (lambda m: m.jit(lambda x: _io(m)(lambda v: print("io", np.asarray(v)) or v, _sd(m, x), x))(
        m.numpy.arange(2.0)), ["io [0. 1.]"], [0.0, 1.0]),
    "io unused kept": (lambda m: m.jit(lambda x: (_io(m)(lambda v: print("io", np.asarray(v)) or v, _sd(m, x), x),
                                                  x + 1)[1])(m.numpy.arange(2.0)), ["io [0. 1.]"], [1.0, 2.0]),
    "io vmap": (lambda m: m.vmap(lambda x: _io(m)(lambda v: print("io", np.asarray(v)) or v, _sd(m, x), x))(
        m.numpy.arange(2.0)), ["io 0.0", "io 1.0"], [0.0, 1.0]),
}

ERRORS = {
    "pure vmap without method": (lambda m: m.vmap(lambda x: m.pure_callback(lambda v: v, _sd(m, x), x))(
        m.numpy.arange(3.0)), NotImplementedError),
    "pure grad": (lambda m: m.grad(lambda x: m.pure_callback(lambda v: v, _sd(m, x), x))(2.0), ValueError),
    "io grad": (lambda m: m.grad(lambda x: _io(m)(lambda v: v, _sd(m, x), x))(2.0), ValueError),
    "io ordered vmap": (lambda m: m.vmap(lambda x: _io(m)(lambda v: v, _sd(m, x), x, ordered=True))(
        m.numpy.arange(2.0)), ValueError),
}


def _run(m, scenario, capsys):
    capsys.readouterr()
    result = scenario(m)
    return capsys.readouterr().out.splitlines(), result


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_callback_scenarios(name, capsys):
    scenario, lines, expected = SCENARIOS[name]
    printed, result = _run(fluxion, scenario, capsys)
    assert printed == lines
    if expected is not None:
        tu.assert_allclose(result, np.asarray(expected, np.float32), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_callback_scenarios_match_jax(name, capsys):
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.experimental")
    scenario, _, expected = SCENARIOS[name]
    printed, result = _run(fluxion, scenario, capsys)
    printed_jax, result_jax = _run(jax, scenario, capsys)
    assert printed == printed_jax
    if expected is not None:
        tu.assert_allclose(result, np.asarray(result_jax), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_callback_errors(name):
    scenario, error = ERRORS[name]
    with pytest.raises(error):
        scenario(fluxion)


def test_callback_shape_mismatch_names_the_result():
    with pytest.raises(RuntimeError, match=r"shape \(4,\).*declares \(3,\)"):
        fluxion.pure_callback(lambda v: np.ones(4, np.float32), fluxion.ShapeDtypeStruct((3,), jnp.float32),
                              jnp.arange(3.0))


def test_jaxprs_show_the_callbacks():
    text = str(fluxion.make_jaxpr(lambda x: fluxion.debug.print("{}", x))(np.ones(2, np.float32)))
    assert "debug_print[" in text and "fmt={}" in text and " = debug_print" not in text
    text = str(fluxion.make_jaxpr(lambda x: fluxion.pure_callback(np.sin, fluxion.ShapeDtypeStruct((2,), np.float32),
                                                                  x))(np.ones(2, np.float32)))
    assert "pure_callback[" in text and "vmap_method=None" in text


def test_effects_survive_the_compiler_passes():
    # The same print twice (CSE must not merge them), a print of a constant (folding must not run it at compile
    # time), and a print whose inputs are dead otherwise (DCE must keep it).
    @fluxion.jit
    def f(x):
        fluxion.debug.print("a {}", x)
        fluxion.debug.print("a {}", x)
        fluxion.debug.print("const {}", jnp.float32(3.0) * 2)
        return x

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        f(jnp.float32(1.0))
        out = buf.getvalue().splitlines()
    assert out == ["a 1.0", "a 1.0", "const 6.0"]
