"""Checking the fused tier against NumPy, kernel by kernel (`FLUXION_CHECK_FUSION=1`).

In check mode (`config.fluxion_check_fusion`, or the `FLUXION_CHECK_FUSION` environment variable), `jit` always
builds the fused tier, synchronously, with fusion thresholds lowered so that small test programs get kernels too,
and every kernel call is wrapped: the wrapper copies the kernel's inputs, runs the kernel, evaluates the kernel's
equations again with the NumPy backend on the copies, and raises `FusionMismatchError` when

* an output differs from NumPy's by more than rounding can explain (see below),
* an input that is not also an output buffer changed (the kernel wrote where it should only read), or
* two outputs share memory (each output must get its own buffer).

Outputs are compared kernel by kernel rather than program by program because a whole training step amplifies
legitimate last-bit differences (an Adam update divides by the root of a tiny second moment) into differences
no tolerance separates from real defects; one kernel's equations do not.

Tolerances. Integer and boolean outputs computed only from exact operations must match exactly, as must float
outputs of kernels that use only exactly rounded operations (`groups.EXACT`) and no reassociation. Otherwise, for
each output element the check bounds the rounding error by `rtol * E`, where `E` is a magnitude envelope
propagated through the kernel's equations alongside NumPy's values (`E >= |value|`; sums add the envelopes of
their terms, products multiply them, `exp(x)` scales by `1 + E(x)`, quotients and logarithms divide by the
operand; a running error bound in the manner of Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
section 3.3) and `rtol` is 32 units in the last place per equation plus the depth of the sums. A kernel that reads
the wrong element or buffer is off by the size of the values themselves, far outside that bound.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ....config import config
from ....core import Jaxpr, Literal, Var, pp_jaxpr
from ....lax.elementwise import (add_p, div_p, exp_p, expm1_p, integer_pow_p, log1p_p, log_p, mul_p, rsqrt_p, sqrt_p,
                                square_p, sub_p)
from ....lax.mul_add import mul_add_p
from ....lax.reductions import reduce_max_p, reduce_min_p, reduce_sum_p
from ....lax.structural import broadcast_in_dim_p
from .. import ir
from . import groups


class FusionMismatchError(AssertionError):
    """A fused kernel disagreed with the NumPy backend in check mode (`FLUXION_CHECK_FUSION=1`)."""


def enabled() -> bool:
    """Whether check mode is on."""
    return bool(config.fluxion_check_fusion)


# Envelope rules for operations whose rounding error is not bounded by the magnitudes of their operands alone.
def _env_div(out, vals, envs):
    x, y = vals
    ex, ey = envs
    with np.errstate(divide="ignore", invalid="ignore"):
        return (ex + np.abs(out) * ey) / np.abs(y)


def _env_exp(out, vals, envs):
    return np.abs(out) * (1.0 + envs[0])


def _env_log(out, vals, envs):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(out) + envs[0] / np.abs(np.asarray(vals[0], np.float64))


def _env_log1p(out, vals, envs):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(out) + envs[0] / np.abs(1.0 + np.asarray(vals[0], np.float64))


def _env_sqrt(out, vals, envs):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(out) + envs[0] / (2.0 * np.sqrt(np.abs(np.asarray(vals[0], np.float64))))


def _env_rsqrt(out, vals, envs):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(out) + envs[0] * np.abs(out) / (2.0 * np.abs(np.asarray(vals[0], np.float64)))


def _env_mul(out, vals, envs):
    return envs[0] * envs[1]


def _env_add(out, vals, envs):
    return envs[0] + envs[1]


_ENVELOPES = {
    add_p: _env_add, sub_p: _env_add, mul_p: _env_mul, div_p: _env_div, exp_p: _env_exp, expm1_p: _env_exp,
    log_p: _env_log, log1p_p: _env_log1p, sqrt_p: _env_sqrt, rsqrt_p: _env_rsqrt,
    square_p: lambda out, vals, envs: envs[0] * envs[0],
    mul_add_p: lambda out, vals, envs: envs[0] * envs[1] + envs[2],
}


def _envelope(eqn, out, vals: list, envs: list):
    """`E` of `eqn`'s output (float64, broadcastable to its shape) from its operands' values and envelopes."""
    prim = eqn.primitive
    with np.errstate(over="ignore", invalid="ignore"):
        if prim is integer_pow_p:
            return np.maximum(np.abs(out), envs[0] ** abs(int(eqn.params["y"])))
        if prim is reduce_sum_p:
            return np.sum(envs[0], axis=tuple(eqn.params["axes"]))
        if prim is reduce_max_p or prim is reduce_min_p:
            return np.max(envs[0], axis=tuple(eqn.params["axes"]), initial=0.0)
        if prim is broadcast_in_dim_p:
            return prim.impl(envs[0], **eqn.params)
        rule = _ENVELOPES.get(prim)
        if rule is not None:
            return np.maximum(np.abs(out), rule(out, vals, envs))
        # Selections, comparisons, min/max, conversions, bounded-derivative functions (tanh, logistic, sin, cos):
        # the error is at most the operands' plus one rounding of the result.
        env = np.abs(out)
        for e in envs:
            env = np.maximum(env, e)
        return env


def _abs64(x) -> np.ndarray:
    return np.abs(np.asarray(x).astype(np.float64))


class _Reference:
    """Evaluates a kernel's equations with the NumPy backend, tracking envelopes and which values are exact."""

    def __init__(self, eqns: Sequence[Any], producers: dict, consts: dict, reassociates: bool):
        self.eqns = list(eqns)
        self.members = {id(e) for e in eqns}
        self.producers = producers
        self.consts = consts
        self.reassociates = reassociates
        self.val: dict = {}
        self.env: dict = {}
        self.exact: dict = {}
        self.depth: dict = {}  # var -> equations plus log2 of the sum lengths on its longest path

    def seed(self, v: Var, value: np.ndarray) -> None:
        self.val[v] = value
        self.env[v] = _abs64(value)
        self.exact[v] = True
        self.depth[v] = 0.0

    def _get(self, v):
        if type(v) is Literal:
            raw = ir.literal_value(v)
            return raw, _abs64(raw), True, 0.0
        if v not in self.val:
            if v in self.consts:
                self.seed(v, np.asarray(self.consts[v]))
            else:
                e = self.producers.get(v)
                if e is None:
                    raise FusionMismatchError(f"check mode cannot evaluate kernel operand {v}: it is neither an "
                                              "input of the kernel nor computable from constants")
                self._run(e)
        return self.val[v], self.env[v], self.exact[v], self.depth[v]

    def _run(self, e) -> None:
        got = [self._get(v) for v in e.invars]
        vals = [g[0] for g in got]
        out = np.asarray(e.primitive.impl(*vals, **e.params))
        (o,) = e.outvars
        inside = id(e) in self.members
        op_exact = groups.exact(e) and not (inside and self.reassociates)
        if e.primitive is reduce_sum_p and out.dtype.kind == "f":
            op_exact = False
        self.val[o] = out
        self.env[o] = _envelope(e, out, vals, [g[1] for g in got])
        self.exact[o] = op_exact and all(g[2] for g in got)
        depth = max([g[3] for g in got], default=0.0) + 1.0
        if e.primitive is reduce_sum_p:
            n = math.prod(np.shape(vals[0])[a] for a in e.params["axes"])
            depth += math.log2(n + 1)
        self.depth[o] = depth

    def run(self) -> None:
        # The reference is computed one primitive at a time in NumPy, which warns where an intermediate overflows
        # (selu's exp of a huge input); the compiled code it checks does not warn (as XLA does not), so neither may
        # the check: its warnings would reach the user's filters only in check mode.
        with np.errstate(all="ignore"):
            for e in self.eqns:
                if e.outvars[0] not in self.val:
                    self._run(e)


