"""Import aliases: `import jax` (and `flax`, `optax`, `haiku`, `rlax`, `clu`) resolve to fluxion's mirrors.

`install_aliases()` puts a finder first on `sys.meta_path`. For a module under one of the aliased top-level names it
imports the mirror (`jax.numpy` -> `fluxion.numpy`, `flax.linen` -> `fluxion.flax.linen`, ...) and hands that module
object to the import system, so `sys.modules["jax.numpy"] is fluxion.numpy`. A name without a mirror raises
`ImportError` naming it and the mirror looked for: the real library is never loaded in its place (that would mix
two array types in one program). `python -m fluxion.run prog.py` installs the aliases and runs a program unmodified.

The finder resolves names lazily, by module path, so this module imports none of the mirrored libraries itself.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

from . import forks

# Top-level name -> the fluxion package that mirrors it.
ALIASES = {
    "jax": "fluxion",
    "flax": "fluxion.flax",
    "optax": "fluxion.optax",
    "haiku": "fluxion.haiku",
    "rlax": "fluxion.rlax",
    "clu": "fluxion.clu",
}

# Packages that exist only as parts of the real libraries' builds; a program importing them needs the real thing.
_NEVER = {"jaxlib"}

_lock = forks.lock()


def mirror_name(fullname: str) -> str | None:
    """The fluxion module that stands for `fullname` (`"jax.numpy"` -> `"fluxion.numpy"`), or None if not aliased."""
    top, _, rest = fullname.partition(".")
    base = ALIASES.get(top)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


class _MirrorLoader(importlib.abc.Loader):
    """Hands out an already imported mirror module instead of executing anything."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        pass  # the mirror ran when it was imported under its own name


class AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves the aliased names to fluxion's mirrors (see the module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in _NEVER:
            raise ImportError(f"{fullname!r} is part of real JAX's build, which fluxion replaces; nothing in a "
                              f"program run on fluxion may import it", name=fullname)
        mirror = mirror_name(fullname)
        if mirror is None:
            return None
        try:
            module = importlib.import_module(mirror)
        except ModuleNotFoundError as e:
            if e.name is not None and (mirror == e.name or mirror.startswith(e.name + ".")):
                raise ImportError(f"fluxion has no mirror of {fullname!r} (looked for {mirror!r}); see the README's "
                                  f"table of missing names", name=fullname) from None
            raise
        spec = importlib.machinery.ModuleSpec(fullname, _MirrorLoader(module),
                                              is_package=hasattr(module, "__path__"))
        return spec


_finder = AliasFinder()


def install_aliases() -> None:
    """Makes `import jax`, `flax`, `optax`, `haiku`, `rlax` and `clu` (and their submodules) import fluxion's mirrors.

    Call it before the program's first such import (first cell of a notebook). Idempotent.

    Raises:
      RuntimeError: one of the real libraries is already imported in this process (its arrays and fluxion's would
        mix); restart the interpreter and install the aliases first.
    """
    with _lock:
        if _finder in sys.meta_path:
            return
        loaded = sorted(name for name in sys.modules
                        if name.partition(".")[0] in ALIASES and not _is_mirror(sys.modules[name]))
        if loaded:
            raise RuntimeError(f"install_aliases: the real {', '.join(loaded[:3])} "
                               f"{'is' if len(loaded) == 1 else 'are'} already imported in this process; restart "
                               "it and call fluxion.install_aliases() before importing them")
        sys.meta_path.insert(0, _finder)


def uninstall_aliases() -> None:
    """Removes the finder and the aliased entries of `sys.modules` (the mirrors stay imported as fluxion modules)."""
    with _lock:
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        for name in [n for n in sys.modules if n.partition(".")[0] in ALIASES and _is_mirror(sys.modules[n])]:
            del sys.modules[name]


def _is_mirror(module) -> bool:
    return getattr(module, "__name__", "").partition(".")[0] == "fluxion"
