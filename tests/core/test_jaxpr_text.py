"""The text of jaxprs as JAX 0.10 prints them (parameters and layout; the programs' equations themselves are the
same in both libraries here). Each record is a program, its arguments and JAX's `str(make_jaxpr(f)(*args))`,
hard-coded; with JAX installed the table is also checked against it.

What is matched: parameters JAX hides (dot_general's None precision and preferred type, broadcast_in_dim's shape and
empty dimensions) or shows (the sharding parameters, always None here), dot_general's dimension numbers as lists,
jnp products passing their result dtype as preferred_element_type, unused outputs printed as `_`, and the 80-column
layout (a jaxpr or an equation's parameters on one line when they fit, nested jaxprs indented as JAX does).
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy  # noqa: F401  (binds `fluxion.numpy`, which the records reach as `m.numpy`)

f32 = np.float32
_X23, _X34, _V3 = np.ones((2, 3), f32), np.ones((3, 4), f32), np.ones(3, f32)

# name -> (m, *args -> outputs, args, JAX's text)
PROGRAMS = {
    "matmul": (
        lambda m, a, b: a @ b,
        (_X23, _X34),
        '{ lambda ; a:f32[2,3] b:f32[3,4]. let\n'
        '    c:f32[2,4] = dot_general[\n'
        '      dimension_numbers=(([1], [0]), ([], []))\n'
        '      preferred_element_type=float32\n'
        '    ] a b\n'
        '  in (c,) }'),
    "einsum": (
        lambda m, a, b: m.numpy.einsum('ij,jk->ik', a, b),
        (_X23, _X34),
        '{ lambda ; a:f32[2,3] b:f32[3,4]. let\n'
        '    c:f32[2,4] = dot_general[\n'
        '      dimension_numbers=(([1], [0]), ([], []))\n'
        '      preferred_element_type=float32\n'
        '    ] a b\n'
        '  in (c,) }'),
    "batched_matmul": (
        lambda m, a, b: m.numpy.matmul(a, b),
        (np.ones((2, 2, 3), f32), np.ones((2, 3, 4), f32)),
        '{ lambda ; a:f32[2,2,3] b:f32[2,3,4]. let\n'
        '    c:f32[2,2,4] = dot_general[\n'
        '      dimension_numbers=(([2], [1]), ([0], [0]))\n'
        '      preferred_element_type=float32\n'
        '    ] a b\n'
        '  in (c,) }'),
    "reshape": (
        lambda m, a: a.reshape(3, 2),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let\n'
        '    b:f32[3,2] = reshape[dimensions=None new_sizes=(3, 2) sharding=None] a\n'
        '  in (b,) }'),
    "sum": (
        lambda m, a: a.sum(axis=0),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let\n'
        '    b:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a\n'
        '  in (b,) }'),
    "mean": (
        lambda m, a: a.mean(),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let\n'
        '    b:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] a\n'
        '    c:f32[] = div b 6.0:f32[]\n'
        '  in (c,) }'),
    "argmax": (
        lambda m, a: m.numpy.argmax(a, axis=1),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let\n'
        '    b:i32[2] = argmax[axes=(1,) index_dtype=int32] a\n'
        '  in (b,) }'),
    "broadcast_to": (
        lambda m, a: m.numpy.broadcast_to(a, (4, 3)),
        (_V3,),
        '{ lambda ; a:f32[3]. let\n'
        '    b:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
        '  in (b,) }'),
    "two_equations_one_line": (
        lambda m, a: m.numpy.log(m.numpy.exp(a)),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let b:f32[2,3] = exp a; c:f32[2,3] = log b in (c,) }'),
    "astype": (
        lambda m, a: a.astype(m.numpy.int32),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let\n'
        '    b:i32[2,3] = convert_element_type[new_dtype=int32 weak_type=False] a\n'
        '  in (b,) }'),
    "dynamic_slice": (
        lambda m, a: m.lax.dynamic_slice(a, (0, 1), (2, 2)),
        (_X23,),
        '{ lambda ; a:f32[2,3]. let\n'
        '    b:f32[2,2] = dynamic_slice[slice_sizes=(2, 2)] a 0:i32[] 1:i32[]\n'
        '  in (b,) }'),
    "while_loop": (
        lambda m, a: m.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, a)),
        (_V3,),
        '{ lambda ; a:f32[3]. let\n'
        '    b:i32[] c:f32[3] = while[\n'
        '      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let\n'
        '          f:i32[] = add d 1:i32[]\n'
        '          g:f32[3] = mul e 2.0:f32[]\n'
        '        in (f, g) }\n'
        '      body_nconsts=0\n'
        '      cond_jaxpr={ lambda ; h:i32[] i:f32[3]. let\n'
        '          j:bool[] = lt h 3:i32[]\n'
        '        in (j,) }\n'
        '      cond_nconsts=0\n'
        '    ] 0:i32[] a\n'
        '  in (b, c) }'),
    "fori_loop_unused_counter": (
        lambda m, a: m.lax.fori_loop(0, 3, lambda k, c: c * 2, a),
        (_V3,),
        '{ lambda ; a:f32[3]. let\n'
        '    _:i32[] b:f32[3] = scan[\n'
        '      jaxpr={ lambda ; c:i32[] d:f32[3]. let\n'
        '          e:i32[] = add c 1:i32[]\n'
        '          f:f32[3] = mul d 2.0:f32[]\n'
        '        in (e, f) }\n'
        '      length=3\n'
        '      num_carry=2\n'
        '      num_consts=0\n'
        '      reverse=False\n'
        '      unroll=1\n'
        '    ] 0:i32[] a\n'
        '  in (b,) }'),
    "conv": (
        lambda m, a, w: m.lax.conv_general_dilated(a, w, (1, 1), 'SAME'),
        (np.ones((1, 1, 4, 4), f32), np.ones((1, 1, 3, 3), f32)),
        '{ lambda ; a:f32[1,1,4,4] b:f32[1,1,3,3]. let\n'
        '    c:f32[1,1,4,4] = conv_general_dilated[\n'
        '      batch_group_count=1\n'
        '      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))\n'
        '      feature_group_count=1\n'
        '      lhs_dilation=(1, 1)\n'
        '      out_sharding=None\n'
        '      padding=((1, 1), (1, 1))\n'
        '      precision=None\n'
        '      preferred_element_type=None\n'
        '      rhs_dilation=(1, 1)\n'
        '      window_strides=(1, 1)\n'
        '    ] a b\n'
        '  in (c,) }'),
    "top_k": (
        lambda m, a: m.lax.top_k(a, 2),
        (_V3,),
        '{ lambda ; a:f32[3]. let b:f32[2] c:i32[2] = top_k[axis=0 k=2] a in (b, c) }'),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_jaxpr_text_is_what_jax_prints(name):
    fn, args, want = PROGRAMS[name]
    assert str(fluxion.make_jaxpr(lambda *xs: fn(fluxion, *xs))(*args)) == want


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_table_is_what_jax_prints(name):
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")  # binds `jax.numpy` for the records' `m.numpy`
    fn, args, want = PROGRAMS[name]
    assert str(jax.make_jaxpr(lambda *xs: fn(jax, *xs))(*args)) == want
