"""fluxion must never import the libraries it reimplements, and its libraries use only the public core API.

* Dynamic check: a fresh interpreter imports every module of the `fluxion` package (found by walking it with
  `pkgutil`) and then asserts that none of jax, jaxlib, flax, optax, haiku, rlax or torch was loaded.
* Static check: no file under fluxion/flax, fluxion/optax, fluxion/clu, fluxion/haiku, fluxion/rlax,
  fluxion/examples or fluxion/datasets imports `fluxion._src` (in any spelling: absolute, relative, or via
  `importlib`), and no fluxion file at all has an import statement naming a forbidden library.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import pytest

FORBIDDEN = ("jax", "jaxlib", "flax", "optax", "haiku", "rlax", "torch")
PUBLIC_ONLY_DIRS = ("flax", "optax", "clu", "haiku", "rlax", "examples", "datasets")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(REPO, "fluxion")


_IMPORT_ALL = textwrap.dedent("""
    import importlib, json, pkgutil, sys, traceback
    import fluxion
    failures = {{}}
    imported = []
    for info in pkgutil.walk_packages(fluxion.__path__, prefix="fluxion."):
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception:  # report, but keep importing the rest
            failures[info.name] = traceback.format_exc(limit=3)
    forbidden = sorted(m for m in sys.modules if m.split(".")[0] in {forbidden!r})
    print(json.dumps({{"imported": imported, "failures": failures, "forbidden": forbidden}}))
""")


def test_importing_every_module_loads_no_forbidden_library():
    code = _IMPORT_ALL.format(forbidden=set(FORBIDDEN))
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(report["imported"]) > 10, report  # the walk really visited the package
    assert report["forbidden"] == [], f"fluxion imported {report['forbidden']}"
    # A module that fails to import might hide a forbidden import behind the failure; surface it.
    assert not report["failures"], "modules failed to import:\n" + "\n".join(
        f"{k}:\n{v}" for k, v in report["failures"].items())


def _python_files(root: str):
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


def _imported_modules(path: str) -> list[tuple[int, str]]:
    """(line, absolute-or-relative module name) for each import in the file, plus importlib string arguments."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out = []
    pkg_parts = os.path.relpath(os.path.dirname(path), REPO).split(os.sep)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[:len(pkg_parts) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
                out.append((node.lineno, name))
                if node.module is None:  # from . import x  -> the submodules themselves
                    out.extend((node.lineno, ".".join(base + [a.name])) for a in node.names)
            else:
                out.append((node.lineno, node.module or ""))
                out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if fname in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value))
    return out


def _uses_private_core(module: str) -> bool:
    parts = module.split(".")
    return parts[:2] == ["fluxion", "_src"]


@pytest.mark.parametrize("subdir", PUBLIC_ONLY_DIRS)
def test_libraries_do_not_import_fluxion_src(subdir):
    root = os.path.join(PACKAGE, subdir)
    if not os.path.isdir(root):
        pytest.skip(f"fluxion/{subdir} does not exist yet")
    offenders = [f"{os.path.relpath(p, REPO)}:{line}: {mod}" for p in _python_files(root)
                 for line, mod in _imported_modules(p) if _uses_private_core(mod)]
    assert not offenders, "library code must use the public fluxion API only:\n" + "\n".join(offenders)


def test_no_fluxion_file_imports_a_forbidden_library():
    offenders = [f"{os.path.relpath(p, REPO)}:{line}: {mod}" for p in _python_files(PACKAGE)
                 for line, mod in _imported_modules(p) if mod.split(".")[0] in FORBIDDEN]
    assert not offenders, "\n".join(offenders)


def test_static_checker_detects_offending_imports(tmp_path, monkeypatch):
    """The AST scan itself must catch every spelling (so the tests above can fail)."""
    pkg = tmp_path / "fluxion" / "optax"
    pkg.mkdir(parents=True)
    bad = pkg / "bad.py"
    bad.write_text("import fluxion._src.core\nfrom fluxion._src import api\nfrom .._src.dtypes import x\n"
                   "import importlib\nimportlib.import_module('fluxion._src.jit')\nimport jax.numpy as jnp\n"
                   "from fluxion import numpy\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    mods = [m for _, m in _imported_modules(str(bad))]
    assert sum(_uses_private_core(m) for m in mods) >= 4
    assert any(m.split(".")[0] == "jax" for m in mods)
    assert not _uses_private_core("fluxion.numpy")
