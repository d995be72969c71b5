"""`fluxion.scipy.spatial.transform`: 3-D rotations as unit quaternions (mirrors `jax.scipy.spatial.transform`).

A `Rotation` holds `quat`, one quaternion (x, y, z, w) (scalar last, SciPy's order) of shape (4,), or a stack
(N, 4). Conversions are closed-form: rotation vectors through the half-angle (with Taylor series near zero so they
stay smooth and differentiable), matrices by Shepperd's method (S. W. Shepperd, "Quaternion from rotation matrix",
J. Guidance and Control 1(3), 1978), Euler angles of any sequence by the direct method of E. Bernardes and S.
Viollet ("Quaternion to Euler angles conversion: a direct, general and computationally efficient method", PLoS ONE
17(11), 2022), the mean by the dominant eigenvector of sum w q q^T (F. L. Markley et al., "Averaging quaternions",
J. Guidance, Control, and Dynamics 30(4), 2007). `Slerp` interpolates with constant angular velocity between
key rotations (K. Shoemake, "Animating rotation with quaternion curves", SIGGRAPH 1985).

Both classes are NamedTuples (JAX's layouts: `Rotation(quat)`, `Slerp(times, timedelta, rotations, rotvecs)`), so
they are pytrees and cross `jit`, `vmap` and `grad`.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Sequence

import numpy as np

from ... import numpy as jnp
from ... import random as _random
from .. import dtypes

_EULER_EPS = 1e-7  # |middle angle| (or its distance to pi) below which a sequence is in gimbal lock


def _as_float(x: Any):
    x = jnp.asarray(x)
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(dtypes.default_float_dtype())
    return x


def _check_last(name: str, x, size: int, what: str):
    if x.ndim not in (1, 2) or x.shape[-1] != size:
        raise ValueError(f"Rotation.{name}: expected {what} of shape ({size},) or (N, {size}), got {x.shape}")


def _normalize(q):
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def _compose(p, q):
    """The Hamilton product p q (apply q, then p), scalar last."""
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    w = pw * qw - jnp.sum(pv * qv, axis=-1, keepdims=True)
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    return jnp.concatenate([v, w], axis=-1)


def _matrix(q):
    x, y, z, w = (q[..., i] for i in range(4))
    rows = [
        [w * w + x * x - y * y - z * z, 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), w * w - x * x + y * y - z * z, 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), w * w - x * x - y * y + z * z],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
    """Shepperd's method: of the four algebraically equal formulas, the one dividing by the largest of
    (m00, m11, m22, trace) is used, which keeps the division well conditioned."""
    d0, d1, d2 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = d0 + d1 + d2
    choice = jnp.argmax(jnp.stack([d0, d1, d2, trace], axis=-1), axis=-1)
    candidates = [
        jnp.stack([1 + 2 * d0 - trace, m[..., 1, 0] + m[..., 0, 1], m[..., 2, 0] + m[..., 0, 2],
                   m[..., 2, 1] - m[..., 1, 2]], axis=-1),
        jnp.stack([m[..., 1, 0] + m[..., 0, 1], 1 + 2 * d1 - trace, m[..., 2, 1] + m[..., 1, 2],
                   m[..., 0, 2] - m[..., 2, 0]], axis=-1),
        jnp.stack([m[..., 2, 0] + m[..., 0, 2], m[..., 2, 1] + m[..., 1, 2], 1 + 2 * d2 - trace,
                   m[..., 1, 0] - m[..., 0, 1]], axis=-1),
        jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1],
                   1 + trace], axis=-1),
    ]
    q = candidates[3]
    for k in range(3):
        q = jnp.where((choice == k)[..., None], candidates[k], q)
    return _normalize(q)


def _from_rotvec(rotvec):
    """q = (sin(angle/2) / angle * rotvec, cos(angle/2)), written in angle^2 with Taylor series below 1e-6 so that
    the derivative at the zero rotation is finite (the norm's is not)."""
    a2 = jnp.sum(rotvec * rotvec, axis=-1, keepdims=True)
    small = a2 <= 1e-6
    angle = jnp.sqrt(jnp.where(small, 1.0, a2))
    ratio = jnp.where(small, 0.5 - a2 / 48 + a2 * a2 / 3840, jnp.sin(angle / 2) / angle)
    w = jnp.where(small, 1 - a2 / 8 + a2 * a2 / 384, jnp.cos(angle / 2))
    return jnp.concatenate([ratio * rotvec, w], axis=-1)


def _angle(q):
    """The rotation angle in [0, pi] (q and -q are the same rotation)."""
    return 2 * jnp.arctan2(jnp.linalg.norm(q[..., :3], axis=-1), jnp.abs(q[..., 3]))


def _as_rotvec(q):
    """angle * v / |v| with angle = 2 atan2(|v|, w) (w >= 0 after choosing the sign); below |v|^2 = 1e-6 the
    ratio 2 atan(|v| / w) / |v| is its series (2 / w)(1 - r^2/3 + r^4/5), r = |v| / w, smooth at the identity."""
    q = jnp.where(q[..., 3:] < 0, -q, q)
    v, w = q[..., :3], q[..., 3:]
    n2 = jnp.sum(v * v, axis=-1, keepdims=True)
    small = n2 <= 1e-6
    n = jnp.sqrt(jnp.where(small, 1.0, n2))
    safe_w = jnp.where(small, w, 1.0)
    r2 = n2 / (safe_w * safe_w)
    ratio = jnp.where(small, 2 / safe_w * (1 - r2 / 3 + r2 * r2 / 5), 2 * jnp.arctan2(n, w) / n)
    return ratio * v


def _as_mrp(q):
    q = jnp.where(q[..., 3:] < 0, -q, q)
    return q[..., :3] / (1 + q[..., 3:])


def _from_mrp(p):
    n2 = jnp.sum(p * p, axis=-1, keepdims=True)
    return jnp.concatenate([2 * p, 1 - n2], axis=-1) / (1 + n2)


def _parse_seq(name: str, seq: str, lengths: Sequence[int]) -> tuple[list[int], bool]:
    if not isinstance(seq, str) or len(seq) not in lengths:
        want = "3 axes" if lengths == (3,) else "1 to 3 axes"
        raise ValueError(f"Rotation.{name}: expected an axis sequence of {want}, got {seq!r}")
    intrinsic = re.fullmatch(r"[XYZ]+", seq) is not None
    extrinsic = re.fullmatch(r"[xyz]+", seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError(f"Rotation.{name}: expected axes from 'xyz' (extrinsic) or 'XYZ' (intrinsic), got "
                         f"{seq!r}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Rotation.{name}: consecutive axes must differ, got {seq!r}")
    return ["xyz".index(c) for c in seq.lower()], extrinsic


def _elementary(axis: int, angle):
    zeros = jnp.zeros_like(angle)
    parts = [zeros, zeros, zeros, jnp.cos(angle / 2)]
    parts[axis] = jnp.sin(angle / 2)
    return jnp.stack(parts, axis=-1)


def _as_euler(q, axes: list[int], extrinsic: bool):
    """Bernardes and Viollet's method; in gimbal lock the outer angles' sum (or difference) goes to the first
    output angle and the last is 0 (JAX's convention)."""
    if not extrinsic:  # an intrinsic sequence is the extrinsic one reversed, with the angles reversed
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    w, v = q[..., 3], [q[..., 0], q[..., 1], q[..., 2]]
    if symmetric:
        a, b, c, d = w, v[i], v[j], v[k] * sign
    else:
        a, b, c, d = w - v[j], v[i] + v[k] * sign, v[j] + w, v[k] * sign - v[i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    first, third = half_sum - half_diff, half_sum + half_diff
    if not symmetric:
        third = third * sign
        middle = middle - np.pi / 2
    out = [first, middle, third] if extrinsic else [third, middle, first]
    lock_zero = jnp.abs(2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))) <= _EULER_EPS
    lock_pi = jnp.abs(2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b)) - np.pi) <= _EULER_EPS
    locked = 2 * jnp.where(lock_zero, half_sum, half_diff * (-1 if extrinsic else 1))
    if not extrinsic and not symmetric:
        locked = locked * sign
    out[0] = jnp.where(lock_zero | lock_pi, locked, out[0])
    out[2] = jnp.where(lock_zero | lock_pi, jnp.zeros_like(out[2]), out[2])
    angles = jnp.stack(out, axis=-1)
    return (angles + np.pi) % (2 * np.pi) - np.pi


