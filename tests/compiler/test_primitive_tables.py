"""The compiler's tables are keyed by primitive objects (never by name strings), and the ones that mirror a backend
table agree with it."""

from __future__ import annotations

import importlib

import pytest

from fluxion._src.backends.eager import elementwise as backend_elementwise
from fluxion._src.backends.compiler import blas, lowering, windowed
from fluxion._src.backends.compiler.fusion import check, groups, loops, onehot, scalar
from fluxion._src.core import Primitive

# The pass modules (the package exports the pass functions under the same names).
cse = importlib.import_module("fluxion._src.backends.compiler.passes.cse")
simplify = importlib.import_module("fluxion._src.backends.compiler.passes.simplify")

TABLES = {
    "lowering.LOWERINGS": lowering.LOWERINGS,
    "lowering.UFUNCS": lowering.UFUNCS,
    "lowering.FLOAT_UFUNCS": lowering.FLOAT_UFUNCS,
    "lowering.NOISY": lowering.NOISY,
    "windowed._OPS": windowed._OPS,
    "blas.BLAS_PRIMITIVES": blas.BLAS_PRIMITIVES,
    "scalar.TEMPLATES": scalar.TEMPLATES,
    "scalar.REDUCTIONS": scalar.REDUCTIONS,
    "groups.EXACT": groups.EXACT,
    "groups._FREE": groups._FREE,
    "groups._EXPENSIVE": groups._EXPENSIVE,
    "loops._EMITTERS": loops._EMITTERS,
    "loops._INDEX_MAPS": loops._INDEX_MAPS,
    "onehot._STATIC": onehot._STATIC,
    "check._ENVELOPES": check._ENVELOPES,
    "simplify.RULES": simplify.RULES,
    "cse.COMMUTATIVE": cse.COMMUTATIVE,
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_are_keyed_by_primitive_objects(name):
    table = TABLES[name]
    assert table, f"{name} is empty"
    bad = [k for k in table if not isinstance(k, Primitive)]
    assert not bad, f"{name} has keys that are not primitives: {bad}"


def test_noisy_primitives_equal_the_backends_quiet_set():
    # The compiler calls NumPy directly for these and silences floating-point warnings around generated code, as the
    # backend's implementations do; the two sets must list the same primitives. (Names are compared: the backend's
    # set may hold names or primitive objects.)
    backend = getattr(backend_elementwise, "QUIET_PRIMITIVES", None)
    if backend is None:
        backend = backend_elementwise._NOISY
    backend_names = {getattr(p, "name", p) for p in backend}
    assert {p.name for p in lowering.NOISY} == backend_names
