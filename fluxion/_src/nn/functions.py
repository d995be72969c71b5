"""Activation functions and other neural-network helpers (mirrors `jax.nn`).

Each function is written with `fluxion.numpy`/`fluxion.lax` operations following JAX's definitions, so values
match JAX's and every function works under grad, jit and vmap. Where JAX fixes a derivative by hand (`relu` and
`relu6` have derivative 0 at their kinks; `softmax` has the closed-form JVP y * (t - sum(y * t)) when
`jax.softmax_custom_jvp` is set), the same rule is attached with `custom_jvp`.
"""

from __future__ import annotations

import operator
from functools import partial
from typing import Any

import numpy as np

from ..staged_call import staged_as_call
from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..config import config
from ..core import Array, Tracer
from ..custom_derivatives import custom_jvp

Axis = Any  # int, tuple of ints, or None

# `fuse_eager=True` marks the functions whose large eager calls run faster as one fused kernel than op by op on NumPy
# (measured by benchmarks/eager_fusion.py). Since the compiler's expm1/log1p/exp are vectorizable polynomial forms
# (fusion/mathlib.py), that is every activation built of several primitives: on 1e6 float32 elements, one core, the
# fused call takes 0.07x (soft_sign) to 0.3x (celu) of the op-by-op time. Functions of one primitive (relu through
# `maximum`, sigmoid, tanh) have nothing to fuse and stay inline.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _arr(name: str, x: Any) -> Any:
    """Converts an array-like argument, with a clear error for anything else."""
    if isinstance(x, (Array, Tracer)):
        return x
    try:
        return jnp.asarray(x)
    except TypeError as e:
        raise TypeError(f"{name}: expected an array-like argument, got {type(x).__name__} ({e})") from None


def _inexact(name: str, x: Any) -> Any:
    """`x` as an array of an inexact dtype (integers and bools are promoted to the default float)."""
    x = _arr(name, x)
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(dtypes.default_float_dtype())
    return x


# --------------------------------------------------------------------------------------------------------------
# Piecewise-linear activations (hand-written derivatives at the kinks)
# --------------------------------------------------------------------------------------------------------------

@custom_jvp
def relu(x: Any) -> Any:
    """Rectified linear unit, max(x, 0), elementwise. Its derivative at 0 is taken to be 0.

    Args:
      x: array.

    Returns:
      An array of `x`'s shape and dtype.
    """
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, jnp.zeros_like(g)))


@custom_jvp
def relu6(x: Any) -> Any:
    """min(max(x, 0), 6) elementwise; derivative 0 at 0 and 6.

    Returns:
      An array of `x`'s shape and dtype.
    """
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, jnp.zeros_like(g)))


@staged_as_call("hard_tanh", fuse_eager=True)
def hard_tanh(x: Any) -> Any:
    """-1 below -1, x on [-1, 1], 1 above 1."""
    x = _arr("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@staged_as_call("hard_sigmoid", fuse_eager=True)
def hard_sigmoid(x: Any) -> Any:
    """A piecewise-linear sigmoid, `relu6(x + 3) / 6`: 0 below -3, 1 above 3 and `x / 6 + 1 / 2` in between
    (Howard et al. 2019, "Searching for MobileNetV3"). Elementwise; the result has `x`'s shape and (floating) dtype,
    integers give the default float dtype. The derivative is 1/6 inside (-3, 3) and 0 outside and at the ends.

    >>> import fluxion.numpy as jnp
    >>> from fluxion import nn
    >>> nn.hard_sigmoid(jnp.array([-4.0, 0.0, 1.5, 4.0]))
    Array([0.  , 0.5 , 0.75, 1.  ], dtype=float32)
    """
    return relu6(x + 3.0) / 6.0


@staged_as_call("hard_silu", fuse_eager=True)
def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x) (also called hard swish)."""
    x = _arr("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@staged_as_call("leaky_relu", fuse_eager=True)
def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """x for x >= 0, negative_slope * x otherwise."""
    x = _arr("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@staged_as_call("sparse_plus", fuse_eager=True)
def sparse_plus(x: Any) -> Any:
    """0 for x <= -1, (x + 1)^2 / 4 on (-1, 1), x for x >= 1."""
    x = _arr("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@staged_as_call("sparse_sigmoid", fuse_eager=True)
def sparse_sigmoid(x: Any) -> Any:
    """clip((x + 1) / 2, 0, 1)."""
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


# --------------------------------------------------------------------------------------------------------------
# Smooth activations
# --------------------------------------------------------------------------------------------------------------

@staged_as_call("identity")
def identity(x: Any) -> Any:
    """Returns `x` as an array."""
    return _arr("identity", x)


def sigmoid(x: Any) -> Any:
    """Logistic sigmoid, 1 / (1 + exp(-x)) (the `logistic` primitive)."""
    return lax.logistic(_inexact("sigmoid", x))


@staged_as_call("softplus", fuse_eager=True)
def softplus(x: Any) -> Any:
    """log(1 + exp(x)), computed stably as logaddexp(x, 0)."""
    return jnp.logaddexp(x, 0)


@staged_as_call("log_sigmoid", fuse_eager=True)
def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x)."""
    x = _arr("log_sigmoid", x)
    return -softplus(-x)


