"""The on-disk cache of compiled executables, keyed by the optimized IR and the argument signature.

An entry `<cache dir>/executables/<key>.json` records, for one program, the generated (fused) source and the
digests of the kernels it uses; the kernels themselves (`kernels/k_<digest>.py` and Numba's compiled code next to
them) are what make a second process start warm: loading them takes milliseconds, compiling them seconds. Python
code generation is re-run in every process (it takes milliseconds and binds live objects such as constants), and
its output is compared with nothing -- the entry's source is for inspection (`ls ~/.cache/fluxion/executables`).

Entries are JSON written atomically (temp file + rename); nothing here is unpickled. They live in the same private
directory as the kernels (see `fusion.runtime`) and count towards its size cap; when that directory is refused as
unsafe, nothing is recorded and no program counts as warm.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Sequence

from ...core import ClosedJaxpr
from .fusion import cachedir, runtime

# Part of every key: bump when generated code changes meaning for the same IR.
COMPILER_VERSION = 3


def key(closed: ClosedJaxpr, donated: Sequence[int] = ()) -> str:
    """The cache key of a program: its printed IR (shapes and dtypes included, so the argument signature too), the
    shapes of its constants, the donated arguments and the compiler version."""
    consts = [tuple(getattr(getattr(c, "_value", c), "shape", ())) for c in closed.consts]
    text = f"{COMPILER_VERSION}\n{closed.jaxpr}\n{consts}\n{tuple(donated)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def serial_key(k: str) -> str:
    """The key under which the serial first tier of program `k` is recorded when a tier with multi-threaded kernels
    replaces it later (see `compiler._fused_tier`)."""
    return f"{k}-serial"


def _path(k: str) -> str | None:
    root = cachedir.usable_dir()
    return None if root is None else os.path.join(root, "executables", f"{k}.json")


def warm(k: str, whole_step: bool = False) -> bool:
    """Whether an entry exists and all its kernels are on disk (with `whole_step`: including a whole-step function,
    whose digests start with "w"; see `wholestep`)."""
    path = _path(k)
    if path is None:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return False
    digests = entry.get("kernels", [])
    if whole_step and not any(str(d).startswith("w") for d in digests):
        return False
    paths = [runtime.kernel_path(d) for d in digests]
    return all(p is not None and os.path.exists(p) for p in paths)


def store(k: str, exe) -> None:
    """Records `exe`'s generated source and kernel digests (best effort: a read-only cache is not an error)."""
    entry = {"compiler_version": COMPILER_VERSION, "function": exe.name,
             "kernels": [kern.digest for kern in exe.kernels if kern.status == "compiled"],
             "source": exe.module.source()}
    path = _path(k)
    if path is None:
        return
    try:
        cachedir.write_atomic(path, json.dumps(entry, indent=1))
    except OSError:
        pass
