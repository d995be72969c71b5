"""Configuration options: `config.update` and the environment variable both work, environment variables are read
when the option is used, and every option is documented in config.py's docstring and the README's table."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src import config as config_module
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion
from fluxion._src.config import config

README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")

# option -> (environment variable, a valid value as the variable spells it, the value it stands for)
FLUXION_OPTIONS = {
    "fluxion_jit_compiler": ("FLUXION_JIT_COMPILER", "0", False),
    "fluxion_jit_fusion": ("FLUXION_JIT_FUSION", "off", False),
    "fluxion_jit_sync_kernels": ("FLUXION_JIT_SYNC_KERNELS", "yes", True),
    "fluxion_jit_prewarm": ("FLUXION_JIT_PREWARM", "no", False),
    "fluxion_fuse_min_elements": ("FLUXION_FUSE_MIN_ELEMENTS", "77", 77),
    "fluxion_small_group_min_ops": ("FLUXION_SMALL_GROUP_MIN_OPS", "3", 3),
    "fluxion_parallel_min_work": ("FLUXION_PARALLEL_MIN_WORK", "1000", 1000),
    "fluxion_num_threads": ("FLUXION_NUM_THREADS", "2", 2),
    "fluxion_compile_processes": ("FLUXION_COMPILE_PROCESSES", "2", 2),
    "fluxion_jit_whole_step": ("FLUXION_JIT_WHOLE_STEP", "0", False),
    "fluxion_jit_whole_step_after": ("FLUXION_JIT_WHOLE_STEP_AFTER", "0.5", 0.5),
    "fluxion_malloc_retain": ("FLUXION_MALLOC_RETAIN", "0", False),
    "fluxion_cache_dir": ("FLUXION_CACHE_DIR", "/some/dir", "/some/dir"),
    "fluxion_cache_max_bytes": ("FLUXION_CACHE_MAX_BYTES", "1000000", 1000000),
    "fluxion_collective_timeout": ("FLUXION_COLLECTIVE_TIMEOUT", "2.5", 2.5),
    "fluxion_data_dir": ("FLUXION_DATA_DIR", "/data", "/data"),
    "fluxion_debug_typecheck": ("FLUXION_DEBUG_TYPECHECK", "true", True),
    "fluxion_check_fusion": ("FLUXION_CHECK_FUSION", "1", True),
    "jax_log_compiles": ("FLUXION_LOG_COMPILES", "1", True),
    "jax_num_cpu_devices": ("FLUXION_NUM_CPU_DEVICES", "3", 3),
}


@pytest.fixture(autouse=True)
def _options_not_set_by_update(monkeypatch):
    """Every option back in its initial state: read from its variable, as if `update` had never been called (other
    tests' fixtures may have restored options with `update`)."""
    for name, spec in config._env_options.items():
        monkeypatch.setitem(config._values, name, config.default(name))
        monkeypatch.setitem(config._from_env, name, spec)


def _readme_table() -> dict:
    with open(README) as f:
        text = f.read()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(\w+)` \|([^|]*)\|([^|]*)\|([^|]*)\|$", line)
        if m:
            rows[m.group(1)] = (m.group(2).strip(), m.group(3).strip(), m.group(4).strip())
    return rows


@pytest.mark.parametrize("name", sorted(FLUXION_OPTIONS))
def test_environment_variable_is_read_when_the_option_is_used(monkeypatch, name):
    var, raw, value = FLUXION_OPTIONS[name]
    monkeypatch.delenv(var, raising=False)
    default = config.read(name)
    monkeypatch.setenv(var, raw)
    assert getattr(config, name) == value
    assert config.from_environment(name)
    monkeypatch.delenv(var)
    assert getattr(config, name) == default


def _another_value(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + "/other"
    return value * 2


@pytest.mark.parametrize("name", sorted(FLUXION_OPTIONS))
def test_update_takes_precedence_and_override_restores_the_environment(monkeypatch, name):
    var, raw, value = FLUXION_OPTIONS[name]
    monkeypatch.setenv(var, raw)
    replacement = _another_value(value)
    with config.override(name, replacement):
        assert getattr(config, name) == replacement
        assert not config.from_environment(name)
    assert getattr(config, name) == value and config.from_environment(name)


@pytest.mark.parametrize("name, raw", [("fluxion_fuse_min_elements", "many"), ("fluxion_num_threads", "0"),
                                       ("fluxion_collective_timeout", "-1"), ("jax_num_cpu_devices", "two")])
def test_invalid_environment_values_are_rejected_naming_the_variable(monkeypatch, name, raw):
    var = FLUXION_OPTIONS[name][0]
    monkeypatch.setenv(var, raw)
    with pytest.raises(ValueError, match=var):
        getattr(config, name)


def test_invalid_updates_are_rejected_naming_the_option():
    with pytest.raises(ValueError, match="fluxion_parallel_min_work"):
        config.update("fluxion_parallel_min_work", -1)
    with pytest.raises(ValueError, match="fluxion_collective_timeout"):
        config.update("fluxion_collective_timeout", 0)
    with pytest.raises(AttributeError, match="fluxion_no_such_option"):
        config.update("fluxion_no_such_option", 1)


def test_every_option_is_documented_in_the_config_docstring_and_the_readme():
    doc = config_module.__doc__
    table = _readme_table()
    for name in config._values:
        assert re.search(rf"\b{name}\b", doc), f"{name} is missing from config.py's docstring"
        assert name in table, f"{name} is missing from the README's Configuration table"
    assert set(table) == set(config._values), "the README documents options that do not exist"
    for name, (var, _, _) in FLUXION_OPTIONS.items():
        assert var in doc and var in table[name][0], f"{var} is not documented for {name}"


def test_readme_defaults_match_the_code():
    for name, (_, default, _) in _readme_table().items():
        assert default == repr(config.default(name)).replace("'", '"'), name


def test_compiler_options_take_effect_when_set_after_import(monkeypatch, rng):
    monkeypatch.delenv("FLUXION_JIT_COMPILER", raising=False)
    x = rng.standard_normal(8).astype(np.float32)
    with config.override("fluxion_jit_compiler", False):
        assert "interpreted" in fluxion.jit(lambda x: jnp.sin(x) * 2.0).lower(x).compile().as_text()
    assert compiler.enabled()
    with config.override("fluxion_check_fusion", False), config.override("fluxion_fuse_min_elements", 123), \
            config.override("fluxion_parallel_min_work", 456):
        assert fusion.min_elements() == 123 and fusion.parallel_min_work() == 456