class Rotation(NamedTuple):
    """A rotation, or a stack of N rotations, in 3-D, stored as unit quaternions `quat` ((4,) or (N, 4), scalar
    last). Build one with the `from_*` class methods (not the constructor, which takes `quat` as it is), convert
    with `as_*`, compose with `*` (r1 * r2 applies r2 first), apply to vectors with `apply`.

    Differences from SciPy (as in JAX): no `align_vectors`, `reduce`, `create_group`, `approx_equal`, nor the
    `scalar_first` option of the constructors; `random` takes a fluxion PRNG key (JAX raises
    NotImplementedError).
    """

    quat: Any

    @classmethod
    def concatenate(cls, rotations: Sequence["Rotation"]) -> "Rotation":
        """One stack of all `rotations` (each a stack, or single rotations given as (1, 4))."""
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_quat(cls, quat: Any) -> "Rotation":
        """From quaternions (x, y, z, w), (4,) or (N, 4), normalized to unit length."""
        quat = _as_float(quat)
        _check_last("from_quat", quat, 4, "quaternions")
        return cls(_normalize(quat))

    @classmethod
    def from_matrix(cls, matrix: Any) -> "Rotation":
        """From rotation matrices (3, 3) or (N, 3, 3) (Shepperd's method; a nearly orthogonal matrix gives the
        nearest rotation's quaternion approximately)."""
        matrix = _as_float(matrix)
        if matrix.ndim not in (2, 3) or matrix.shape[-2:] != (3, 3):
            raise ValueError(f"Rotation.from_matrix: expected shape (3, 3) or (N, 3, 3), got {matrix.shape}")
        return cls(_from_matrix(matrix))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> "Rotation":
        """From rotation vectors (axis times angle; radians, or degrees with `degrees`), (3,) or (N, 3)."""
        rotvec = _as_float(rotvec)
        _check_last("from_rotvec", rotvec, 3, "rotation vectors")
        if degrees:
            rotvec = jnp.deg2rad(rotvec)
        return cls(_from_rotvec(rotvec))

    @classmethod
    def from_mrp(cls, mrp: Any) -> "Rotation":
        """From modified Rodrigues parameters axis * tan(angle / 4), (3,) or (N, 3)."""
        mrp = _as_float(mrp)
        _check_last("from_mrp", mrp, 3, "modified Rodrigues parameters")
        return cls(_from_mrp(mrp))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> "Rotation":
        """From Euler angles about the axes of `seq` (1 to 3 of "xyz": extrinsic, fixed axes; of "XYZ": intrinsic,
        rotating axes); `angles` has len(seq) entries (N x len(seq) for a stack; a 1-axis `seq` also accepts a
        scalar or N angles)."""
        axes, extrinsic = _parse_seq("from_euler", seq, (1, 2, 3))
        angles = _as_float(angles)
        if len(axes) == 1 and (angles.ndim == 0 or angles.shape[-1] != 1):
            angles = angles[..., None]
        if angles.ndim not in (1, 2) or angles.shape[-1] != len(axes):
            raise ValueError(f"Rotation.from_euler: expected angles of shape ({len(axes)},) or (N, {len(axes)}) "
                             f"for seq {seq!r}, got {angles.shape}")
        if degrees:
            angles = jnp.deg2rad(angles)
        quats = [_elementary(ax, angles[..., n]) for n, ax in enumerate(axes)]
        q = quats[0]
        for nxt in quats[1:]:
            q = _compose(nxt, q) if extrinsic else _compose(q, nxt)
        return cls(q)

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> "Rotation":
        """The identity rotation ((4,)), or `num` of them ((num, 4))."""
        dtype = dtypes.canonicalize_dtype(dtype)
        q = jnp.asarray(np.array([0.0, 0.0, 0.0, 1.0]), dtype=dtype)
        return cls(q if num is None else jnp.tile(q, (num, 1)))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> "Rotation":
        """Rotations uniformly distributed over SO(3), drawn from `random_key` (normalized 4-D standard normal
        vectors: their directions are uniform on the 3-sphere)."""
        shape = (4,) if num is None else (num, 4)
        return cls(_normalize(_random.normal(random_key, shape)))

    def __getitem__(self, indexer) -> "Rotation":
        if self.single:
            raise TypeError("a single rotation is not subscriptable")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        if self.single:
            raise TypeError("a single rotation has no len()")
        return self.quat.shape[0]

    def __mul__(self, other: "Rotation") -> "Rotation":
        if not isinstance(other, Rotation):
            return NotImplemented
        return Rotation(_normalize(_compose(self.quat, other.quat)))

    @property
    def single(self) -> bool:
        """Whether this is one rotation (quat of shape (4,)) rather than a stack."""
        return self.quat.ndim == 1

    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        """The rotated vectors ((3,) or (N, 3); one rotation applies to every vector, N rotations to one vector or
        to N vectors pairwise); `inverse` applies the inverse rotation."""
        vectors = _as_float(vectors)
        _check_last("apply", vectors, 3, "vectors")
        m = self.as_matrix()
        if inverse:
            m = jnp.swapaxes(m, -1, -2)
        return jnp.einsum("...ij,...j->...i", m, vectors)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """The quaternions; `canonical` picks the sign with w >= 0 (the first nonzero of w, x, y, z positive),
        `scalar_first` returns (w, x, y, z)."""
        q = self.quat
        if canonical:
            x, y, z, w = (q[..., i] for i in range(4))
            negate = jnp.where(w != 0, w < 0, jnp.where(x != 0, x < 0, jnp.where(y != 0, y < 0, z < 0)))
            q = jnp.where(negate[..., None], -q, q)
        if scalar_first:
            q = jnp.concatenate([q[..., 3:], q[..., :3]], axis=-1)
        return q

    def as_matrix(self) -> Any:
        """The rotation matrices, (3, 3) or (N, 3, 3)."""
        return _matrix(self.quat)

    def as_rotvec(self, degrees: bool = False) -> Any:
        """The rotation vectors (angle in [0, pi] times the unit axis)."""
        rv = _as_rotvec(self.quat)
        return jnp.rad2deg(rv) if degrees else rv

    def as_mrp(self) -> Any:
        """The modified Rodrigues parameters (of the quaternion with w >= 0, so of norm at most 1)."""
        return _as_mrp(self.quat)

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        """Euler angles for the 3-axis `seq` (see `from_euler`), each in [-pi, pi] (the middle one in [0, pi] for
        a symmetric sequence like "zxz", [-pi/2, pi/2] otherwise). In gimbal lock (middle angle at its limit) the
        first angle carries the whole rotation about the locked axis and the last is 0."""
        axes, extrinsic = _parse_seq("as_euler", seq, (3,))
        angles = _as_euler(self.quat, axes, extrinsic)
        return jnp.rad2deg(angles) if degrees else angles

    def inv(self) -> "Rotation":
        """The inverse rotation(s) (conjugate quaternions)."""
        return Rotation(self.quat * jnp.asarray(np.array([-1, -1, -1, 1]), dtype=self.quat.dtype))

    def magnitude(self) -> Any:
        """The rotation angle(s) in radians, in [0, pi]."""
        return _angle(self.quat)

    def mean(self, weights: Any = None) -> "Rotation":
        """The weighted mean rotation of a stack: the unit quaternion maximizing sum w (q . q_i)^2 (the dominant
        eigenvector of sum w q_i q_i^T; Markley et al. 2007).

        Raises:
          ValueError: if `weights` is not 1-D with one weight per rotation.
        """
        n = len(self)
        w = jnp.ones((n,), self.quat.dtype) if weights is None else jnp.asarray(weights, self.quat.dtype)
        if w.ndim != 1 or w.shape[0] != n:
            raise ValueError(f"Rotation.mean: weights must be 1-D with one value per rotation ({n}), got shape "
                             f"{w.shape}")
        k = jnp.einsum("n,ni,nj->ij", w, self.quat, self.quat)
        _, vecs = jnp.linalg.eigh(k)
        return Rotation(vecs[:, -1])


