"""Rule coverage: every primitive has a rule for every transformation, or a justified declaration that it has none.

The primitives are collected from the rule tables after importing every module of `fluxion._src` but the compiler
(so a primitive registered anywhere is found). For each one:

* an abstract-evaluation rule (`core.abstract_eval_rules`: jit, make_jaxpr, eval_shape);
* a NumPy implementation (`backends.eager.impl_rules`, also `prim.impl`: eager evaluation);
* a batching rule (`batching.primitive_batchers`: vmap), unless the primitive has no operands (nothing to batch) or
  is listed in `NOT_BATCHED` with the reason;
* a JVP rule (`ad.primitive_jvps`: forward and reverse mode), unless it has no operands or is declared with
  `ad.defnondifferentiable` (`ad.NON_DIFFERENTIABLE`);
* a transpose rule (`ad.primitive_transposes`: reverse mode) if it is linear in some operand. `LINEAR` lists those
  primitives with the operands they are linear in; the table is checked both ways against the registered
  transposes and against the primitives whose JVP was made by `ad.deflinear`, so it cannot silently go stale.

The rules' values are tested where the primitives are (tests/lax, tests/numpy, tests/random, ...).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import fluxion
import fluxion._src
from fluxion._src import core
from fluxion._src.backends.eager import impl_rules
from fluxion._src.interpreters import ad, batching


def _all_primitives() -> dict:
    # Every module that could define a primitive. (The compiler only lowers primitives; importing it here would
    # load Numba into this test process, which the compiler's own tests want to control.)
    for info in pkgutil.walk_packages(fluxion._src.__path__, prefix="fluxion._src."):
        if not info.name.startswith("fluxion._src.backends.compiler"):
            importlib.import_module(info.name)
    tables = (core.abstract_eval_rules, impl_rules, ad.primitive_jvps, ad.primitive_transposes,
              batching.primitive_batchers, ad.NON_DIFFERENTIABLE)
    prims = {p for table in tables for p in table}
    by_name = {p.name: p for p in prims}
    assert len(by_name) == len(prims), "two primitives share a name"
    return by_name


PRIMITIVES = _all_primitives()

# Linear primitives and the operands they are linear in (the others are non-linear parameters of the map).
LINEAR = {
    "neg": "x", "add": "x, y", "sub": "x, y", "mul": "x or y", "div": "the numerator",
    "real": "x", "imag": "x", "conj": "x", "complex": "x, y", "convert_element_type": "x (between inexact types)",
    "select_n": "the cases", "reduce_sum": "x", "cumsum": "x", "reduce_window_sum": "x",
    "broadcast_in_dim": "x", "reshape": "x", "transpose": "x", "squeeze": "x", "rev": "x", "copy": "x",
    "concatenate": "every operand", "pad": "x, padding_value", "slice": "x",
    "dynamic_slice": "x", "dynamic_update_slice": "x, update",
    "gather": "operand", "scatter-add": "operand, updates", "scatter": "operand, updates (unique indices)",
    "scatter-mul": "operand",
    "dot_general": "lhs or rhs", "conv_general_dilated": "lhs or rhs", "reshard": "x",
    "triangular_solve": "b", "solve": "b", "custom_linear_solve": "b (the right-hand side)", "fft": "x", "name": "x", "reduce_precision": "x",
    "checkpoint": "the operands its program is linear in",
    "psum": "every operand", "all_gather": "x", "psum_scatter": "x", "all_to_all": "x", "ppermute": "x",
    "jit": "the operands its program is linear in",
    "cond": "the operands its branches are linear in", "scan": "the consts, carry and xs its body is linear in",
    "custom_lin": "the tangents (the linear stand-in for a custom_vjp function's derivative)",
}

# Primitives without a batching rule, and why none is needed.
NOT_BATCHED = {
    "custom_lin": "it exists only inside the linear jaxpr that `linearize` stages for a custom_vjp function, which "
                  "reverse mode transposes (calling the user's bwd) and never evaluates; vmap applied above that "
                  "level sees the custom_vjp call itself (batched by custom_derivatives.batch_custom_vjp), and a "
                  "vmap below it only reaches custom_lin's residual operands, never custom_lin.",
}


def _is_nullary(prim) -> bool:
    """True if the primitive takes no operands (iota, axis_index, ...): nothing to batch or differentiate."""
    params = inspect.signature(core.abstract_eval_rules[prim]).parameters.values()
    return not any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def _made_by_deflinear(prim) -> bool:
    return getattr(ad.primitive_jvps.get(prim), "__qualname__", "").startswith("deflinear.")


NAMES = sorted(PRIMITIVES)


def test_the_collection_found_every_family():
    """Guards the collection above: a primitive of each family (and of random/custom_derivatives) is present."""
    for name in ("exp", "add", "broadcast_in_dim", "reduce_sum", "cumsum", "gather", "sort", "reduce_window_max",
                 "conv_general_dilated", "cholesky", "scan", "psum", "threefry2x32", "mul_add", "stop_gradient"):
        assert name in PRIMITIVES, name


@pytest.mark.parametrize("name", NAMES)
def test_abstract_eval_rule(name):
    assert PRIMITIVES[name] in core.abstract_eval_rules, f"'{name}' has no abstract evaluation rule"


@pytest.mark.parametrize("name", NAMES)
def test_implementation(name):
    prim = PRIMITIVES[name]
    assert prim in impl_rules, f"'{name}' has no NumPy implementation"
    assert prim.impl is impl_rules[prim], f"'{name}'.impl is not its registered NumPy implementation"


@pytest.mark.parametrize("name", NAMES)
def test_batching_rule(name):
    prim = PRIMITIVES[name]
    if name in NOT_BATCHED:
        assert prim not in batching.primitive_batchers, f"'{name}' is declared unbatched but has a batching rule"
        return
    if _is_nullary(prim):
        return
    assert prim in batching.primitive_batchers, f"'{name}' has no batching rule (vmap)"


@pytest.mark.parametrize("name", NAMES)
def test_jvp_rule_or_declared_nondifferentiable(name):
    prim = PRIMITIVES[name]
    if prim in ad.NON_DIFFERENTIABLE:
        assert prim not in ad.primitive_jvps, f"'{name}' is declared non-differentiable but has a JVP rule"
        return
    if _is_nullary(prim):
        return
    assert prim in ad.primitive_jvps, (f"'{name}' has no JVP rule; give it one, or declare it with "
                                       "ad.defnondifferentiable if it has no derivative on purpose")


@pytest.mark.parametrize("name", NAMES)
def test_linear_primitives_have_a_transpose(name):
    prim = PRIMITIVES[name]
    if name in LINEAR:
        assert prim in ad.primitive_transposes, f"'{name}' is linear in {LINEAR[name]} but has no transpose rule"
    else:
        assert prim not in ad.primitive_transposes, (f"'{name}' has a transpose rule: add it to LINEAR with the "
                                                     "operands it is linear in")
        assert not _made_by_deflinear(prim), f"'{name}' was registered with ad.deflinear: add it to LINEAR"


def test_linear_table_names_existing_primitives():
    assert not set(LINEAR) - set(PRIMITIVES), set(LINEAR) - set(PRIMITIVES)
    assert not set(NOT_BATCHED) - set(PRIMITIVES), set(NOT_BATCHED) - set(PRIMITIVES)


def test_nullary_detection():
    """The operand-less primitives are recognized (and only those), so the exemptions above are not too wide."""
    nullary = {name for name in NAMES if _is_nullary(PRIMITIVES[name])}
    assert {"iota", "axis_index"} <= nullary
    assert not nullary & {"exp", "add", "select_n", "concatenate", "sort", "psum", "scan"}


def test_defnondifferentiable_refuses_a_primitive_with_a_jvp():
    with pytest.raises(ValueError, match="has a JVP rule"):
        ad.defnondifferentiable(PRIMITIVES["exp"])


def test_differentiating_a_nondifferentiable_primitive_raises():
    """pmax has no derivative (as in JAX): forward mode through it, inside pmap, names the primitive."""
    import numpy as np

    import fluxion.lax as lax

    def tangent_of_pmax(v):
        return fluxion.jvp(lambda x: lax.pmax(x, "i"), (v,), (v,))[1]

    x = np.ones((fluxion.local_device_count(), 3), np.float32)
    with pytest.raises(NotImplementedError, match="pmax"):
        fluxion.pmap(tangent_of_pmax, axis_name="i")(x)