def _same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal values, NaN matching NaN. The sign of a zero is not compared: kernels give maximum and
    minimum XLA's signed-zero rule (+0 > -0), while NumPy returns one of two equal operands (which one depends on
    its loop; see the README's notes on differences)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return a == b
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _unchanged(a: np.ndarray, saved: np.ndarray) -> bool:
    """Whether `a` still holds exactly the bits of `saved` (NaN payloads aside)."""
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, saved))
    return bool(np.all(((a == saved) & (np.signbit(a) == np.signbit(saved))) | (np.isnan(a) & np.isnan(saved))))


def _describe(spec, eqns, inputs) -> str:
    text = pp_jaxpr(Jaxpr([], [v for v, _, _ in inputs], [v for v, _ in spec.outputs], list(eqns)))
    return f"kernel k_{spec.digest} (its source: `Executable.source`)\n  equations:\n    " + \
        text.replace("\n", "\n    ")


class CheckedKernel:
    """A fused kernel wrapped so that every call is checked against the NumPy backend (see the module docstring).

    Args:
      fn: the compiled kernel.
      spec: its `KernelSpec` (argument layout).
      eqns: the equations of its group, in program order.
      producers: var -> equation for the whole program (operands read through outside broadcasts or constants).
      consts: constvar -> value for the whole program.
    """

    def __init__(self, fn, spec, eqns: Sequence[Any], producers: dict, consts: dict):
        self.fn = fn
        self.spec = spec
        self.eqns = list(eqns)
        self.producers = producers
        self.consts = consts
        self.reassociates = "reassoc" in spec.source

    def __call__(self, *args):
        spec = self.spec
        n = len(spec.inputs)
        saved = [np.array(a, copy=True) for a in args[:n]]
        self.fn(*args)
        outs = args[n:n + len(spec.outputs)]  # then the extents no array carries (`KernelSpec.extents`)
        for i in range(len(outs)):
            for j in range(i):
                if np.may_share_memory(outs[i], outs[j]):
                    raise FusionMismatchError(
                        f"outputs {j} and {i} share memory in {_describe(spec, self.eqns, spec.inputs)}")
        for k, (a, s) in enumerate(zip(args[:n], saved)):
            if not any(np.may_share_memory(a, o) for o in outs) and not _unchanged(a, s):
                raise FusionMismatchError(f"input {k} ({spec.inputs[k][0].aval.str_short()}) was modified by "
                                          f"{_describe(spec, self.eqns, spec.inputs)}")
        ref = _Reference(self.eqns, self.producers, self.consts, self.reassociates)
        for (v, shape, _), s in zip(spec.inputs, saved):
            if v not in ref.val:
                ref.seed(v, s.reshape(shape))
        ref.run()
        for k, ((v, _), o) in enumerate(zip(spec.outputs, outs)):
            self._compare(k, v, o.reshape(v.aval.shape), ref)

    def _compare(self, k: int, v, got: np.ndarray, ref: _Reference) -> None:
        want = np.asarray(ref.val[v])
        what = f"output {k} ({v.aval.str_short()})"
        where = f"in {_describe(self.spec, self.eqns, self.spec.inputs)}"
        if want.shape != got.shape or want.dtype != got.dtype:
            raise FusionMismatchError(f"{what}: NumPy gives {want.dtype}{list(want.shape)}, the kernel "
                                      f"{got.dtype}{list(got.shape)}, {where}")
        if ref.exact[v]:
            bad = ~_same_values(got, want)
            tol = None
        elif want.dtype.kind != "f":
            return  # an integer or boolean computed from rounded values: no bound to check
        else:
            eps = float(np.finfo(want.dtype).eps)
            rtol = 32 * eps * (1.0 + ref.depth[v])
            tol = rtol * np.broadcast_to(ref.env[v], want.shape)
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                checkable = np.isfinite(tol)
                bad = checkable & ((np.isnan(got) != np.isnan(want)) | (diff > tol))
        if bad.any():
            i = tuple(int(x) for x in np.argwhere(bad)[0])
            detail = "" if tol is None else f" (allowed difference {float(tol[i]):.3g})"
            raise FusionMismatchError(f"{what}: {int(bad.sum())} of {bad.size} elements differ from NumPy; first at "
                                      f"index {list(i)}: kernel {got[i]!r}, NumPy {want[i]!r}{detail}, {where}")


