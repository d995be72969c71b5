"""A helper process that compiles fused kernels into the disk cache, so that compiling overlaps the caller's own work.

Run as a script (`python compile_worker.py`, with the parent's interpreter and environment, so it finds the same
NumPy and Numba) by `runtime.precompile`, never imported. It reads one JSON object per line
on stdin, `{"digest", "path", "source"}`, and answers each with one line on stdout, `{"digest", "ok", "seconds"}` (and
`"error"` when the kernel failed). For each kernel it checks that the file at `path` (in the private cache directory,
written by the parent) holds exactly `source`, then runs that source with Numba's cache on, as the parent would:
Numba writes the machine code next to the file, where the parent's `load_kernel` finds it in milliseconds. A kernel
whose file differs is not compiled (the parent compiles it itself); nothing this process does is trusted beyond what
the parent verifies again when it loads.

Why a process and not a thread: Numba's compiler holds the GIL for most of its work (typing and lowering are Python
code) and serializes compilations behind one lock, so a compiling thread slows the caller's NumPy code and compiles
no faster with company. A process runs on another core.

Start-up is kept short by not importing fluxion: kernels import only `fusion.mathlib` (which needs NumPy, llvmlite
and Numba), so the packages above it are registered as empty namespaces pointing at their directories, and Python
loads `mathlib` alone instead of running `fluxion/__init__.py` (about a second).
"""

from __future__ import annotations

import json
import os
import sys
import time
import types

# The packages containing `mathlib`, outermost first; kernels import `fluxion._src.backends.compiler.fusion.mathlib`.
PACKAGES = ("fluxion", "fluxion._src", "fluxion._src.backends", "fluxion._src.backends.compiler",
            "fluxion._src.backends.compiler.fusion")


def _register_packages(fusion_dir: str) -> None:
    """Registers `PACKAGES` as empty packages whose `__path__` is their directory (no `__init__` runs)."""
    dirs = []
    d = fusion_dir
    for _ in PACKAGES:
        dirs.append(d)
        d = os.path.dirname(d)
    for name, path in zip(PACKAGES, reversed(dirs)):
        mod = types.ModuleType(name)
        mod.__path__ = [path]
        sys.modules[name] = mod


def _compile(job: dict) -> dict:
    digest, path, source = job["digest"], job["path"], job["source"]
    with open(path, encoding="utf-8") as f:
        if f.read() != source:
            raise RuntimeError(f"{path} does not hold the kernel's source")
    name = f"fluxion_kernel_{digest}"
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)  # noqa: S102 -- the parent's generated, verified source
    sys.modules.pop(name, None)
    return {"digest": digest, "ok": True}


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    # Python put this script's directory first on the path: its modules (`kernel`, `check`, ...) are not top-level
    # modules and must not shadow any.
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    _register_packages(here)
    for line in sys.stdin:
        if not line.strip():
            continue
        t0 = time.perf_counter()
        digest = None
        try:
            job = json.loads(line)
            digest = job["digest"]
            reply = _compile(job)
        except Exception as err:  # noqa: BLE001 -- reported to the parent, which compiles the kernel itself
            reply = {"digest": digest, "ok": False, "error": f"{type(err).__name__}: {err}"}
        reply["seconds"] = round(time.perf_counter() - t0, 6)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
