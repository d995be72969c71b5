"""Shared machinery of the table-driven `fluxion.scipy` tests: argument domains and the record type.

A record names a function through `fn(module)`, applied alike to `fluxion.scipy.<sub>`, `scipy.<sub>` and
`jax.scipy.<sub>`, and gives one domain per positional argument, so every check (values against SciPy and JAX,
dtypes, derivatives, jit, vmap) draws its inputs from the same place.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np


def _away_from_integers(rng, shape, low, high):
    x = rng.uniform(low, high, shape)
    frac = x - np.floor(x)
    return np.floor(x) + np.clip(frac, 0.15, 0.85)


DOMAINS: dict[str, Callable] = {
    "real": lambda rng, s: rng.normal(0, 2, s),
    "pos": lambda rng, s: rng.uniform(0.5, 5.0, s),
    "small_pos": lambda rng, s: rng.uniform(0.2, 3.0, s),
    "big_pos": lambda rng, s: rng.uniform(1.5, 20.0, s),
    "gt1": lambda rng, s: rng.uniform(1.5, 6.0, s),
    "unit": lambda rng, s: rng.uniform(0.05, 0.95, s),
    "sym": lambda rng, s: rng.uniform(-0.9, 0.9, s),
    "nonint": lambda rng, s: _away_from_integers(rng, s, -4.0, 5.0),
    "count": lambda rng, s: rng.integers(0, 9, s).astype(np.float64),
    "count_pos": lambda rng, s: rng.integers(1, 9, s).astype(np.float64),
    "wide": lambda rng, s: rng.uniform(-30.0, 12.0, s),
    "angle": lambda rng, s: rng.uniform(-3.0, 3.0, s),
    "angle_pos": lambda rng, s: rng.uniform(0.1, 6.2, s),
    "bits": lambda rng, s: rng.integers(0, 2, s).astype(np.float64),
    "loc": lambda rng, s: rng.uniform(-0.4, 0.4, s),
    "lo": lambda rng, s: rng.uniform(-2.5, -1.0, s),
    "hi": lambda rng, s: rng.uniform(1.0, 2.5, s),
}


@dataclasses.dataclass(frozen=True)
class Rec:
    name: str
    fn: Callable[[Any], Callable]
    domains: tuple
    shapes: tuple | None = None  # one shape per argument (default: (5,) each)
    fixed: dict = dataclasses.field(default_factory=dict)  # argument index -> a fixed value (not differentiated)
    order: int = 2  # derivative order checked against finite differences (0: not differentiable)
    diff: tuple | None = None  # argument indices to differentiate (default: all drawn arguments)
    rtol: float = 1e-10  # float64 tolerance against SciPy/JAX
    rtol32: float = 2e-5  # float32 tolerance
    grad_tol: float = 1e-5
    scipy: bool = True  # compare values with SciPy
    jax: bool = True  # compare values, dtypes and weak types with real JAX
    vmap: bool = False  # run the vmap-against-a-loop check
    jax_rtol: float | None = None  # float64 tolerance against JAX where JAX itself is less accurate

    def __str__(self):
        return self.name


def draw(rec: Rec, rng: np.random.Generator, dtype=np.float64) -> list:
    shapes = rec.shapes or ((5,),) * len(rec.domains)
    args = []
    for i, (dom, shape) in enumerate(zip(rec.domains, shapes)):
        if i in rec.fixed:
            args.append(rec.fixed[i])
        else:
            args.append(np.asarray(DOMAINS[dom](rng, shape)).astype(dtype))
    return args


def differentiated(rec: Rec, args: list) -> tuple[Callable, list]:
    """`rec`'s function of only the arguments it differentiates, and their values."""
    idx = rec.diff if rec.diff is not None else tuple(i for i in range(len(args)) if i not in rec.fixed)

    def build(module):
        f = rec.fn(module)

        def g(*dyn):
            full = list(args)
            for i, v in zip(idx, dyn):
                full[i] = v
            return f(*full)
        return g
    return build, [args[i] for i in idx]