class CheckedScanKernel:
    """A loop kernel (a whole `scan`, see `loops`) wrapped so that every call is checked against the backend's
    `scan` implementation (a Python loop over the body on NumPy).

    The body runs many steps with reassociated sums and fused multiply-adds, so float outputs are compared with a
    relative tolerance of 2**-13 (float32) or 2**-40 (float64) of each array's largest magnitude; integer and boolean
    outputs must match exactly when every body equation is exact.
    """

    def __init__(self, fn, eqn):
        self.fn = fn
        self.eqn = eqn
        body = eqn.params["jaxpr"]
        self.n_body_consts = len(body.consts)
        self.exact = all(groups.exact(e) for e in body.jaxpr.eqns)

    def __call__(self, *args):
        eqn = self.eqn
        n_ops = len(eqn.invars)
        lo = self.n_body_consts
        operands = [np.array(a, copy=True).reshape(v.aval.shape) for a, v in zip(args[lo:lo + n_ops], eqn.invars)]
        self.fn(*args)
        nk = eqn.params["num_carry"]
        outs = list(args[lo + n_ops:])
        got = outs[len(outs) - nk:] + outs[:len(outs) - nk]  # the kernel takes ys first, then the carries
        want = eqn.primitive.impl(*operands, **eqn.params)
        for k, (v, g, w) in enumerate(zip(eqn.outvars, got, want)):
            g = np.asarray(g).reshape(v.aval.shape)
            w = np.asarray(w)
            if w.dtype.kind != "f":
                if self.exact and not np.array_equal(g, w):
                    raise FusionMismatchError(f"output {k} ({v.aval.str_short()}) of a scan loop kernel differs "
                                              "from the backend's scan")
                continue
            rtol = 2.0 ** -13 if w.dtype.itemsize <= 4 else 2.0 ** -40
            with np.errstate(invalid="ignore", over="ignore"):
                scale = np.max(np.abs(w[np.isfinite(w)]), initial=0.0)
                diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
                bad = (np.isnan(g) != np.isnan(w)) | (diff > rtol * (np.abs(w) + scale))
            if bad.any():
                i = tuple(int(x) for x in np.argwhere(bad)[0])
                raise FusionMismatchError(f"output {k} ({v.aval.str_short()}) of a scan loop kernel: {int(bad.sum())} "
                                          f"elements differ from the backend's scan; first at {list(i)}: kernel "
                                          f"{g[i]!r}, NumPy {w[i]!r}")