class Slerp(NamedTuple):
    """Spherical linear interpolation between key rotations at increasing key times: between keys i and i+1 the
    rotation turns at constant angular velocity about a fixed axis. Build it with `Slerp.init(times, rotations)`
    and call it with times (scalar or 1-D) inside [times[0], times[-1]] (outside, the end segments are
    extrapolated). Fields: `times`, `timedelta` (their differences), `rotations` (the keys but the last) and
    `rotvecs` (each segment's relative rotation vector)."""

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> "Slerp":
        """Raises TypeError if `rotations` is not a Rotation; ValueError for fewer than 2 rotations or times that
        are not 1-D with one per rotation. (Increasing times are not checked: traced times cannot be.)"""
        if not isinstance(rotations, Rotation):
            raise TypeError(f"Slerp.init: rotations must be a Rotation, got {type(rotations).__name__}")
        if rotations.single or len(rotations) < 2:
            raise ValueError("Slerp.init: rotations must be a stack of at least 2 rotations")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1 or times.shape[0] != len(rotations):
            raise ValueError(f"Slerp.init: times must be 1-D with one entry per rotation ({len(rotations)}), got "
                             f"shape {times.shape}")
        starts = Rotation(rotations.quat[:-1])
        steps = (starts.inv() * Rotation(rotations.quat[1:])).as_rotvec()
        return cls(times, times[1:] - times[:-1], starts, steps)

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotation(s) at `times` (a single rotation for a scalar time).

        Raises:
          ValueError: for times of rank above 1.
        """
        t = jnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError(f"Slerp: times must be a scalar or 1-D, got shape {t.shape}")
        single = t.ndim == 0
        t = jnp.atleast_1d(t)
        seg = jnp.clip(jnp.searchsorted(self.times, t) - 1, 0, self.timedelta.shape[0] - 1)
        frac = (t - self.times[seg]) / self.timedelta[seg]
        out = self.rotations[seg] * Rotation.from_rotvec(self.rotvecs[seg] * frac[:, None])
        return out[0] if single else out
