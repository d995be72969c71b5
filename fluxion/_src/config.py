"""Global configuration flags (`fluxion.config`), accepting JAX's option names, and the reference of every option.

`fluxion.config.update("jax_enable_x64", True)` and friends behave as in JAX, so ported code runs unchanged.
Options that only make sense for XLA (platform names, matmul precision, ...) are accepted and recorded but have no
effect on the NumPy backend; an unknown name raises `AttributeError` naming the option, as JAX does.

Reading an option (`config.fluxion_jit_fusion`) gives, in this order: the value given to `config.update`; else the
option's environment variable, read at that moment (so setting `os.environ` later works too); else the default.
`config.override(name, value)` sets an option for a `with` block and restores its previous state, including "not
set" (tests use it). The options that change a trace or its compilation (`JIT_KEY_OPTIONS`) are part of `jit`'s
cache keys, as in JAX: changing one after a first call retraces, and the earlier value's program is reused when it
comes back. An environment variable that does not parse raises `ValueError` naming it when the option is
read. Boolean variables accept 1/true/yes/on and 0/false/no/off; another spelling leaves the default.

Options of JAX (environment variables in capitals, e.g. `JAX_ENABLE_X64=1`, read when fluxion is imported):

  jax_enable_x64 (False): 64-bit dtypes (float64, int64) instead of their 32-bit versions.
  jax_threefry_partitionable (True): the counter layout of `random` bits (JAX's default since 0.5).
  jax_disable_jit (False): `jit` runs functions eagerly (for debugging).
  jax_log_compiles (False; also `FLUXION_LOG_COMPILES`, read at use): log every `jit` compilation with what changed
    from the previous signature.
  jax_compilation_cache_dir (None): where compiled kernels are cached on disk if `fluxion_cache_dir` is not set.
  jax_num_cpu_devices (1; `FLUXION_NUM_CPU_DEVICES`, read at use): number of CPU devices of the process (`pmap`
    replicas, `shard_map` blocks); `XLA_FLAGS=--xla_force_host_platform_device_count=N` also works (see `devices`).
  jax_traceback_filtering ("auto"; JAX_TRACEBACK_FILTERING): "off" keeps fluxion's internal frames in tracebacks.
  jax_debug_nans, jax_debug_infs (False): every primitive's floating-point outputs are checked for NaN (inf) and
    `FloatingPointError` names the first primitive that made one; `jit`ted functions then run op by op.
  jax_no_tracing (False): staging a function to a jaxpr (a `jit` cache miss, make_jaxpr, ...) raises RuntimeError.
  jax_no_execution (False): running anything (eager primitives, jitted, AOT-compiled, pmapped calls) raises
    RuntimeError.
  jax_allow_f16_reductions (True): False makes `lax.reduce_sum` of float16/bfloat16 over a dimension > 1 raise
    ValueError (`jnp.sum` accumulates them in float32 and keeps working).
  jax_softmax_custom_jvp (True; JAX's default is False): `nn.softmax` differentiates with its closed-form custom JVP;
    False differentiates through its operations. fluxion keeps the custom rule on by default: its derivatives of
    those operations are not JAX's op for op, so only the closed form gives JAX's backward program size.
  jax_numpy_rank_promotion ("allow"): "raise" makes `fluxion.numpy`'s binary elementwise functions (and Array's
    operators) raise ValueError when nonscalar operands of different ranks would be broadcast together, "warn" issues
    a UserWarning there instead (eagerly on every call; under `jit` when tracing); `where`, products and scalars are
    exempt, as in JAX.
  Recorded without effect: jax_numpy_dtype_promotion ("standard"), jax_default_matmul_precision (None),
    jax_platform_name ("cpu"), jax_platforms ("cpu"), jax_default_prng_impl ("threefry2x32"), jax_check_tracer_leaks (False),
    jax_persistent_cache_min_compile_time_secs (1.0), jax_default_device, jax_transfer_guard,
    jax_transfer_guard_host_to_device, jax_transfer_guard_device_to_host, jax_transfer_guard_device_to_device
    (None), jax_enable_checks, jax_debug_key_reuse, jax_explain_cache_misses,
    jax_enable_custom_prng (False), jax_legacy_prng_key ("allow"), jax2tf_associative_scan_reductions (False; JAX
    0.10 reads it nowhere either: it chose jax2tf's lowering of cumulative reductions).

Options of fluxion (each with its `FLUXION_*` environment variable, read at use):

  fluxion_jit_compiler (True; FLUXION_JIT_COMPILER): `jit` compiles programs to generated Python (and fused
    kernels); False interprets the jaxpr equation by equation (the reference path).
  fluxion_jit_fusion (True; FLUXION_JIT_FUSION): the compiler fuses elementwise chains and reductions into Numba
    kernels (when Numba is installed); False keeps generated NumPy code only.
  fluxion_jit_sync_kernels (False; FLUXION_JIT_SYNC_KERNELS): compile fused kernels before the first call instead of
    on a background thread (the first calls then run the NumPy code).
  fluxion_jit_prewarm (True; FLUXION_JIT_PREWARM): when `jit` wraps a function (fusion on), start importing and
    setting up Numba on the background compiler thread, so that the first fused kernels do not wait for it; False
    leaves it to the first compilation (see `compiler.fusion.runtime.prewarm`).
  fluxion_jit_whole_step (True; FLUXION_JIT_WHOLE_STEP): after the fused tier, straight-line programs whose every
    operation Numba can compile become one native function (see `compiler.wholestep`), built in the background.
  fluxion_malloc_retain (True; FLUXION_MALLOC_RETAIN): when a program is first compiled, glibc's malloc is told to
    keep freed blocks below 32 MiB (up to 64 MiB in all) for reuse instead of returning them to the OS, which saves
    compiled steps the page faults of fresh intermediate buffers; see `compiler.heap`. Read once per process.
  fluxion_jit_whole_step_after (10.0; FLUXION_JIT_WHOLE_STEP_AFTER): seconds a jitted program must have run in
    total before its whole-step function is compiled (0: at once). Compiling it costs seconds of CPU, which a short
    run would never win back, and it competes with the program for the interpreter lock meanwhile.
  fluxion_fuse_min_elements (4096; FLUXION_FUSE_MIN_ELEMENTS): smallest array, in elements, whose elementwise chains
    are fused (smaller groups are fused only when long and bit-exact).
  fluxion_small_group_min_ops (8; FLUXION_SMALL_GROUP_MIN_OPS): operations a group below that size needs to be fused.
  fluxion_parallel_min_work (262144; FLUXION_PARALLEL_MIN_WORK): work (elements x operations) from which a fused
    kernel runs on several threads.
  fluxion_num_threads (None; FLUXION_NUM_THREADS): threads compiled code uses (BLAS and kernels); None: large BLAS
    calls use all cores and small ones one (by size, never by load: see `compiler.threads`), fused kernels the cores
    the rest of the machine leaves idle. Never more than OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS or
    NUMBA_NUM_THREADS when those are set (`thread_limit`).
  fluxion_compile_processes (0; FLUXION_COMPILE_PROCESSES): helper processes that compile a program's fused kernels
    into the disk cache next to the background thread, when it needs several new ones and cores are idle (0: the
    thread alone); see `compiler.fusion.runtime.precompile`.
  fluxion_cache_dir (None; FLUXION_CACHE_DIR): the on-disk kernel cache (None: `jax_compilation_cache_dir`, else
    `~/.cache/fluxion`); see `compiler.fusion.runtime` for what it holds and how it is protected.
  fluxion_cache_max_bytes (536870912; FLUXION_CACHE_MAX_BYTES): size above which the least recently used kernels
    are evicted from that cache.
  fluxion_collective_timeout (300.0; FLUXION_COLLECTIVE_TIMEOUT): seconds a `pmap` replica or an MPI process waits
    for the others at a collective before failing.
  fluxion_data_dir (None; FLUXION_DATA_DIR): where `fluxion.datasets` looks for dataset files first.
  fluxion_debug_typecheck (False; FLUXION_DEBUG_TYPECHECK): type-check every traced jaxpr and the result of every
    compiler pass.
  fluxion_check_fusion (False; FLUXION_CHECK_FUSION): test mode of the fused tier: always fuse, with low thresholds,
    and compare every kernel call with NumPy (`compiler.fusion.check`).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator

from . import forks

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

# Environment variables of other libraries that bound the threads fluxion starts (see `thread_limit`).
THREAD_LIMIT_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    return raw.strip().lower() in _TRUE


# -- parsers: an environment string (or a value given to `update`) -> the option's value -----------------------------

Parser = Callable[[Any, str], Any]


def _boolean(default: bool) -> Parser:
    def parse(value, source):
        if not isinstance(value, str):
            return bool(value)
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        return default
    return parse


def _integer(minimum: int, optional: bool = False) -> Parser:
    def parse(value, source):
        if value is None or (isinstance(value, str) and not value.strip()):
            if optional:
                return None
            raise ValueError(f"{source} must be an integer >= {minimum}, got {value!r}")
        try:
            n = int(value.strip()) if isinstance(value, str) else value
        except ValueError:
            n = None
        if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise ValueError(f"{source} must be {what}, got {value!r}")
        return n
    return parse


def _seconds(value, source, allow_zero: bool = False):
    try:
        s = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source} must be a number of seconds, got {value!r}") from None
    if not (s >= 0 if allow_zero else s > 0) or s != s:
        raise ValueError(f"{source} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return s


def _delay(value, source):
    return _seconds(value, source, allow_zero=True)


def _path(value, source):
    if value is None:
        return None
    value = os.fspath(value)
    return value if value.strip() else None


class Config:
    """Holds option values; read them as attributes (`config.jax_enable_x64`)."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._defaults: dict[str, Any] = {}
        self._hooks: dict[str, list[Callable[[Any], None]]] = {}
        # Options backed by environment variables: name -> (variables, parser); `_from_env` holds those that
        # `update` has not set (they read their variables when used).
        self._env_options: dict[str, tuple[tuple[str, ...], Parser]] = {}
        self._from_env: dict[str, tuple[tuple[str, ...], Parser]] = {}
        # Parsers that also validate the values given to `update` (fluxion's own options).
        self._validators: dict[str, Parser] = {}
        self._define("jax_enable_x64", _env_bool("jax_enable_x64", False))
        # JAX switched its default to True in 0.5; the older stream is still selectable.
        self._define("jax_threefry_partitionable", _env_bool("jax_threefry_partitionable", True))
        self._define("jax_disable_jit", _env_bool("jax_disable_jit", False))
        self._define("jax_log_compiles", False, env=("JAX_LOG_COMPILES", "FLUXION_LOG_COMPILES"),
                     parse=_boolean(False), validate_updates=False)
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
        # More that JAX names and fluxion records without effect (one CPU backend: nothing for them to change).
        for name, default in (("jax_default_device", None), ("jax_transfer_guard", None),
                              ("jax_transfer_guard_host_to_device", None), ("jax_transfer_guard_device_to_host", None),
                              ("jax_transfer_guard_device_to_device", None), ("jax_enable_checks", False),
                              ("jax_debug_key_reuse", False), ("jax_explain_cache_misses", False),
                              ("jax_enable_custom_prng", False), ("jax_legacy_prng_key", "allow"),
                              ("jax2tf_associative_scan_reductions", False)):
            self._define(name, default)
        # Guards and switches that change behaviour (see the State objects below for what each does).
        self._define("jax_no_tracing", False, parse=_boolean(False))
        self._define("jax_no_execution", False, parse=_boolean(False))
        self._define("jax_allow_f16_reductions", True, parse=_boolean(True))
        self._define("jax_softmax_custom_jvp", True, parse=_boolean(True))
        # `devices` validates updated values itself (with a message naming the option).
        self._define("jax_num_cpu_devices", 1, env=("FLUXION_NUM_CPU_DEVICES",), parse=_integer(1),
                     validate_updates=False)
        self._define("fluxion_jit_compiler", True, env=("FLUXION_JIT_COMPILER",), parse=_boolean(True))
        self._define("fluxion_jit_fusion", True, env=("FLUXION_JIT_FUSION",), parse=_boolean(True))
        self._define("fluxion_jit_sync_kernels", False, env=("FLUXION_JIT_SYNC_KERNELS",), parse=_boolean(False))
        self._define("fluxion_jit_prewarm", True, env=("FLUXION_JIT_PREWARM",), parse=_boolean(True))
        self._define("fluxion_jit_whole_step", True, env=("FLUXION_JIT_WHOLE_STEP",), parse=_boolean(True))
        self._define("fluxion_malloc_retain", True, env=("FLUXION_MALLOC_RETAIN",), parse=_boolean(True))
        self._define("fluxion_jit_whole_step_after", 10.0, env=("FLUXION_JIT_WHOLE_STEP_AFTER",), parse=_delay)
        self._define("fluxion_fuse_min_elements", 1 << 12, env=("FLUXION_FUSE_MIN_ELEMENTS",), parse=_integer(0))
        self._define("fluxion_small_group_min_ops", 8, env=("FLUXION_SMALL_GROUP_MIN_OPS",), parse=_integer(1))
        self._define("fluxion_parallel_min_work", 1 << 18, env=("FLUXION_PARALLEL_MIN_WORK",), parse=_integer(0))
        self._define("fluxion_num_threads", None, env=("FLUXION_NUM_THREADS",), parse=_integer(1, optional=True))
        self._define("fluxion_compile_processes", 0, env=("FLUXION_COMPILE_PROCESSES",), parse=_integer(0))
        self._define("fluxion_cache_dir", None, env=("FLUXION_CACHE_DIR",), parse=_path)
        self._define("fluxion_cache_max_bytes", 512 << 20, env=("FLUXION_CACHE_MAX_BYTES",), parse=_integer(0))
        self._define("fluxion_collective_timeout", 300.0, env=("FLUXION_COLLECTIVE_TIMEOUT",), parse=_seconds)
        self._define("fluxion_data_dir", None, env=("FLUXION_DATA_DIR",), parse=_path)
        self._define("fluxion_debug_typecheck", False, env=("FLUXION_DEBUG_TYPECHECK",), parse=_boolean(False))
        self._define("fluxion_check_fusion", False, env=("FLUXION_CHECK_FUSION",), parse=_boolean(False))

    def _define(self, name: str, default: Any, env: tuple[str, ...] = (), parse: Parser | None = None,
                validate_updates: bool = True) -> None:
        self._values[name] = default
        self._defaults[name] = default
        if env:
            self._env_options[name] = (env, parse)
            self._from_env[name] = (env, parse)
        if parse is not None and validate_updates:
            self._validators[name] = parse

    def update(self, name: str, value: Any) -> None:
        """Sets option `name` to `value` (it then takes precedence over the option's environment variable).

        Raises:
          AttributeError: `name` is not a known option.
          ValueError: `value` is not valid for the option (for options with a documented range).
        """
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        validate = self._validators.get(name)
        if validate is not None:
            value = validate(value, name)
        self._values[name] = value
        self._from_env.pop(name, None)
        for hook in self._hooks.get(name, ()):
            hook(value)

    def read(self, name: str) -> Any:
        spec = self._from_env.get(name)
        if spec is not None:
            return self._read_env(name, spec)
        return self._values[name]

    def _read_env(self, name: str, spec) -> Any:
        variables, parse = spec
        found = [(v, os.environ[v]) for v in variables if v in os.environ]
        if not found:
            return self._values[name]
        values = [parse(raw, var) if parse is not None else raw for var, raw in found]
        if isinstance(self._values[name], bool):  # a boolean with several spellings is on when any says so
            return any(values)
        return values[0]

    def default(self, name: str) -> Any:
        """The value option `name` has when neither `update` nor its environment variable sets it (for JAX's
        options, after the environment variables read at import)."""
        return self._defaults[name]

    def from_environment(self, name: str) -> bool:
        """Whether option `name` currently takes its value from an environment variable (set there, not updated)."""
        spec = self._from_env.get(name)
        return spec is not None and any(v in os.environ for v in spec[0])

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Sets option `name` to `value` inside a `with` block, then restores its previous value and source (an
        option that was read from the environment reads it again afterwards)."""
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        saved_value = self._values[name]
        saved_env = self._from_env.get(name)
        self.update(name, value)
        try:
            yield
        finally:
            self._values[name] = saved_value
            if saved_env is not None:
                self._from_env[name] = saved_env
            restored = self.read(name)
            for hook in self._hooks.get(name, ()):
                hook(restored)

    def add_hook(self, name: str, hook: Callable[[Any], None]) -> None:
        """Calls `hook(value)` whenever option `name` changes (used to refresh cached dtype tables)."""
        self._hooks.setdefault(name, []).append(hook)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            spec = self._from_env.get(name)
            if spec is not None:
                return self._read_env(name, spec)
            return values[name]
        raise AttributeError(f"Unrecognized config option: {name}")


def thread_limit() -> int | None:
    """The smallest thread count set in `OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS` or
    `NUMBA_NUM_THREADS` (read now), or None when none is set to a positive integer.

    These are the standard ways to cap a process's threads; fluxion treats each as an upper bound on the thread
    counts it sets for BLAS and for fused kernels (values that are not positive integers are ignored, as those
    libraries ignore them).
    """
    limits = []
    for var in THREAD_LIMIT_VARIABLES:
        raw = os.environ.get(var, "").strip().split(",")[0]  # OpenMP allows a list per nesting level
        if raw.isdigit() and int(raw) > 0:
            limits.append(int(raw))
    return min(limits) if limits else None


def set_default_environment(name: str, value: str) -> None:
    """Sets environment variable `name` to `value` unless the user set it (for libraries fluxion loads later, such as
    OpenMP's `GOMP_SPINCOUNT`)."""
    os.environ.setdefault(name, value)


config = Config()


class State:
    """A config option usable as JAX's `jax.<name>` state objects: `with jax.debug_nans(True): ...` sets it for the
    block (process-wide in fluxion, where JAX's is per thread), `jax.debug_nans.value` reads it."""

    def __init__(self, option: str, default_arg: Any = True):
        self.option = option
        self._default_arg = default_arg

    @property
    def value(self) -> Any:
        return getattr(config, self.option)

    def __call__(self, new_val: Any = None) -> contextlib.AbstractContextManager:
        return config.override(self.option, self._default_arg if new_val is None else new_val)

    def __repr__(self) -> str:
        return f"State({self.option}={self.value!r})"


enable_x64 = State("jax_enable_x64")
debug_nans = State("jax_debug_nans")
debug_infs = State("jax_debug_infs")
disable_jit = State("jax_disable_jit")
log_compiles = State("jax_log_compiles")
numpy_rank_promotion = State("jax_numpy_rank_promotion", "allow")
numpy_dtype_promotion = State("jax_numpy_dtype_promotion", "standard")
default_matmul_precision = State("jax_default_matmul_precision", None)
default_prng_impl = State("jax_default_prng_impl", "threefry2x32")
threefry_partitionable = State("jax_threefry_partitionable")
check_tracer_leaks = State("jax_check_tracer_leaks")
checking_leaks = State("jax_check_tracer_leaks")
enable_checks = State("jax_enable_checks")
debug_key_reuse = State("jax_debug_key_reuse")
explain_cache_misses = State("jax_explain_cache_misses")
enable_custom_prng = State("jax_enable_custom_prng")
legacy_prng_key = State("jax_legacy_prng_key", "allow")
default_device = State("jax_default_device", None)
transfer_guard = State("jax_transfer_guard", "allow")
transfer_guard_host_to_device = State("jax_transfer_guard_host_to_device", "allow")
transfer_guard_device_to_host = State("jax_transfer_guard_device_to_host", "allow")
transfer_guard_device_to_device = State("jax_transfer_guard_device_to_device", "allow")

# `jit` raises RuntimeError when it would trace (a cache miss), as do make_jaxpr, eval_shape and every other staging
# of a Python function to a jaxpr (partial_eval.trace_to_jaxpr). Unlike JAX, where eager operations are jitted
# primitives and so also trace on their first use, fluxion's eager operations run without tracing and stay allowed.
no_tracing = State("jax_no_tracing")
# Every execution raises RuntimeError: eager primitives, jitted and AOT-compiled calls (core.eager_apply, jit).
no_execution = State("jax_no_execution")
# When False, `lax.reduce_sum` of float16/bfloat16 over a dimension longer than 1 raises ValueError (jnp.sum still
# works: it accumulates in float32, as in JAX).
allow_f16_reductions = State("jax_allow_f16_reductions")
# When True (fluxion's default; JAX's is False), `nn.softmax` uses its closed-form custom JVP; when False its gradient
# is derived from the operations (the max shift behind stop_gradient). Values are the same either way.
softmax_custom_jvp = State("jax_softmax_custom_jvp")
jax2tf_associative_scan_reductions = State("jax2tf_associative_scan_reductions")

STATES = ("enable_x64", "debug_nans", "debug_infs", "disable_jit", "log_compiles", "numpy_rank_promotion",
          "numpy_dtype_promotion", "default_matmul_precision", "default_prng_impl", "threefry_partitionable",
          "check_tracer_leaks", "checking_leaks", "enable_checks", "debug_key_reuse", "explain_cache_misses",
          "enable_custom_prng", "legacy_prng_key", "default_device", "transfer_guard",
          "transfer_guard_host_to_device", "transfer_guard_device_to_host", "transfer_guard_device_to_device",
          "no_tracing", "no_execution", "allow_f16_reductions", "softmax_custom_jvp",
          "jax2tf_associative_scan_reductions")


class UserContext:
    """A value that `jit` caches depend on (`jax.make_user_context`): a jitted function traced and compiled under one
    value is traced and compiled again under another, and served from its cache when the value comes back.

    `ctx(value)` returns a context manager setting the value for a `with` block; `ctx.value` reads it;
    `get_global`/`set_global` read and set the value outside any block. Unlike JAX, where a `with` block is local to
    its thread, the value is process-wide, as for fluxion's other config states.
    """

    def __init__(self, default_value: Any = None):
        self._value = default_value
        with _user_context_lock:
            _user_contexts.append(self)
            _trace_context.refresh()

    @property
    def value(self) -> Any:
        return self._value

    def get_global(self) -> Any:
        return self._value

    def set_global(self, new_value: Any) -> None:
        _set_user_context(self, new_value)

    @contextlib.contextmanager
    def __call__(self, new_value: Any) -> Iterator[None]:
        saved = self._value
        _set_user_context(self, new_value)
        try:
            yield
        finally:
            _set_user_context(self, saved)


_user_contexts: list[UserContext] = []
_user_context_lock = forks.lock()
_user_context_hooks: list[Callable[[], None]] = []


class _UserContextGeneration:
    """Counts changes of user context values and of the options in `JIT_KEY_OPTIONS`, so a dispatch that started
    under older values can tell."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


user_context_generation = _UserContextGeneration()


def _set_user_context(ctx: UserContext, value: Any) -> None:
    with _user_context_lock:
        ctx._value = value
        _trace_context.refresh()
    for hook in _user_context_hooks:
        hook()


def user_context_key() -> tuple:
    """The current values of every user context; () when none was made."""
    return tuple(c._value for c in _user_contexts)


def add_user_context_hook(hook: Callable[[], None]) -> None:
    """Calls `hook()` whenever a user context's value or an option of `JIT_KEY_OPTIONS` changes (jit drops the
    dispatch tables keyed without them)."""
    _user_context_hooks.append(hook)


# Options that change what `jit` traces or how it compiles a trace, so that a program made under one value must not
# serve calls under another: JAX's options that its jit cache keys on (those fluxion defines; several only recorded
# here, keyed anyway so a program never outlives a setting it may depend on), plus fluxion's options that choose the
# compiler tier. Not here: jax_debug_nans/infs and jax_disable_jit (`jit` then runs the function op by op without
# its caches), jax_no_execution (checked at every call). Options that tune compiled code without changing it
# (threads, parallel thresholds, cache places) are read when the code runs.
TRACE_OPTIONS = ("jax_enable_x64", "jax_numpy_rank_promotion", "jax_numpy_dtype_promotion",
                 "jax_default_matmul_precision", "jax_default_prng_impl", "jax_threefry_partitionable",
                 "jax_softmax_custom_jvp", "jax_allow_f16_reductions", "jax_enable_custom_prng", "jax_legacy_prng_key",
                 "jax_debug_key_reuse", "fluxion_debug_typecheck")
"""The options of `JIT_KEY_OPTIONS` that change what a trace of a function computes or raises (dtype and
promotion rules, PRNG, precision, reductions allowed); the eager `grad` cache keys on these too."""
JIT_KEY_OPTIONS = TRACE_OPTIONS + ("jax_default_device", "fluxion_jit_compiler", "fluxion_jit_fusion",
                                   "fluxion_check_fusion", "fluxion_jit_whole_step", "fluxion_fuse_min_elements",
                                   "fluxion_small_group_min_ops")


def _key_value(name: str) -> Any:
    try:
        return _hashable(config.read(name))
    except ValueError:  # an environment variable that does not parse: reported where the option is used, as before
        spec = config._env_options.get(name)
        return ("unparsed", tuple(os.environ.get(v) for v in spec[0]) if spec else None)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:  # an unhashable value of an option recorded without effect: its repr stands for it
        return (type(value).__name__, repr(value))
    return value


class _TraceContext:
    """The values `jit`'s caches are keyed on besides the arguments: the options of `JIT_KEY_OPTIONS` and every user
    context, as one tuple rebuilt when any of them changes (config hooks run on `update` and when an `override`
    block ends), so a cache lookup costs no option reads.

    An option set through its environment variable is read when the tuple is rebuilt (at import and at every
    change of another key option): setting `os.environ` later, without `config.update`, does not retrace programs
    already compiled.
    """

    __slots__ = ("key",)

    def __init__(self):
        self.key: tuple = ()

    def refresh(self) -> None:
        options = tuple(_key_value(name) for name in JIT_KEY_OPTIONS)
        self.key = (options, tuple(c._value for c in _user_contexts))
        user_context_generation.value += 1


_trace_context = _TraceContext()
_trace_context.refresh()


def _option_changed(_value: Any) -> None:
    with _user_context_lock:
        _trace_context.refresh()
    for hook in _user_context_hooks:
        hook()


for _name in JIT_KEY_OPTIONS:
    config.add_hook(_name, _option_changed)
del _name


def trace_context_key() -> tuple:
    """What `jit`'s cache keys hold besides the arguments: the current values of the options in `JIT_KEY_OPTIONS`
    and of every user context (mirrors JAX's trace context)."""
    return _trace_context.key


def make_user_context(default_value: Any = None) -> UserContext:
    """A new `UserContext` starting at `default_value` (mirrors `jax.make_user_context`). Its values must be
    hashable: they become part of `jit`'s cache keys."""
    return UserContext(default_value)
