"""Global configuration flags (`fluxion.config`), accepting JAX's option names.

`fluxion.config.update("jax_enable_x64", True)` and friends behave as in JAX, so ported code runs unchanged.
Options that only make sense for XLA (platform names, matmul precision, ...) are accepted and recorded but have no
effect on the NumPy backend; an unknown name raises `AttributeError` naming the option, as JAX does.
"""

from __future__ import annotations

import os
from typing import Any, Callable


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """Holds option values; read them as attributes (`config.jax_enable_x64`)."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._hooks: dict[str, list[Callable[[Any], None]]] = {}
        self._define("jax_enable_x64", _env_bool("jax_enable_x64", False))
        # JAX switched its default to True in 0.5; the older stream is still selectable.
        self._define("jax_threefry_partitionable", _env_bool("jax_threefry_partitionable", True))
        self._define("jax_disable_jit", _env_bool("jax_disable_jit", False))
        self._define("jax_log_compiles", _env_bool("jax_log_compiles", False)
                     or _env_bool("fluxion_log_compiles", False))
        self._define("jax_debug_nans", _env_bool("jax_debug_nans", False))
        self._define("jax_debug_infs", _env_bool("jax_debug_infs", False))
        self._define("jax_numpy_rank_promotion", "allow")
        self._define("jax_numpy_dtype_promotion", "standard")
        self._define("jax_default_matmul_precision", None)
        self._define("jax_platform_name", "cpu")
        self._define("jax_platforms", "cpu")
        self._define("jax_default_prng_impl", "threefry2x32")
        self._define("jax_check_tracer_leaks", False)
        self._define("jax_traceback_filtering", os.environ.get("JAX_TRACEBACK_FILTERING", "auto"))
        self._define("jax_compilation_cache_dir", None)
        self._define("jax_persistent_cache_min_compile_time_secs", 1.0)
        self._define("jax_num_cpu_devices", int(os.environ.get("FLUXION_NUM_CPU_DEVICES", "1")))
        self._define("fluxion_debug_typecheck", _env_bool("fluxion_debug_typecheck", False))
        # Test mode of the fused tier: always fuse, with low thresholds, and check every kernel call against NumPy
        # (`fluxion._src.compiler.fusion.check`).
        self._define("fluxion_check_fusion", _env_bool("fluxion_check_fusion", False))

    def _define(self, name: str, default: Any) -> None:
        self._values[name] = default

    def update(self, name: str, value: Any) -> None:
        """Sets option `name` to `value`.

        Raises:
          AttributeError: `name` is not a known option.
        """
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        self._values[name] = value
        for hook in self._hooks.get(name, ()):
            hook(value)

    def read(self, name: str) -> Any:
        return self._values[name]

    def add_hook(self, name: str, hook: Callable[[Any], None]) -> None:
        """Calls `hook(value)` whenever option `name` changes (used to refresh cached dtype tables)."""
        self._hooks.setdefault(name, []).append(hook)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"Unrecognized config option: {name}")


config = Config()
