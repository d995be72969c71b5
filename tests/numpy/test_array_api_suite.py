"""The data-apis array-api-tests suite (2024.12) against `fluxion.numpy`, held to what real `jax.numpy` passes.

The suite is third-party code that fluxion runs but does not ship. It is looked for at `$FLUXION_ARRAY_API_TESTS`,
then at /work/array-api-tests (a checkout with its `array-api` spec submodule); without one, or without its
dependencies (`ndindex`, and JAX as the oracle), the suite tests skip and say why.

How a file is judged: the suite file runs twice in subprocesses, with `ARRAY_API_TESTS_MODULE=jax.numpy` and with
`fluxion.numpy` (both in 64-bit mode, `JAX_ENABLE_X64=1`, as the suite's documentation recommends), with a small
Hypothesis budget; every test that passes for JAX must pass for fluxion. Tests JAX fails are not required, so no
hand-kept xfail list is needed: the oracle run is the list. `FLUXION_ARRAY_API_FILES` (comma-separated file names)
picks the files; the default is the fast ones, which keeps CI's added time within about a minute;
`FLUXION_ARRAY_API_MAX_EXAMPLES` sets the budget (default 5).

`test_harness_on_a_synthetic_suite` checks the harness itself (collection, the JUnit reading and the comparison)
on a tiny suite written to a temporary directory, so it runs in every CI job.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]
_DEFAULT_FILES = ("test_inspection_functions.py", "test_has_names.py", "test_signatures.py",
                  "test_data_type_functions.py", "test_constants.py", "test_utility_functions.py")


def _suite_dir() -> Path | None:
    for candidate in (os.environ.get("FLUXION_ARRAY_API_TESTS"), "/work/array-api-tests"):
        if candidate and (Path(candidate) / "array_api_tests").is_dir() and (Path(candidate) / "conftest.py").exists():
            return Path(candidate)
    return None


def run_suite_file(suite: Path, test_file: str, module: str, workdir: Path, max_examples: int = 5,
                   extra_args: tuple = ()) -> dict[str, str]:
    """Runs one file of the suite at `suite` against the array module `module` in a subprocess.

    Returns:
      {test node id: "passed" | "failed" | "skipped"} read from pytest's JUnit XML report.
    """
    report = workdir / f"{module.replace('.', '_')}_{test_file}.xml"
    env = dict(os.environ, ARRAY_API_TESTS_MODULE=module, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([str(_REPO), str(suite), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
           f"--junitxml={report}", f"--hypothesis-max-examples={max_examples}", "--hypothesis-disable-deadline",
           f"array_api_tests/{test_file}", *extra_args]
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=1800)
    if not report.exists():
        raise RuntimeError(f"the suite file {test_file} did not run for {module} (exit {proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcomes[name] = ("failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds
                          else "passed")
    return outcomes


def regressions(oracle: dict[str, str], ours: dict[str, str]) -> list[str]:
    """The tests that pass for the oracle but not for us (missing from our run counts as not passing)."""
    return sorted(name for name, outcome in oracle.items() if outcome == "passed" and ours.get(name) != "passed")


def _files() -> list[str]:
    chosen = os.environ.get("FLUXION_ARRAY_API_FILES")
    return [f.strip() for f in chosen.split(",") if f.strip()] if chosen else list(_DEFAULT_FILES)


@pytest.mark.parametrize("test_file", _files())
def test_suite_file_passes_what_jax_passes(test_file, tmp_path):
    suite = _suite_dir()
    if suite is None:
        pytest.skip("array-api-tests not found (set FLUXION_ARRAY_API_TESTS to a checkout of "
                    "data-apis/array-api-tests with its array-api submodule)")
    pytest.importorskip("jax", reason="jax.numpy is the oracle of which suite tests must pass")
    pytest.importorskip("ndindex", reason="the array-api-tests suite needs ndindex")
    if not (suite / "array_api_tests" / test_file).exists():
        pytest.skip(f"{test_file} is not in this checkout of the suite")
    budget = int(os.environ.get("FLUXION_ARRAY_API_MAX_EXAMPLES", "5"))
    oracle = run_suite_file(suite, test_file, "jax.numpy", tmp_path, budget)
    ours = run_suite_file(suite, test_file, "fluxion.numpy", tmp_path, budget)
    assert any(v == "passed" for v in oracle.values()), f"jax.numpy passed no test of {test_file}: {oracle}"
    missing = regressions(oracle, ours)
    assert not missing, f"{len(missing)} tests of {test_file} pass for jax.numpy but not fluxion.numpy: {missing}"


_FAKE_CONFTEST = '''
def pytest_addoption(parser):
    parser.addoption("--hypothesis-max-examples", action="store", default=None)
    parser.addoption("--hypothesis-disable-deadline", action="store_true")
'''

_FAKE_TESTS = '''
import importlib, os
import pytest
xp = importlib.import_module(os.environ["ARRAY_API_TESTS_MODULE"])

def test_both_pass():
    assert xp.asarray([1, 2]).shape == (2,)

def test_only_jax_passes():
    assert xp.__name__.startswith("jax")

def test_both_fail():
    assert xp.__name__ == "no such module"

@pytest.mark.parametrize("n", [1, 2])
def test_float64_in_x64_mode(n):
    assert xp.asarray(0.5 * n, dtype=xp.float64).dtype == xp.float64

def test_skipped():
    pytest.skip("not applicable")
'''


def test_harness_on_a_synthetic_suite(tmp_path):
    pytest.importorskip("jax")
    suite = tmp_path / "suite"
    (suite / "array_api_tests").mkdir(parents=True)
    (suite / "conftest.py").write_text(_FAKE_CONFTEST)
    (suite / "array_api_tests" / "__init__.py").write_text("")
    (suite / "array_api_tests" / "test_fake.py").write_text(_FAKE_TESTS)
    oracle = run_suite_file(suite, "test_fake.py", "jax.numpy", tmp_path)
    ours = run_suite_file(suite, "test_fake.py", "fluxion.numpy", tmp_path)
    prefix = "array_api_tests.test_fake::"
    assert oracle == {prefix + "test_both_pass": "passed", prefix + "test_only_jax_passes": "passed",
                      prefix + "test_both_fail": "failed", prefix + "test_float64_in_x64_mode[1]": "passed",
                      prefix + "test_float64_in_x64_mode[2]": "passed", prefix + "test_skipped": "skipped"}
    assert ours[prefix + "test_only_jax_passes"] == "failed" and ours[prefix + "test_float64_in_x64_mode[2]"] == "passed"
    assert regressions(oracle, ours) == [prefix + "test_only_jax_passes"]
    # A test the oracle passes that our run never reached counts as a regression.
    assert regressions({"a::t": "passed", "a::u": "failed"}, {}) == ["a::t"]
