"""Eager `lax` validates its arguments like `jit` does, with JAX's error classes.

Binding a primitive eagerly runs its NumPy implementation directly, which would clip, wrap or broadcast malformed
arguments silently (`dynamic_slice(ones((3, 3)), (1, 1), (4, 2))` used to return a (1, 2) array). The wrappers
therefore check their arguments in every mode. Each case below must raise, eagerly and under `jit`, the exception
class real JAX raises under `jit` (JAX's eager path differs from its own jit in a few of these cases: jit is the
reference), with a message that names the offending argument and the shapes involved.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.lax
import fluxion.lax.linalg
from fluxion._src import test_util as tu


@dataclasses.dataclass(frozen=True)
class Case:
    """A malformed call: `fn(lax, *args)` must raise `error` with a message matching `match`."""

    name: str
    fn: Callable
    args: tuple
    error: type
    match: str


def _ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


X = _ones(3, 3)
X9 = np.arange(9.0, dtype=np.float32).reshape(3, 3)
V = np.arange(5, dtype=np.float32)
V3 = np.arange(3, dtype=np.float32)

CASES = [
    Case("dynamic_slice_size_too_large", lambda lax, x: lax.dynamic_slice(x, (1, 1), (4, 2)), (X,), TypeError,
         r"slice_sizes \(4, 2\).*operand shape \(3, 3\)"),
    Case("dynamic_slice_negative_size", lambda lax, x: lax.dynamic_slice(x, (1, 1), (-1, 2)), (X,), TypeError,
         r"slice_sizes \(-1, 2\).*\(3, 3\)"),
    Case("dynamic_slice_wrong_number_of_indices", lambda lax, x: lax.dynamic_slice(x, (1,), (2, 2)), (X,),
         ValueError, r"len\(start_indices\) is 1 .*2 dimensions \(shape \(3, 3\)\)"),
    Case("dynamic_slice_wrong_number_of_sizes", lambda lax, x: lax.dynamic_slice(x, (1, 1), (2,)), (X,),
         ValueError, r"slice_sizes \(2,\).*\(3, 3\)"),
    Case("slice_limit_beyond_operand", lambda lax, v: lax.slice(v, (2,), (9,)), (V,), TypeError,
         r"limit_indices \(9,\).*\(5,\)"),
    Case("slice_limit_below_start", lambda lax, v: lax.slice(v, (3,), (2,)), (V,), TypeError,
         r"limit_indices \(2,\).*start_indices \(3,\)"),
    Case("slice_negative_start", lambda lax, v: lax.slice(v, (-1,), (2,)), (V,), TypeError,
         r"start_indices \(-1,\).*\(5,\)"),
    Case("slice_wrong_rank", lambda lax, v: lax.slice(v, (1, 1), (2, 2)), (V,), TypeError,
         r"start_indices \(1, 1\).*\(5,\)"),
    Case("pad_removes_more_than_exists", lambda lax, v: lax.pad(v, np.float32(0), [(-2, -2, 0)]), (V3,),
         ValueError, r"padding_config \(\(-2, -2, 0\),\).*\(3,\)"),
    Case("pad_negative_interior", lambda lax, v: lax.pad(v, np.float32(0), [(0, 0, -1)]), (V3,), ValueError,
         r"interior.*padding_config \(\(0, 0, -1\),\)"),
    Case("pad_config_of_wrong_length", lambda lax, v: lax.pad(v, np.float32(0), [(0, 0, 0), (0, 0, 0)]), (V3,),
         ValueError, r"padding_config .*\(3,\)"),
    Case("pad_value_of_other_dtype", lambda lax, v: lax.pad(v, np.int32(0), [(1, 1, 0)]), (V3,), TypeError,
         r"padding_value.*float32"),
    Case("index_in_dim_index_too_large", lambda lax, x: lax.index_in_dim(x, 7), (X,), IndexError,
         r"index 7 .*axis 0 with size 3"),
    Case("index_in_dim_index_too_negative", lambda lax, x: lax.index_in_dim(x, -4), (X,), IndexError,
         r"index -4 .*axis 0 with size 3"),
    Case("expand_dims_axis_out_of_bounds", lambda lax, x: lax.expand_dims(x, (5,)), (X,), ValueError,
         r"axis 5 .*rank 3.*\(3, 3\)"),
    Case("expand_dims_negative_axis_out_of_bounds", lambda lax, x: lax.expand_dims(x, (-5,)), (X,), ValueError,
         r"axis -5 .*rank 3"),
    Case("expand_dims_repeated_axis", lambda lax, x: lax.expand_dims(x, (0, 0)), (X,), ValueError,
         r"repeated axis.*\(0, 0\)"),
    Case("dynamic_update_slice_update_too_large", lambda lax, x: lax.dynamic_update_slice(x, _ones(4, 1), (0, 0)),
         (X,), TypeError, r"update shape \(4, 1\).*\(3, 3\)"),
    Case("dynamic_update_slice_wrong_number_of_indices",
         lambda lax, x: lax.dynamic_update_slice(x, _ones(1, 1), (0,)), (X,), ValueError,
         r"len\(start_indices\) is 1 .*\(3, 3\)"),
    Case("dynamic_update_slice_update_of_other_rank",
         lambda lax, x: lax.dynamic_update_slice(x, _ones(1), (0, 0)), (X,), TypeError,
         r"update shape \(1,\).*\(3, 3\)"),
    Case("dynamic_update_slice_update_of_other_dtype",
         lambda lax, x: lax.dynamic_update_slice(x, _ones(1, 1, dtype=np.int32), (0, 0)), (X,), TypeError,
         r"int32.*float32"),
    Case("squeeze_dimension_not_of_size_one", lambda lax, x: lax.squeeze(x, (0,)), (X,), ValueError,
         r"dimension 0 .*\(3, 3\)"),
    Case("squeeze_axis_out_of_bounds", lambda lax, x: lax.squeeze(x, (4,)), (X,), ValueError,
         r"axis 4 .*\(3, 3\)"),
    Case("transpose_not_a_permutation", lambda lax, x: lax.transpose(x, (0, 0)), (X,), TypeError,
         r"permutation \(0, 0\).*\(3, 3\)"),
    Case("rev_dimension_out_of_bounds", lambda lax, x: lax.rev(x, (3,)), (X,), TypeError,
         r"dimensions \(3,\).*\(3, 3\)"),
    Case("rev_negative_dimension", lambda lax, x: lax.rev(x, (-1,)), (X,), TypeError,
         r"dimensions \(-1,\).*\(3, 3\)"),
    Case("broadcast_in_dim_incompatible_shape", lambda lax, x: lax.broadcast_in_dim(x, (3, 4), (0, 1)), (X,),
         TypeError, r"\(3, 3\).*\(3, 4\)"),
    Case("broadcast_negative_size", lambda lax, x: lax.broadcast(x, (-1,)), (X,), TypeError,
         r"shape \(-1, 3, 3\)"),
    Case("iota_negative_size", lambda lax: lax.iota(np.int32, -1), (), TypeError, r"shape \(-1,\)"),
    Case("broadcasted_iota_dimension_out_of_bounds", lambda lax: lax.broadcasted_iota(np.int32, (2, 3), 5), (),
         ValueError, r"dimension 5 .*\(2, 3\)"),
    Case("argmax_axis_out_of_bounds", lambda lax, x: lax.argmax(x, 3, np.int32), (X,), ValueError,
         r"axis 3 .*\(3, 3\)"),
    Case("argmin_axis_out_of_bounds", lambda lax, x: lax.argmin(x, -3, np.int32), (X,), ValueError,
         r"axis -3 .*\(3, 3\)"),
    Case("clamp_bounds_of_other_shape", lambda lax, x: lax.clamp(np.zeros(2, np.float32), x, np.float32(1)), (X,),
         TypeError, r"\(3, 3\).*\(2,\)"),
    Case("pow_integer_base", lambda lax, v: lax.pow(v, np.int32(2)), (np.arange(3, dtype=np.int32),), TypeError,
         r"int32"),
    Case("integer_pow_bool", lambda lax, v: lax.integer_pow(v, 2), (np.array([True, False]),), TypeError,
         r"bool"),
    Case("round_integer", lambda lax, v: lax.round(v), (np.arange(3, dtype=np.int32),), TypeError, r"int32"),
    Case("triangular_solve_incompatible_shapes",
         lambda lax, a: lax.linalg.triangular_solve(a, _ones(2, 2), left_side=True), (X,), ValueError,
         r"\(3, 3\).*\(2, 2\)"),
    Case("triangular_solve_non_square", lambda lax, a: lax.linalg.triangular_solve(a, a, left_side=True),
         (_ones(2, 3),), ValueError, r"\(2, 3\)"),
    Case("cholesky_non_square", lambda lax, a: lax.linalg.cholesky(a), (_ones(2, 3),), TypeError, r"\(2, 3\)"),
]


def _raised(jax_like: Any, lax: Any, case: Case, mode: str):
    """Runs the case eagerly or under `jax_like.jit`; returns the exception raised, or None."""
    def fn(*xs):
        return case.fn(lax, *xs)

    if mode == "jit":
        fn = jax_like.jit(fn)
    try:
        fn(*case.args)
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return e
    return None


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_raises_like_jax(case, mode):
    err = _raised(fluxion, fluxion.lax, case, mode)
    assert err is not None, f"{case.name}: fluxion ({mode}) accepted the malformed call"
    assert type(err) is case.error, f"{case.name}: fluxion ({mode}) raised {type(err).__name__}: {err}"
    assert _matches(case.match, str(err)), f"{case.name}: message {str(err)!r} does not match {case.match!r}"
    jax = pytest.importorskip("jax")
    jax_err = _raised(jax, jax.lax, case, "jit")
    assert isinstance(jax_err, case.error), f"{case.name}: JAX under jit raised {jax_err!r}"


def _matches(pattern: str, message: str) -> bool:
    import re
    return re.search(pattern, message, re.S) is not None


# --------------------------------------------------------------------------------------------------------------
# Well-formed calls next to the malformed ones keep working (and agree with JAX)
# --------------------------------------------------------------------------------------------------------------

WELL_FORMED = [
    ("index_in_dim_negative_index", lambda lax, x: lax.index_in_dim(x, -1, keepdims=False), (X9,)),
    ("pad_negative_padding_within_size", lambda lax, v: lax.pad(v, np.float32(0), [(-1, -1, 0)]), (V3,)),
    ("expand_dims_negative_axis", lambda lax, x: lax.expand_dims(x, (-1, 0)), (X,)),
    ("slice_full_with_unit_strides", lambda lax, v: lax.slice(v, (0,), (5,), (1,)), (V,)),
    ("slice_strided", lambda lax, v: lax.slice(v, (1,), (5,), (2,)), (V,)),
    ("dynamic_slice_clamps_starts", lambda lax, x: lax.dynamic_slice(x, (2, 2), (2, 2)), (X9,)),
    ("triangular_solve_vector_rhs",
     lambda lax, a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
     (np.tril(np.arange(1.0, 10.0, dtype=np.float32).reshape(3, 3)), np.arange(3.0, dtype=np.float32))),
    ("triangular_solve_vector_rhs_right_side",
     lambda lax, a, b: lax.linalg.triangular_solve(a, b, left_side=False, lower=False),
     (np.triu(np.arange(1.0, 10.0, dtype=np.float32).reshape(3, 3)), np.arange(3.0, dtype=np.float32))),
]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name,fn,args", WELL_FORMED, ids=[w[0] for w in WELL_FORMED])
def test_well_formed_calls_match_jax(name, fn, args, mode):
    def f(*xs):
        return fn(fluxion.lax, *xs)

    out = (fluxion.jit(f) if mode == "jit" else f)(*args)
    jax = pytest.importorskip("jax")
    expected = jax.jit(lambda *xs: fn(jax.lax, *xs))(*args)
    assert out.shape == expected.shape
    tu.assert_allclose(out, np.asarray(expected), rtol=1e-5, atol=1e-6)
