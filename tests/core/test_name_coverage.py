"""The README's "Coverage of the mirrored libraries" table is true: for every mirrored module it lists exactly the
public names of the real library that fluxion lacks (the test fails when a listed name appears in fluxion or an
unlisted one is missing), and the counts it gives.

Regenerate the table after adding names: `python tests/core/test_name_coverage.py` prints it (reasons are kept
from the current README).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")

# Real module -> fluxion module.
MODULES = {
    "jax": "fluxion",
    "jax.numpy": "fluxion.numpy",
    "jax.numpy.linalg": "fluxion.numpy.linalg",
    "jax.numpy.fft": "fluxion.numpy.fft",
    "jax.lax": "fluxion.lax",
    "jax.random": "fluxion.random",
    "jax.tree_util": "fluxion.tree_util",
    "jax.tree": "fluxion.tree",
    "jax.nn": "fluxion.nn",
    "jax.scipy.special": "fluxion.scipy.special",
    "jax.scipy.stats": "fluxion.scipy.stats",
    "jax.scipy.linalg": "fluxion.scipy.linalg",
    "jax.sharding": "fluxion.sharding",
    "jax.experimental.mesh_utils": "fluxion.experimental.mesh_utils",
    "jax.scipy.signal": "fluxion.scipy.signal",
    "jax.scipy.ndimage": "fluxion.scipy.ndimage",
    "jax.scipy.optimize": "fluxion.scipy.optimize",
    "jax.scipy.integrate": "fluxion.scipy.integrate",
    "jax.scipy.interpolate": "fluxion.scipy.interpolate",
    "jax.scipy.fft": "fluxion.scipy.fft",
    "jax.scipy.cluster.vq": "fluxion.scipy.cluster.vq",
    "jax.scipy.spatial.transform": "fluxion.scipy.spatial.transform",
    "jax.scipy.sparse.linalg": "fluxion.scipy.sparse.linalg",
    "flax.linen": "fluxion.flax.linen",
    "flax.nnx": "fluxion.flax.nnx",
    "optax": "fluxion.optax",
    "optax.contrib": "fluxion.optax.contrib",
    "haiku": "fluxion.haiku",
    "rlax": "fluxion.rlax",
}


_LIST_NAMES = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        m = importlib.import_module(name)
    except ImportError:
        continue
    names = getattr(m, "__all__", None)
    names = [n for n in dir(m) if not n.startswith("_")] if names is None else list(names)
    out[name] = sorted(n for n in names if not n.startswith("_"))
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=None)
def _real_public_names() -> dict:
    """The public names of every real module, listed by a fresh interpreter: in this process other tests may have
    imported submodules (e.g. `jax.extend`), which then show up in `dir(jax)`."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", _LIST_NAMES, *MODULES], capture_output=True, text=True, env=env,
                         timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _missing(real_name: str, ours_name: str) -> tuple[int, list[str]]:
    names = _real_public_names()[real_name]
    try:
        ours = importlib.import_module(ours_name)
    except ImportError:
        return len(names), sorted(names)
    return len(names), sorted(n for n in names if not hasattr(ours, n))


def _readme_rows() -> dict:
    with open(README) as f:
        text = f.read()
    section = text.split("## Coverage of the mirrored libraries", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([\w.]+)` \| (\d+) of (\d+) \|([^|]*)\|([^|]*)\|$", line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), int(m.group(3)), re.findall(r"`([\w.]+)`", m.group(4)),
                                m.group(5).strip())
    return rows


def _real_available(name: str) -> bool:
    return name in _real_public_names()


@pytest.mark.parametrize("real_name", sorted(MODULES))
def test_readme_lists_exactly_the_missing_names(real_name):
    if not _real_available(real_name):
        pytest.skip(f"{real_name} is not installed (the oracles extra)")
    total, missing = _missing(real_name, MODULES[real_name])
    rows = _readme_rows()
    assert real_name in rows, f"the README's coverage table has no row for {real_name}"
    have, of, listed, _ = rows[real_name]
    assert sorted(listed) == missing, (f"{real_name}: the README lists {sorted(set(listed) - set(missing))} as missing "
                                       f"but fluxion has them, and omits {sorted(set(missing) - set(listed))}")
    assert (have, of) == (total - len(missing), total), f"{real_name}: counts are {total - len(missing)} of {total}"


def main() -> None:
    rows = _readme_rows() if "## Coverage of the mirrored libraries" in open(README).read() else {}
    print("| module | fluxion has | missing | why |")
    print("|---|---|---|---|")
    for real_name in MODULES:
        total, missing = _missing(real_name, MODULES[real_name])
        why = rows.get(real_name, (0, 0, [], ""))[3]
        names = ", ".join(f"`{n}`" for n in missing)
        print(f"| `{real_name}` | {total - len(missing)} of {total} | {names} | {why} |")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(README))
    main()
