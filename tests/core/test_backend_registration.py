"""The NumPy backend registers its implementations itself, before any primitive can be bound.

* lax never imports a backend (static check over `fluxion/_src/lax`): implementations are registered by
  `fluxion._src.backends.eager`, keyed by the primitive objects it imports from lax.
* Whatever a program imports first (the public mirrors, a private lax module, the backend itself), a fresh
  interpreter can bind primitives right away: every entry point goes through `fluxion/__init__.py`, which loads the
  backend.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAX = os.path.join(REPO, "fluxion", "_src", "lax")


def _imports_of(path: str) -> list[tuple[int, str]]:
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out = []
    for node in ast.walk(tree):  # imports inside functions count too
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, "." * node.level + (node.module or "")))
            out.extend((node.lineno, "." * node.level + (node.module or "") + "." + a.name) for a in node.names)
    return out


def test_lax_never_imports_a_backend():
    offenders = []
    for name in sorted(os.listdir(LAX)):
        if name.endswith(".py"):
            path = os.path.join(LAX, name)
            offenders += [f"lax/{name}:{line}: {mod}" for line, mod in _imports_of(path)
                          if "backends" in mod.split(".")]
    assert not offenders, "lax modules must not import a backend (the backend registers itself):\n" + \
        "\n".join(offenders)


def test_import_scanner_sees_backend_imports(tmp_path):
    """The scan above must catch relative, absolute and function-level spellings (so that test can fail)."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ..backends.eager import register_impl\nimport fluxion._src.backends.eager\n"
                   "def f():\n    from ..backends import eager\n")
    mods = [m for _, m in _imports_of(str(bad))]
    assert sum("backends" in m.split(".") for m in mods) >= 3


_ENTRY_POINTS = {
    "fluxion.numpy": "import fluxion.numpy as jnp\nout = jnp.exp(jnp.arange(3.0))",
    "fluxion.lax": "import fluxion.lax as lax\nimport numpy as np\nout = lax.exp(np.arange(3.0, dtype=np.float32))",
    "private lax module": textwrap.dedent("""
        from fluxion._src.lax import elementwise
        from fluxion._src import core
        import numpy as np
        out = elementwise.exp_p.bind(core.Array(np.arange(3.0, dtype=np.float32)))
    """),
    "private control flow": textwrap.dedent("""
        from fluxion._src.lax import control_flow
        import numpy as np
        out = control_flow.scan(lambda c, x: (c + x, c), np.float32(0), np.arange(3.0, dtype=np.float32))[1]
        out = out + 1.0
    """),
    "the backend itself": textwrap.dedent("""
        from fluxion._src.backends import eager as backend
        from fluxion._src.lax import elementwise
        from fluxion._src import core
        import numpy as np
        assert elementwise.exp_p in backend.impl_rules
        out = elementwise.exp_p.bind(core.Array(np.arange(3.0, dtype=np.float32)))
    """),
    "fluxion.random": "import fluxion.random as random\nout = random.uniform(random.PRNGKey(0), (3,))",
}


@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
def test_fresh_interpreter_can_bind_after_any_first_import(entry):
    code = _ENTRY_POINTS[entry] + "\nimport numpy as np\nimport json\nprint(json.dumps(np.asarray(out).tolist()))\n"
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    values = np.asarray(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert values.shape == (3,) and np.all(np.isfinite(values))
    if entry in ("fluxion.numpy", "fluxion.lax", "private lax module", "the backend itself"):
        np.testing.assert_allclose(values, np.exp(np.arange(3.0)), rtol=1e-6)
