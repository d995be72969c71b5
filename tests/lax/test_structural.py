"""Table-driven tests of the structural `fluxion.lax` primitives (broadcast, reshape, slicing, padding, ...).

Each record fixes the operand shapes and static parameters of one case and names the NumPy reference from
`fluxion._src.lax_reference`. Every case is checked for values (eager and jit) against NumPy, for agreement of the
eager result with abstract evaluation, for first/second-order derivatives against finite differences (all of these
primitives are linear in their array operands, so this exercises the JVP and transpose rules), and for `vmap`
against a Python loop with several `in_axes`, including batched index operands.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
from fluxion._src import lax_reference as ref
from fluxion._src import test_util as tu

f32, i32, b1, c64 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_), np.dtype(np.complex64)
bf16 = np.dtype(ml_dtypes.bfloat16)
ALL = (f32, i32, b1, bf16)


@dataclasses.dataclass(frozen=True)
class Case:
    """One structural operation with fixed shapes and parameters.

    Attributes:
      name: test id.
      fn, reference: the fluxion function and the NumPy reference (same positional arguments).
      shapes: the shape of each array operand.
      dtypes: dtypes of the data operands for the value test.
      int_args: indices of operands that are int32 indices (drawn from `index_range`), not data.
      index_range: (low, high) for index operands (high exclusive); includes out-of-bounds starts to test clamping.
      diff: run derivative checks (float32).
      axes: the in_axes cases for the vmap test (a batch axis is inserted at each position).
    """

    name: str
    fn: Callable
    reference: Callable
    shapes: tuple
    dtypes: tuple = ALL
    int_args: tuple = ()
    index_range: tuple = (-1, 6)
    diff: bool = True
    axes: tuple = ((0,), (1,), (-1,))

    def args(self, rng, dtype) -> list:
        out = []
        for i, s in enumerate(self.shapes):
            if i in self.int_args:
                out.append(np.asarray(rng.integers(*self.index_range, s), np.int32))
            else:
                out.append(tu.rand_like(rng, s, dtype))
        return out


def _case(name, fn, reference, shapes, **kw):
    return Case(name, fn, reference, tuple(tuple(s) for s in shapes), **kw)


def _ds(sizes):
    return (lambda x, i, j: lax.dynamic_slice(x, (i, j), sizes),
            lambda x, i, j: ref.dynamic_slice(x, (i, j), sizes))


def _dus():
    return (lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
            lambda x, u, i, j: ref.dynamic_update_slice(x, u, (i, j)))


CASES = [
    _case("broadcast_in_dim_vector_to_matrix", lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)),
          lambda x: ref.broadcast_in_dim(x, (2, 3), (1,)), [(3,)], axes=((0,), (-1,))),
    _case("broadcast_in_dim_expand_size1", lambda x: lax.broadcast_in_dim(x, (3, 4), (0, 1)),
          lambda x: ref.broadcast_in_dim(x, (3, 4), (0, 1)), [(3, 1)]),
    _case("broadcast_in_dim_scalar", lambda x: lax.broadcast_in_dim(x, (2, 2), ()),
          lambda x: ref.broadcast_in_dim(x, (2, 2), ()), [()], axes=((0,),)),
    _case("broadcast_in_dim_middle", lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (0, 2)),
          lambda x: ref.broadcast_in_dim(x, (2, 4, 3), (0, 2)), [(1, 3)]),
    _case("broadcast_leading", lambda x: lax.broadcast(x, (4,)), lambda x: ref.broadcast(x, (4,)), [(2, 3)]),
    _case("reshape_2x3_to_3x2", lambda x: lax.reshape(x, (3, 2)), lambda x: ref.reshape(x, (3, 2)), [(2, 3)]),
    _case("reshape_flatten", lambda x: lax.reshape(x, (6,)), lambda x: ref.reshape(x, (6,)), [(2, 3)]),
    _case("reshape_with_dimensions", lambda x: lax.reshape(x, (4, 6), (2, 0, 1)),
          lambda x: ref.reshape(x, (4, 6), (2, 0, 1)), [(2, 3, 4)]),
    _case("reshape_scalar_to_1x1", lambda x: lax.reshape(x, (1, 1)), lambda x: ref.reshape(x, (1, 1)), [()],
          axes=((0,),)),
    _case("reshape_empty", lambda x: lax.reshape(x, (3, 0)), lambda x: ref.reshape(x, (3, 0)), [(0, 3)],
          diff=False),
    _case("transpose_3d", lambda x: lax.transpose(x, (2, 0, 1)), lambda x: ref.transpose(x, (2, 0, 1)),
          [(2, 3, 4)]),
    _case("transpose_2d", lambda x: lax.transpose(x, (1, 0)), lambda x: ref.transpose(x, (1, 0)), [(2, 3)]),
    _case("squeeze_two", lambda x: lax.squeeze(x, (0, 2)), lambda x: ref.squeeze(x, (0, 2)), [(1, 3, 1)]),
    _case("squeeze_last", lambda x: lax.squeeze(x, (1,)), lambda x: ref.squeeze(x, (1,)), [(2, 1)]),
    _case("expand_dims_front", lambda x: lax.expand_dims(x, (0,)), lambda x: ref.expand_dims(x, (0,)), [(2, 3)]),
    _case("expand_dims_two", lambda x: lax.expand_dims(x, (1, 3)), lambda x: ref.expand_dims(x, (1, 3)),
          [(2, 3)]),
    _case("rev_first", lambda x: lax.rev(x, (0,)), lambda x: ref.rev(x, (0,)), [(2, 3)]),
    _case("rev_two", lambda x: lax.rev(x, (0, 2)), lambda x: ref.rev(x, (0, 2)), [(2, 3, 4)]),
    _case("rev_none", lambda x: lax.rev(x, ()), lambda x: ref.rev(x, ()), [(3,)], axes=((0,),)),
    _case("concatenate_dim0", lambda a, b, c: lax.concatenate([a, b, c], 0),
          lambda a, b, c: ref.concatenate([a, b, c], 0), [(2, 3), (1, 3), (4, 3)],
          axes=((0, 0, 0), (None, 1, 0), (1, None, None), (-1, 2, -1))),
    _case("concatenate_dim1", lambda a, b: lax.concatenate([a, b], 1), lambda a, b: ref.concatenate([a, b], 1),
          [(2, 1), (2, 3)], axes=((0, 0), (0, None), (None, 2))),
    _case("pad_edges", lambda x, v: lax.pad(x, v, [(1, 2, 0)]), lambda x, v: ref.pad(x, v, [(1, 2, 0)]),
          [(3,), ()], axes=((0, None), (None, 0), (0, 0))),
    _case("pad_interior", lambda x, v: lax.pad(x, v, [(1, 2, 1)]), lambda x, v: ref.pad(x, v, [(1, 2, 1)]),
          [(3,), ()], axes=((0, None), (None, 0), (0, 0))),
    _case("pad_negative_2d", lambda x, v: lax.pad(x, v, [(-1, 1, 0), (0, -2, 1)]),
          lambda x, v: ref.pad(x, v, [(-1, 1, 0), (0, -2, 1)]), [(2, 3), ()],
          axes=((0, None), (1, 0), (-1, None))),
    _case("slice_1d", lambda x: lax.slice(x, (1,), (4,)), lambda x: ref.slice(x, (1,), (4,)), [(5,)],
          axes=((0,), (1,))),
    _case("slice_strided", lambda x: lax.slice(x, (1, 0), (3, 6), (1, 2)),
          lambda x: ref.slice(x, (1, 0), (3, 6), (1, 2)), [(4, 6)]),
    _case("slice_in_dim", lambda x: lax.slice_in_dim(x, 1, 5, 2, axis=1),
          lambda x: ref.slice_in_dim(x, 1, 5, 2, axis=1), [(4, 6)]),
    _case("index_in_dim_drop", lambda x: lax.index_in_dim(x, 2, axis=0, keepdims=False),
          lambda x: ref.index_in_dim(x, 2, axis=0, keepdims=False), [(4, 6)]),
    _case("index_in_dim_keep", lambda x: lax.index_in_dim(x, 1, axis=1, keepdims=True),
          lambda x: ref.index_in_dim(x, 1, axis=1, keepdims=True), [(4, 6)]),
    _case("dynamic_slice", *_ds((2, 3)), [(5, 6), (), ()], int_args=(1, 2),
          axes=((0, None, None), (None, 0, 0), (1, 0, None), (-1, None, 0))),
    _case("dynamic_update_slice", *_dus(), [(5, 6), (2, 3), (), ()], int_args=(2, 3),
          axes=((0, None, None, None), (None, 0, None, None), (0, 0, 0, 0), (None, None, 0, None),
                (1, -1, None, 0))),
]

CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES)

_PAD_BATCHED_VALUE = ("core gap: no batching rule for lax.pad with a batched padding value (JAX supports it); "
                      "repro: fluxion.vmap(lambda x, v: lax.pad(x, v, [(1, 1, 0)]), in_axes=(None, 0))"
                      "(np.ones(2, np.float32), np.arange(3, dtype=np.float32)) raises NotImplementedError")


def _pads_batched_value(axes):
    return axes is not None and axes[1] is not None


# (check, case name) -> (reason, predicate(in_axes) or None for every case); strict xfails for known core bugs.
KNOWN_FAILURES: dict[tuple, tuple] = {}


def _marks(check, case, axes=None):
    entry = KNOWN_FAILURES.get((check, case.name))
    if entry is not None and (entry[1] is None or entry[1](axes)):
        return [pytest.mark.xfail(reason=entry[0], strict=True)]
    return []


def _value_params():
    return [pytest.param(c, dt, id=f"{c.name}-{np.dtype(dt).name}", marks=_marks("values", c))
            for c in CASES for dt in c.dtypes]


def _grad_params():
    return [pytest.param(c, id=c.name, marks=_marks("grads", c)) for c in CASES if c.diff]


def _batch_params():
    return [pytest.param(c, axes, id=f"{c.name}-axes{axes}", marks=_marks("batching", c, axes))
            for c in CASES for axes in c.axes]


@pytest.mark.parametrize("case,dtype", _value_params())
def test_values_eager_jit_and_abstract_eval(case: Case, dtype, rng):
    args = case.args(rng, dtype)
    tu.check_against_numpy(case.fn, case.reference, args, check_dtypes=True, err_msg=f"{case.name} eager")
    tu.check_jit(case.fn, args, err_msg=f"{case.name} jit vs eager")
    tu.check_eval_shape(case.fn, args, err_msg=f"{case.name} eval_shape")


@pytest.mark.parametrize("case", _grad_params())
def test_grads_first_and_second_order(case: Case, rng):
    args = case.args(rng, f32)
    tu.check_grads(case.fn, args, order=2, modes=("fwd", "rev"), rng=rng, err_msg=case.name)


@pytest.mark.parametrize("case,axes", _batch_params())
def test_vmap_matches_loop(case: Case, axes, rng):
    examples = [case.args(rng, f32) for _ in range(3)]
    args = tu.stack_examples(examples, axes)
    tu.check_batching(case.fn, args, in_axes=axes, err_msg=f"{case.name} vmap{axes}")


# --------------------------------------------------------------------------------------------------------------
# Index-free constructors: iota, broadcasted_iota, full
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8])
def test_iota(dtype):
    fn = lambda: lax.iota(dtype, 5)  # noqa: E731
    tu.assert_allclose(fn(), ref.iota(dtype, 5))
    tu.check_jit(fn, [])
    tu.check_eval_shape(fn, [])


@pytest.mark.parametrize("dimension", [0, 1, 2])
def test_broadcasted_iota(dimension):
    fn = lambda: lax.broadcasted_iota(np.int32, (2, 3, 4), dimension)  # noqa: E731
    tu.assert_allclose(fn(), ref.broadcasted_iota(np.int32, (2, 3, 4), dimension))
    tu.check_jit(fn, [])
    tu.check_eval_shape(fn, [])


@pytest.mark.parametrize("fill,dtype,expected_dtype,weak", [
    (1.5, None, np.float32, True), (2, None, np.int32, True), (True, None, np.bool_, False),
    (3, np.float16, np.float16, False), (0.25, np.int32, np.int32, False)])
def test_full_dtype_and_weak_type(fill, dtype, expected_dtype, weak):
    out = lax.full((2, 3), fill, dtype)
    tu.assert_allclose(out, np.full((2, 3), fill).astype(expected_dtype))
    assert out.weak_type == weak
    tu.check_eval_shape(lambda: lax.full((2, 3), fill, dtype), [])


def test_full_traced_fill_value_is_differentiable():
    g = fluxion.grad(lambda v: lax.reduce_sum(lax.full((2, 3), v), (0, 1)))(np.float32(1.0))
    assert float(g) == 6.0


# --------------------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------------------

def test_reshape_size_mismatch_names_shapes():
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(4,\)"):
        fluxion.jit(lambda x: lax.reshape(x, (4,)))(np.zeros((2, 3), np.float32))


def test_broadcast_in_dim_incompatible_shape():
    with pytest.raises(TypeError, match=r"\(3,\)"):
        fluxion.jit(lambda x: lax.broadcast_in_dim(x, (2, 4), (1,)))(np.zeros(3, np.float32))


def test_concatenate_dtype_mismatch():
    with pytest.raises(TypeError, match=r"(?s)float32.*int32|int32.*float32"):
        fluxion.jit(lambda a, b: lax.concatenate([a, b], 0))(np.zeros(2, np.float32), np.zeros(2, np.int32))


def test_dynamic_slice_clamps_out_of_bounds_starts():
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    out = lax.dynamic_slice(x, (4, -3), (2, 3))  # 4 is clamped to 3; -3 counts from the end (JAX's default): 3
    tu.assert_allclose(out, x[3:5, 3:6])
    tu.assert_allclose(lax.dynamic_slice(x, (0, -9), (2, 3)), x[0:2, 0:3])  # -9 + 6 = -3, clamped to 0
    upd = lax.dynamic_update_slice(x, np.ones((2, 3), np.float32), (10, 10))
    expected = x.copy()
    expected[3:5, 3:6] = 1
    tu.assert_allclose(upd, expected)


def test_dynamic_slice_gradient_with_traced_index():
    x = np.arange(6, dtype=np.float32)
    g = fluxion.grad(lambda x, i: lax.reduce_sum(lax.dynamic_slice(x, (i,), (2,)), (0,)))(x, np.int32(3))
    tu.assert_allclose(g, np.array([0, 0, 0, 1, 1, 0], np.float32))
