"""Top-level names of the `jax` namespace beyond the transformations: config state context managers, debug_nans /
debug_infs, clear_caches, typeof, ensure_compile_time_eval, named_call/named_scope, closure_convert,
linear_transpose, custom_gradient, environment and process aliases. Checked against real JAX where installed."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src import test_util as tu


def _jax():
    return pytest.importorskip("jax")


# --------------------------------------------------------------------------------------------------------------
# debug_nans / debug_infs
# --------------------------------------------------------------------------------------------------------------

NAN_CASES = {
    "eager log": (lambda m: m.numpy.log(-m.numpy.ones(2)), "invalid value (nan) encountered in log"),
    "jit log": (lambda m: m.jit(lambda x: m.numpy.log(x) * 2)(-m.numpy.ones(2)),
                "invalid value (nan) encountered in log"),
    "grad sqrt": (lambda m: m.grad(lambda x: m.numpy.sqrt(x))(-1.0), "invalid value (nan) encountered in sqrt"),
    "vmap div": (lambda m: m.vmap(lambda x: x / x)(m.numpy.zeros(2)), "invalid value (nan) encountered in div"),
}


@pytest.mark.parametrize("name", sorted(NAN_CASES))
def test_debug_nans_names_the_primitive(name):
    case, message = NAN_CASES[name]
    with fluxion.debug_nans(True):
        with pytest.raises(FloatingPointError, match=message.replace("(", r"\(").replace(")", r"\)")):
            case(fluxion)
    case(fluxion)  # off again: NaNs flow silently


@pytest.mark.parametrize("name", sorted(NAN_CASES))
def test_debug_nans_matches_jax(name):
    jax = _jax()
    case, _ = NAN_CASES[name]
    with jax.debug_nans(True), pytest.raises(FloatingPointError) as theirs:
        case(jax)
    with fluxion.debug_nans(True), pytest.raises(FloatingPointError) as ours:
        case(fluxion)
    assert str(ours.value) == str(theirs.value).splitlines()[0]


def test_debug_infs_and_state_values():
    assert fluxion.debug_infs.value is False
    with fluxion.debug_infs(True):
        assert fluxion.debug_infs.value is True
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in log"):
            jnp.log(jnp.zeros(2))
        jnp.log(-jnp.ones(2))  # NaN is not checked by debug_infs
    assert fluxion.debug_infs.value is False
    with fluxion.config.override("jax_debug_nans", True):
        with pytest.raises(FloatingPointError):
            jnp.ones(2) * np.float32(np.nan)  # the operator fast path checks too


def test_config_states_toggle_their_options():
    for name in ("enable_x64", "disable_jit", "log_compiles", "check_tracer_leaks", "numpy_rank_promotion",
                 "default_matmul_precision", "transfer_guard"):
        state = getattr(fluxion, name)
        before = state.value
        new = {bool: not before}.get(type(before), "raise" if name == "numpy_rank_promotion" else "highest")
        with state(new):
            assert state.value == new
        assert state.value == before
    with fluxion.enable_x64():
        assert jnp.arange(3.0).dtype == np.float64
    with fluxion.disable_jit():
        seen = []
        fluxion.jit(lambda x: seen.append(type(x)) or x)(jnp.ones(2))
        assert seen == [fluxion.Array]


# --------------------------------------------------------------------------------------------------------------
# caches and small utilities
# --------------------------------------------------------------------------------------------------------------

def test_clear_caches_forgets_every_compiled_program():
    traces = []
    f = fluxion.jit(lambda x: traces.append(1) or x * 2)
    p = fluxion.pmap(lambda x: x + 1)
    f(jnp.ones(2))
    f(jnp.ones(2))
    p(jnp.ones((1, 2)))
    assert len(traces) == 1 and f._cache_size() == 1 and p._cache_size() == 1
    fluxion.clear_caches()
    assert f._cache_size() == 0 and p._cache_size() == 0
    tu.assert_allclose(f(jnp.ones(2)), np.full(2, 2.0, np.float32))
    assert len(traces) == 2


def test_typeof_float0_backend_and_environment():
    assert str(fluxion.typeof(jnp.ones(3))) == "float32[3]"
    assert fluxion.typeof(1.0).weak_type
    assert fluxion.float0 == np.dtype([("float0", np.void, 0)])
    assert fluxion.default_backend() == "cpu"
    assert fluxion.host_count() == fluxion.process_count() and fluxion.host_id() == fluxion.process_index()
    assert fluxion.process_indices() == list(range(fluxion.process_count())) == fluxion.host_ids()
    assert isinstance(fluxion.devices()[0], fluxion.Device)
    text = fluxion.print_environment_info(return_string=True)
    assert "fluxion:" in text and "numpy:" in text and "devices:" in text
    jax = pytest.importorskip("jax")
    assert str(fluxion.typeof(jnp.ones((2, 3), jnp.int32))) == str(jax.typeof(jax.numpy.ones((2, 3), "int32")))


def test_ensure_compile_time_eval_gives_concrete_values_under_jit():
    @fluxion.jit
    def f(x):
        with fluxion.ensure_compile_time_eval():
            n = int(jnp.sum(jnp.arange(4)))  # concrete: a Python int inside jit
        return x * n

    tu.assert_allclose(f(jnp.ones(2)), np.full(2, 6.0, np.float32))


def test_named_call_and_named_scope_compute_the_same():
    f = fluxion.named_call(lambda x: jnp.sin(x) * 2, name="scaled_sin")
    with fluxion.named_scope("outer"):
        tu.assert_allclose(fluxion.jit(f)(jnp.ones(2)), 2 * np.sin(np.ones(2, np.float32)))
    with pytest.raises(TypeError):
        with fluxion.named_scope(3):
            pass


def _named_program(m):
    """A function using named_scope (as decorator and context) and named_call, with a jit and a scan inside."""
    def g(x):
        return m.numpy.sin(x) * 2

    @m.named_scope("outer")
    def f(x):
        y = m.named_call(g, name="inner")(x)
        y = m.jit(m.named_call(g))(y)
        with m.named_scope("loop"):
            y, _ = m.lax.scan(lambda c, _: (m.named_call(g, name="body")(c), None), y, None, length=2)
        return y + 1
    return f


def _name_stacks(jaxpr):
    """(primitive, name stack) of each equation, and the same for the jaxprs in its parameters."""
    out = []
    for e in jaxpr.eqns:
        info = e.source_info
        names = "" if info is None else str(info.name_stack)
        subs = [_name_stacks(v.jaxpr if hasattr(v, "jaxpr") else v) for v in e.params.values()
                if hasattr(v, "eqns")]
        out.append((names, subs))
    return out


def test_named_scopes_reach_jaxpr_equations_like_jax():
    jax = _jax()
    x = np.ones(3, np.float32)
    ours = fluxion.make_jaxpr(_named_program(fluxion))(jnp.asarray(x))
    theirs = jax.make_jaxpr(_named_program(jax))(jax.numpy.asarray(x))

    def dedup(stacks):  # the two libraries lower some ops to different numbers of equations
        flat = []
        for names, subs in stacks:
            item = (names, tuple(tuple(dedup(s)) for s in subs))
            if not flat or flat[-1] != item:
                flat.append(item)
        return flat
    assert dedup(_name_stacks(ours.jaxpr)) == dedup(_name_stacks(theirs.jaxpr))
    text = ours.pretty_print(name_stack=True)
    assert "# [outer/inner]" in text and "# [outer/loop]" in text
    assert "#" not in str(ours)
    # Names never change values, and eager code ignores them.
    tu.assert_allclose(_named_program(fluxion)(jnp.asarray(x)), np.asarray(_named_program(jax)(x)), rtol=1e-6)
    tu.assert_allclose(fluxion.jit(_named_program(fluxion))(jnp.asarray(x)),
                       np.asarray(_named_program(jax)(x)), rtol=1e-6)


def test_closure_convert_hoists_captured_arrays():
    w = jnp.asarray(np.arange(3.0, dtype=np.float32))

    def outer(w_):
        f = lambda x: jnp.sum(x * w_)
        converted, consts = fluxion.closure_convert(f, jnp.ones(3))
        assert len(consts) == 1
        return converted(jnp.ones(3), *consts)

    tu.assert_allclose(outer(w), np.float32(3.0))
    # Under grad the captured value is a tracer: hoisted, it stays differentiable.
    tu.assert_allclose(fluxion.grad(outer)(w), np.ones(3, np.float32))


LINEAR = {
    "scale and pair": (lambda x, y: (2.0 * x + y, x), (1.0, 1.0), (1.0, 2.0)),
    "matvec": (lambda v: jnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3)) @ v, (np.ones(3, np.float32),),
               np.array([1.0, -1.0], np.float32)),
    "cumsum": (lambda v: jnp.cumsum(v), (np.ones(4, np.float32),), np.arange(4.0, dtype=np.float32)),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_transpose_matches_vjp_and_jax(name):
    f, primals, ct = LINEAR[name]
    got = fluxion.linear_transpose(f, *primals)(ct)
    _, vjp = fluxion.vjp(f, *primals)
    tu.assert_allclose(got, vjp(ct), atol=1e-6)
    jax = pytest.importorskip("jax")
    f_jax = LINEAR[name][0] if name == "scale and pair" else {
        "matvec": lambda v: jax.numpy.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3)) @ v,
        "cumsum": lambda v: jax.numpy.cumsum(v)}[name]
    want = jax.linear_transpose(f_jax, *primals)(ct)
    tu.assert_allclose(got, tuple(np.asarray(w) for w in want), atol=1e-6)


def test_linear_transpose_rejects_nonlinear_and_bad_cotangents():
    with pytest.raises(NotImplementedError):
        fluxion.linear_transpose(jnp.sin, 1.0)(1.0)
    with pytest.raises(TypeError):
        fluxion.linear_transpose(lambda x: 2 * x, np.ones(2, np.float32))(np.ones(3, np.float32))


def test_custom_gradient():
    @fluxion.custom_gradient
    def f(x):
        return x ** 2, lambda g: (g * 10 * x,)

    assert float(f(3.0)) == 9.0
    assert float(fluxion.grad(f)(3.0)) == 30.0
    assert float(fluxion.jit(fluxion.grad(f))(3.0)) == 30.0
    jax = pytest.importorskip("jax")

    @jax.custom_gradient
    def f_jax(x):
        return x ** 2, lambda g: (g * 10 * x,)

    assert float(jax.grad(f_jax)(3.0)) == float(fluxion.grad(f)(3.0))
