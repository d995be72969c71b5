"""`fluxion.numpy.__array_namespace_info__` and `__array_api_version__` against `jax.numpy`'s."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def test_inspection_object():
    info = jnp.__array_namespace_info__()
    assert jnp.__array_api_version__ == "2024.12"
    assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}
    assert info.default_dtypes()["real floating"] == np.float32
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
    assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32"}
    with fluxion.enable_x64():
        assert info.default_dtypes()["integral"] == np.int64 and "float64" in info.dtypes()
    with pytest.raises(ValueError, match="unknown dtype kind"):
        info.dtypes(kind="strings")
    assert info.devices()[0] is None and len(info.devices()) == 1 + fluxion.device_count()


def test_matches_jax():
    jax = pytest.importorskip("jax")
    ours, theirs = jnp.__array_namespace_info__(), jax.numpy.__array_namespace_info__()
    assert ours.capabilities() == theirs.capabilities()
    assert ours.default_dtypes() == theirs.default_dtypes()
    for kind in (None, "bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
                 "numeric"):
        assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind), kind
