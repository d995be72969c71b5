"""`python -m fluxion.run` and `fluxion.install_aliases()`: unmodified JAX programs run on fluxion's mirrors.

Every program runs in a fresh interpreter (the aliases change the import system of the process they are installed
in). Outputs are compared with the same program run on real JAX where it is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A program written against the real names: jax, jax.numpy, jax.random, flax.linen, optax, jnp.fft.
PROGRAM = textwrap.dedent("""
    import sys
    import jax
    import jax.numpy as jnp
    from jax import random
    import optax
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(1)(nn.relu(nn.Dense(8)(x)))

    key = random.PRNGKey(0)
    x = random.normal(key, (16, 3))
    y = jnp.sum(x, axis=1, keepdims=True)
    model = MLP()
    params = model.init(key, x)
    tx = optax.adam(1e-2)
    state = tx.init(params)

    @jax.jit
    def step(params, state):
        loss, g = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        upd, state = tx.update(g, state)
        return optax.apply_updates(params, upd), state, loss

    for i in range(5):
        params, state, loss = step(params, state)
    print(sys.argv[1:], f"{float(loss):.5f}", jnp.fft.rfft(jnp.arange(4.0)).tolist())
    print("backend:", jax.__name__, "jaxlib" in sys.modules)
""")


# A second program: host callbacks, debug printing, remat, scipy.stats, scipy.optimize.minimize and jnp.fft. Its
# stdout must be real JAX's to the character (the BFGS line ends in a line-search failure, status 3, in both).
PROGRAM2 = textwrap.dedent("""
import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy import stats
from jax.scipy.optimize import minimize


def host_log(x):
    # Runs on the host: NumPy in, NumPy out.
    return np.log1p(np.abs(x)).astype(x.dtype)


@jax.checkpoint
def block(w, x):
    return jnp.tanh(x @ w)


def loss(w, x):
    h = block(w, x)
    h = jax.pure_callback(host_log, jax.ShapeDtypeStruct(h.shape, h.dtype), h)
    spectrum = jnp.abs(jnp.fft.rfft(h, axis=-1))
    jax.debug.print("spectrum sum {s:.4f}", s=jnp.sum(spectrum))
    return jnp.sum(stats.norm.logpdf(h, loc=0.1, scale=2.0)) + jnp.mean(spectrum)


w = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
x = jnp.linspace(0.0, 2.0, 8).reshape(2, 4)
print(f"loss {float(jax.jit(loss)(w, x)):.5f}")
g = jax.grad(lambda w: jnp.sum(block(w, x)))(w)
print("grad", [f"{v:.4f}" for v in np.asarray(g).ravel()])


def bowl(p):
    return jnp.sum(jnp.array([1.0, 4.0, 9.0]) * (p - jnp.array([1.0, -2.0, 0.5])) ** 2) + 0.1 * jnp.sum(p ** 4)


res = minimize(bowl, jnp.zeros(3), method="BFGS")
print("minimize", bool(res.success), [f"{v:.3f}" for v in np.asarray(res.x)], f"{float(res.fun):.4f}")
print("cdf", [f"{v:.6f}" for v in np.asarray(stats.norm.cdf(jnp.array([-1.0, 0.0, 2.0])))])
""")

def _run(args, cwd, extra_env=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra_env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_run_executes_an_unmodified_program_on_fluxion(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    out = _run(["-m", "fluxion.run", str(prog), "a", "--b"], tmp_path)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first.startswith("['a', '--b'] ")
    assert second == "backend: fluxion False"


def test_run_gives_real_jax_output(tmp_path):
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    ours = _run(["-m", "fluxion.run", str(prog), "x"], tmp_path)
    theirs = _run([str(prog), "x"], tmp_path)
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout.splitlines()[0] == theirs.stdout.splitlines()[0]


def test_run_module_form(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("import sys, jax.numpy as jnp\nprint(sys.argv[1:], float(jnp.sum(jnp.ones(3))))\n")
    out = _run(["-m", "fluxion.run", "-m", "mypkg.main", "7"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['7'] 3.0"


@pytest.mark.parametrize("stmt,named", [
    ("import jax.experimental.pallas", "jax.experimental"),
    ("from jaxlib import xla_client", "jaxlib"),
    ("import flax.nnx_does_not_exist", "flax.nnx_does_not_exist"),
])
def test_missing_mirrors_raise_import_error_naming_them(tmp_path, stmt, named):
    prog = tmp_path / "prog.py"
    prog.write_text(f"try:\n    {stmt}\nexcept ImportError as e:\n    print('ImportError:', e)\n")
    out = _run(["-m", "fluxion.run", str(prog)], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ImportError:") and repr(named)[:-1] in out.stdout, out.stdout


def test_install_aliases_in_process(tmp_path):
    code = textwrap.dedent("""
        import sys
        import fluxion
        fluxion.install_aliases()
        fluxion.install_aliases()  # idempotent
        import jax, jax.numpy as jnp, jax.lax, optax, haiku, rlax
        from flax.training import train_state
        assert jax is fluxion and jnp is fluxion.numpy and jax.lax is fluxion.lax
        assert optax is fluxion.optax and haiku is fluxion.haiku and rlax is fluxion.rlax
        assert train_state is fluxion.flax.training.train_state
        assert sys.modules["jax.numpy"] is fluxion.numpy
        fluxion.uninstall_aliases()
        assert "jax" not in sys.modules and "jax.numpy" not in sys.modules
        print("ok")
    """)
    out = _run(["-c", code], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_install_aliases_refuses_after_real_jax(tmp_path):
    pytest.importorskip("jax")
    code = "import jax\nimport fluxion\nfluxion.install_aliases()\n"
    out = _run(["-c", code], tmp_path)
    assert out.returncode != 0
    assert "RuntimeError: install_aliases: the real jax" in out.stderr


def test_run_gives_real_jax_output_for_callbacks_stats_and_minimize(tmp_path):
    pytest.importorskip("jax")
    prog = tmp_path / "prog2.py"
    prog.write_text(PROGRAM2)
    ours = _run(["-m", "fluxion.run", str(prog)], tmp_path)
    theirs = _run([str(prog)], tmp_path)
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout == theirs.stdout
