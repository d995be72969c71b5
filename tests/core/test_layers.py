"""The layers of `fluxion/_src` import downward only, imports inside functions included.

From the bottom (see fluxion/_src/README.md):

0. base: config, errors, dtypes, tree_util, devices, distributed, array_methods, traceback_util, mesh_utils
1. core: Primitive, traces and tracers, abstract values, jaxprs
2. interpreters: ad, batching, partial_eval, the SPMD runtime, custom-derivative handling
3. lax: primitives and their rules (and the PRNG's primitives)
4. backends: the NumPy implementation table and the compiler (they register themselves; nothing below imports them)
5. api: grad/vmap/jit/pmap, stages, custom_jvp/custom_vjp
6. mirrors: the public modules `fluxion.numpy`, `.lax`, `.nn`, `.random`, `.tree_util`, ... (re-export lists) and
   the implementations behind them (`_src/numpy`, `_src/nn`, `_src/random`), test utilities
7. the `fluxion` package itself, then 8. the libraries (flax, optax, haiku, rlax, clu, datasets, examples)

A module may import its own layer or any layer below. Where a lower layer needs something from above, the upper
layer registers it (lax provides the interpreters' array operations; the backends register implementations).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "fluxion"

# (module prefix, layer); the longest matching prefix wins.
LAYERS = [
    ("fluxion._src.config", 0), ("fluxion._src.errors", 0), ("fluxion._src.dtypes", 0),
    ("fluxion._src.tree_util", 0), ("fluxion._src.devices", 0), ("fluxion._src.distributed", 0),
    ("fluxion._src.array_methods", 0), ("fluxion._src.traceback_util", 0), ("fluxion._src.source_info", 0),
    ("fluxion._src.mesh_utils", 0), ("fluxion._src.memory", 0), ("fluxion._src.monitoring", 0),
    ("fluxion._src.profiler", 0), ("fluxion._src.forks", 0),
    ("fluxion._src.sharding", 1),
    ("fluxion._src.core", 1),
    ("fluxion._src.interpreters", 2),
    ("fluxion._src.lax", 3), ("fluxion._src.random.threefry", 3),
    ("fluxion._src.backends", 4), ("fluxion._src.backends.compiler", 4),
    ("fluxion._src.api", 5), ("fluxion._src.api_util", 5), ("fluxion._src.jit", 5), ("fluxion._src.jit_trace", 5),
    ("fluxion._src.stages", 5), ("fluxion._src.pmap", 5), ("fluxion._src.custom_derivatives", 5),
    ("fluxion._src.placement", 5), ("fluxion._src.refs", 5), ("fluxion._src.shard_map", 5),
    ("fluxion._src.grad_cache", 5), ("fluxion._src.pure_functions", 5), ("fluxion._src.jit_flatten", 5),
    ("fluxion._src.numpy", 6), ("fluxion._src.nn", 6), ("fluxion._src.random", 6), ("fluxion._src.lax_reference", 6),
    ("fluxion._src.test_util", 6), ("fluxion._src.scipy", 6), ("fluxion._src", 6),
    ("fluxion", 6),  # the public modules (`fluxion.numpy`, ...); the package root itself is layer 7
    ("fluxion.flax", 8), ("fluxion.optax", 8), ("fluxion.haiku", 8), ("fluxion.rlax", 8), ("fluxion.clu", 8),
    ("fluxion.datasets", 8), ("fluxion.examples", 8),
]


def layer_of(module: str) -> int:
    if module == "fluxion":
        return 7
    best, layer = -1, None
    for prefix, lyr in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
            best, layer = len(prefix), lyr
    assert layer is not None, module
    return layer


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(module: str, path: pathlib.Path, known: dict) -> list:
    """(line, imported fluxion module) for every import statement of the file, at any depth."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from pkg import sub` imports module pkg.sub when there is one
            names = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            out += [(node.lineno, n) for n in (names or [target])]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in out if m == "fluxion" or m.startswith("fluxion.")]


def test_every_module_has_a_layer():
    for module in _modules():
        assert layer_of(module) in range(9), module  # (layer_of also fails on a module no prefix covers)


def test_imports_point_down():
    known = _modules()
    violations = []
    for module, path in sorted(known.items()):
        mine = layer_of(module)
        for line, target in _imports(module, path, known):
            if layer_of(target) > mine:
                violations.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} (layer {mine}) imports "
                                  f"{target} (layer {layer_of(target)})")
    assert not violations, "imports that run up a layer:\n" + "\n".join(violations)


@pytest.mark.parametrize("module", ["fluxion._src.lax", "fluxion._src.interpreters"])
def test_lax_and_interpreters_never_import_the_transformation_api(module):
    known = _modules()
    api = {"fluxion._src.api", "fluxion._src.jit", "fluxion._src.pmap"}
    for name, path in known.items():
        if name == module or name.startswith(module + "."):
            bad = [t for _, t in _imports(name, path, known) if t in api]
            assert not bad, (name, bad)
