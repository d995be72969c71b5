"""Donation (`donate_argnums`): donated arrays are deleted, as in JAX, and no other live value is ever overwritten.

Before, `new = upd(p)` left `p` readable while its buffer had become `new`'s, and a later `upd(p)` silently
changed `new`.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def _ptr(x) -> int:
    return x._value.__array_interface__["data"][0]


@pytest.fixture
def upd():
    return fluxion.jit(lambda p: p - 0.5, donate_argnums=0)


def test_a_donated_array_is_deleted_and_reading_it_raises(upd):
    p = jnp.ones(3)
    new = upd(p)
    assert p.is_deleted() and not new.is_deleted()
    np.testing.assert_array_equal(new, [0.5, 0.5, 0.5])
    assert p.shape == (3,) and p.dtype == np.float32  # metadata stays readable, as in JAX
    for use in (lambda: p + 1, lambda: np.asarray(p), lambda: float(p[0]), lambda: upd(p), lambda: p.sum(),
                lambda: fluxion.jit(lambda x: x * 2)(p)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]"):
            use()
    assert "deleted" in repr(p)
    np.testing.assert_array_equal(new, [0.5, 0.5, 0.5])  # still intact


def test_delete_and_is_deleted():
    x = jnp.arange(4.0)
    assert not x.is_deleted()
    x.delete()
    x.delete()  # idempotent
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        x * 2


def test_the_buffer_is_reused_when_nothing_else_refers_to_it(upd):
    for _ in range(3):  # the compiling call and the cached calls
        p = jnp.ones(10_000)
        ptr = _ptr(p)
        assert _ptr(upd(p)) == ptr


@pytest.mark.parametrize("make_alias", [
    lambda p: p.reshape(2, -1),             # an eager view of the donated buffer
    lambda p: np.asarray(p),                # a NumPy view handed to the user
    lambda p: fluxion.jit(lambda x: x)(p),  # an output that is the input's buffer
    lambda p: p[1:],                        # an eager slice
])
def test_values_sharing_the_donated_buffer_are_never_overwritten(upd, make_alias):
    for _ in range(2):
        p = jnp.arange(10_000, dtype=jnp.float32)
        alias = make_alias(p)
        before = np.array(alias, copy=True)
        new = upd(p)
        np.testing.assert_array_equal(np.asarray(alias), before)
        np.testing.assert_array_equal(new, np.arange(10_000, dtype=np.float32) - 0.5)
        assert p.is_deleted()


def test_donating_one_array_twice_or_a_numpy_array_copies():
    f = fluxion.jit(lambda a, b: a * 2 + b, donate_argnums=(0, 1))
    p = jnp.ones(5000)
    out = f(p, p)
    np.testing.assert_array_equal(out, np.full(5000, 3.0))
    host = np.ones(5000, np.float32)
    out = f(host, jnp.ones(5000))
    np.testing.assert_array_equal(host, np.ones(5000))  # a NumPy argument stays the caller's
    np.testing.assert_array_equal(out, np.full(5000, 3.0))


def test_donated_pytree_leaves_are_deleted():
    step = fluxion.jit(lambda s, g: {"w": s["w"] - g, "b": s["b"]}, donate_argnums=0)
    state = {"w": jnp.ones(4), "b": jnp.zeros(2)}
    new = step(state, jnp.ones(4))
    assert state["w"].is_deleted() and state["b"].is_deleted()
    np.testing.assert_array_equal(new["w"], np.zeros(4))
    np.testing.assert_array_equal(new["b"], np.zeros(2))
