"""Every public name of the mirrored modules has a docstring, and the examples in them run.

- `test_public_names_have_docstrings`: every class and callable a user reaches in `fluxion`, `fluxion.numpy`,
  `fluxion.lax`, `fluxion.random`, `fluxion.nn`, `fluxion.tree_util`, `fluxion.flax.*`, `fluxion.optax`,
  `fluxion.haiku`, `fluxion.rlax` and `fluxion.clu` has its own docstring (a class's inherited one, a NamedTuple's
  generated `Name(field, ...)`, or an empty string do not count). A type alias (`optax.Params`) is documented by a
  string literal right after its assignment, the attribute-docstring form Sphinx reads.
- `test_examples_cover_half_of_the_functions`: at least half of the functions of `fluxion` and of `fluxion.numpy`
  carry a `>>>` example.
- `test_doctests`: every `>>>` example in the package's docstrings runs and prints what it shows (one test per
  module; pytest's `--doctest-modules` would also work but would import the examples' scripts and the test oracles'
  parity helpers).
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import sys
import types
from pathlib import Path

import pytest

import fluxion

MODULES = [
    "fluxion", "fluxion.numpy", "fluxion.numpy.linalg", "fluxion.numpy.fft", "fluxion.lax", "fluxion.random",
    "fluxion.nn", "fluxion.nn.initializers", "fluxion.tree_util",
    "fluxion.flax.linen", "fluxion.flax.nnx", "fluxion.flax.core", "fluxion.flax.struct",
    "fluxion.flax.serialization", "fluxion.flax.traverse_util", "fluxion.flax.jax_utils",
    "fluxion.flax.training.train_state", "fluxion.flax.training.checkpoints",
    "fluxion.optax", "fluxion.haiku", "fluxion.rlax", "fluxion.clu.parameter_overview",
]

# Names allowed to lack a docstring (none: keep it that way).
PENDING: dict = {}

_STDLIB_HELPERS = ("typing", "collections.abc", "__future__", "abc")


def public_names(module: types.ModuleType) -> list[str]:
    """Names a user reaches: `__all__`, else the non-underscore attributes that are not submodules nor typing
    helpers the module merely imported (`Callable`, `Any`)."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = []
    for n in sorted(set(names)):
        obj = getattr(module, n)
        if isinstance(obj, types.ModuleType):
            continue
        if not (inspect.isclass(obj) or callable(obj) or _is_alias(obj)):
            continue
        if getattr(obj, "__module__", None) in _STDLIB_HELPERS and not _is_alias(obj):
            continue
        if _is_alias(obj) and _is_bare_typing_name(obj):
            continue
        out.append(n)
    return out


def _is_alias(obj) -> bool:
    return (type(obj).__module__ == "typing" or isinstance(obj, (types.GenericAlias, types.UnionType))) \
        and not inspect.isclass(obj) and not inspect.isroutine(obj)


def _is_bare_typing_name(obj) -> bool:
    """`typing.Callable`, `typing.Any`: imported helpers, not aliases the module defines."""
    return getattr(obj, "__module__", None) in _STDLIB_HELPERS and not getattr(obj, "__args__", None)


def own_docstring(obj) -> str:
    """The object's own docstring ('' if it has none of its own)."""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__") or ""
        fields = getattr(obj, "_fields", None)
        if fields is not None and doc == f"{obj.__name__}({', '.join(fields)})":
            return ""  # the docstring namedtuple generates
        return doc.strip()
    return (getattr(obj, "__doc__", None) or "").strip()


def _attribute_docstring(modname: str, name: str, depth: int = 0) -> str:
    """The string literal after `name = ...` in the module that defines it, following `from X import name`."""
    if depth > 5:
        return ""
    spec = importlib.util.find_spec(modname)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return ""
    tree = ast.parse(Path(spec.origin).read_text())
    body = tree.body
    for i, node in enumerate(body):
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        if name in targets:
            nxt = body[i + 1] if i + 1 < len(body) else None
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                return nxt.value.value.strip()
            return ""
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                       modname if spec.submodule_search_locations else
                                                       modname.rpartition(".")[0]) if node.level else node.module
                    return _attribute_docstring(base, alias.name, depth + 1)
    return ""


def docstring_of(module: types.ModuleType, name: str) -> str:
    obj = getattr(module, name)
    if _is_alias(obj):
        return _attribute_docstring(module.__name__, name)
    return own_docstring(obj)


def _missing(modname: str) -> list[str]:
    mod = importlib.import_module(modname)
    return [n for n in public_names(mod) if not docstring_of(mod, n)]


@pytest.mark.parametrize("modname", MODULES)
def test_public_names_have_docstrings(modname):
    missing = _missing(modname)
    pending = PENDING.get(modname, frozenset())
    stale = sorted(pending - set(missing))
    assert not stale, f"{modname}: names now documented, remove them from PENDING: {stale}"
    missing = [n for n in missing if n not in pending]
    assert not missing, f"{modname}: {len(missing)} public names without a docstring: {missing}"


def _functions(module: types.ModuleType) -> list:
    seen, out = set(), []
    for n in public_names(module):
        obj = getattr(module, n)
        if inspect.isclass(obj) or _is_alias(obj) or id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append((n, obj))
    return out


def _example_share(modname: str) -> tuple[int, int, list[str]]:
    funcs = _functions(importlib.import_module(modname))
    without = [n for n, f in funcs if ">>>" not in (getattr(f, "__doc__", None) or "")]
    return len(funcs) - len(without), len(funcs), without


@pytest.mark.parametrize("modname", [
    "fluxion", "fluxion.numpy",
])
def test_examples_cover_half_of_the_functions(modname):
    with_example, total, without = _example_share(modname)
    assert 2 * with_example >= total, \
        f"{modname}: {with_example} of {total} functions carry a >>> example; none in: {without}"


def _package_modules() -> list[str]:
    """Every module of the package whose source holds a `>>>` (found on disk: `fluxion/_src` is a namespace package,
    which `pkgutil` does not walk) except the runnable examples (scripts that parse sys.argv) and the `run` entry
    point."""
    root = Path(fluxion.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if name.startswith(("fluxion.examples", "fluxion.run")) or name.endswith("__main__"):
            continue
        if ">>>" in path.read_text():  # only modules with examples get a test
            names.append(name)
    return names


_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@pytest.mark.parametrize("modname", _package_modules())
def test_doctests(modname):
    mod = importlib.import_module(modname)
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(mod, modname) if t.examples]
    assert tests, f"{modname} has `>>>` in its source but no docstring example was found"
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    report: list[str] = []
    for t in tests:
        runner.run(t, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_modules_under_test_exist():
    for m in MODULES:
        assert m in sys.modules or importlib.import_module(m)