@staged_as_call("soft_sign", fuse_eager=True)
def soft_sign(x: Any) -> Any:
    """The soft sign `x / (|x| + 1)`, a sigmoid-shaped map onto (-1, 1) that approaches its limits polynomially
    rather than exponentially (as `tanh` does). Elementwise; the result has `x`'s shape and (floating) dtype,
    integers give the default float dtype. Derivative: `1 / (|x| + 1)^2`.

    >>> import fluxion.numpy as jnp
    >>> from fluxion import nn
    >>> nn.soft_sign(jnp.array([-3.0, 0.0, 1.0]))
    Array([-0.75,  0.  ,  0.5 ], dtype=float32)
    """
    x = _arr("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@staged_as_call("silu", fuse_eager=True)
def silu(x: Any) -> Any:
    """x * sigmoid(x) (also called swish)."""
    x = _arr("silu", x)
    return x * sigmoid(x)


swish = silu


@staged_as_call("mish", fuse_eager=True)
def mish(x: Any) -> Any:
    """x * tanh(softplus(x))."""
    x = _arr("mish", x)
    return x * jnp.tanh(softplus(x))


@staged_as_call("squareplus", fuse_eager=True)
def squareplus(x: Any, b: Any = 4) -> Any:
    """(x + sqrt(x^2 + b)) / 2."""
    x = _arr("squareplus", x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@staged_as_call("elu", fuse_eager=True)
def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise (the exp branch never sees large x, so no overflow)."""
    x = _arr("elu", x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


@staged_as_call("celu", fuse_eager=True)
def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
    # min(x, 0) / alpha may overflow to -inf for a small alpha (expm1 then gives -1, the limit): XLA does that
    # silently, so NumPy's overflow warning is off here (only that one: NaN-producing operations still warn).
    with np.errstate(over="ignore"):
        return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


@staged_as_call("selu", fuse_eager=True)
def selu(x: Any) -> Any:
    """scale * elu(x, alpha) with the self-normalizing constants of Klambauer et al. (2017)."""
    # scale * x overflows to inf for x within 5% of the dtype's largest value, silently in XLA: NumPy's overflow
    # warning is off here (only that one).
    with np.errstate(over="ignore"):
        return _SELU_SCALE * elu(x, _SELU_ALPHA)


@staged_as_call("gelu", fuse_eager=True, stage=False)
def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit.

    Args:
      x: array (integers are promoted to float).
      approximate: use the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (default), else
        the exact 0.5 x erfc(-x / sqrt(2)).
    """
    x = _inexact("gelu", x)
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
        cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
        return x * cdf
    sqrt_half = np.sqrt(0.5).astype(x.dtype)
    return jnp.asarray(0.5 * x * lax.erfc(-x * sqrt_half), dtype=x.dtype)


def tanh(x: Any) -> Any:
    """Hyperbolic tangent (`jnp.tanh`)."""
    return jnp.tanh(x)


@staged_as_call("glu", fuse_eager=True)
def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: splits `x` in two halves a, b along `axis` and returns a * sigmoid(b).

    Raises:
      ValueError: the size of `axis` is odd.
    """
    x = _arr("glu", x)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {size} (shape {x.shape})")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


# --------------------------------------------------------------------------------------------------------------
# Normalizers
# --------------------------------------------------------------------------------------------------------------

@staged_as_call("logsumexp", fuse_eager=True, stage=False)
def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None) -> Any:
    """log(sum(b * exp(a))) along `axis`, computed stably by shifting by the (gradient-free) maximum.

    Args:
      a: array.
      axis: axis or axes to reduce (default all).
      b: optional scale factors broadcastable with `a`.
      keepdims: keep reduced axes as size 1.
      return_sign: also return the sign of the sum (then the log is of its absolute value).
      where: optional mask of the elements to include.

    Returns:
      The reduced array, or (array, sign) if `return_sign`.
    """
    a = _inexact("logsumexp", a)
    if b is not None:
        a, b = jnp.broadcast_arrays(a, jnp.asarray(b, dtype=a.dtype) if not dtypes.is_inexact(
            jnp.asarray(b).dtype) else jnp.asarray(b))
        a = a.astype(jnp.result_type(a, b))
        b = b.astype(a.dtype)
    amax = jnp.max(a, axis=axis, keepdims=True, where=where, initial=-np.inf)
    # The shift cancels mathematically; keeping it out of the gradient keeps the derivative exact.
    amax = lax.stop_gradient(lax.select(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
    exp_a = jnp.exp(a - amax)
    if b is not None:
        exp_a = exp_a * b
    sumexp = jnp.sum(exp_a, axis=axis, keepdims=keepdims, where=where)
    sign = jnp.sign(sumexp)
    if return_sign or not dtypes.is_complex(a.dtype):
        sumexp = jnp.abs(sumexp)
    out = jnp.log(sumexp)
    if not keepdims:
        amax = jnp.squeeze(amax, axis=axis)
    out = out + amax
    if return_sign:
        return out, sign
    if b is not None and not dtypes.is_complex(a.dtype):
        out = jnp.where(sign < 0, jnp.asarray(np.nan, dtype=out.dtype), out)
    return out


@staged_as_call("logmeanexp", fuse_eager=True)
def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """log(mean(exp(x))) along `axis`."""
    x = _inexact("logmeanexp", x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    ones = jnp.ones_like(x) if where is None else jnp.where(where, 1.0, 0.0).astype(x.dtype)
    count = jnp.sum(jnp.broadcast_to(ones, x.shape), axis=axis, keepdims=keepdims)
    return lse - jnp.log(count.astype(lse.dtype))


@staged_as_call("log_softmax", fuse_eager=True)
def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """x - logsumexp(x) along `axis` (masked entries, if `where` is given, are -inf).

    Args:
      x: array.
      axis: axis or axes holding the classes. Default -1.
      where: optional boolean mask of the entries to include.
    """
    x = _inexact("log_softmax", x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_logsumexp
    if where is not None:
        return jnp.where(where, result, -np.inf)
    return result


@partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x: Any, axis: Axis, where: Any) -> Any:
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    unnormalized = jnp.exp(x_safe - x_max)
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = jnp.where(where, result, 0)
    return result


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    (x, where), (x_dot, _) = primals, tangents
    y = _softmax(x, axis, where)
    return y, y * (x_dot - jnp.sum(y * x_dot, axis, where=where, keepdims=True))


def _softmax_autodiff(x: Any, axis: Axis, where: Any) -> Any:
    # The same computation, differentiated through its operations; the shift by the maximum is constant for autodiff
    # (it cancels in the ratio), which keeps the gradient finite.
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    unnormalized = jnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = jnp.where(where, result, 0)
    return result


@staged_as_call("softmax", fuse_eager=True, stage=False)
def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) along `axis`, shifted by the maximum for stability (masked entries give 0).

    Args:
      x: array.
      axis: axis or axes holding the classes. Default -1.
      where: optional boolean mask of the entries to include.

    The derivative follows `jax.softmax_custom_jvp`: set (fluxion's default; JAX's default is unset), the
    closed-form JVP y * (t - sum(y * t)); unset, autodiff through the operations. Values are the same either way.
    """
    x = _inexact("softmax", x)
    axis = tuple(axis) if isinstance(axis, list) else axis
    if config.jax_softmax_custom_jvp:
        return _softmax(x, axis, where)
    return _softmax_autodiff(x, axis, where)


@staged_as_call("standardize", fuse_eager=True)
def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5,
                where: Any = None) -> Any:
    """(x - mean) / sqrt(variance + epsilon), with mean and variance computed along `axis` if not given.

    The variance is E[x^2] - E[x]^2 clipped at 0 (JAX's "fast" algorithm).
    """
    x = _inexact("standardize", x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
        variance = jnp.clip(variance, 0)
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


normalize = standardize


@staged_as_call("_one_hot")
def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """One-hot encodings of integer class indices: out[..., c, ...] = (x[...] == c).

    Out-of-range indices (negative or >= num_classes) give all-zero rows.

    Args:
      x: array of class indices.
      num_classes: a concrete number of classes.
      dtype: output dtype (default float32, float64 with x64).
      axis: where the class axis goes in the output. Default -1 (last).

    Returns:
      An array of shape x.shape with `num_classes` inserted at `axis`.

    Raises:
      TypeError: `num_classes` is not a concrete integer.
      ValueError: `axis` is out of range for the output.
    """
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"one_hot: num_classes must be a concrete integer, got {num_classes!r}") from None
    x = _arr("one_hot", x)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    nd = x.ndim + 1
    if not -nd <= axis < nd:
        raise ValueError(f"one_hot: axis {axis} is out of range for an output of rank {nd}")
    pos = axis % nd
    lhs = jnp.expand_dims(x, pos)
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(pos, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), pos)
    return (lhs == rhs).astype(dt)
