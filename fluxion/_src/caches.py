"""`clear_caches`: forget every compiled program, so that its memory can be returned."""

from __future__ import annotations

from . import backends, jit, pmap


def clear_caches() -> None:
    """Clears every compilation and tracing cache of the process, as `jax.clear_caches` does.

    Forgets the traces and compiled programs of every `jit`- and `pmap`-transformed function (their next calls trace
    and compile again), the fused Numba kernels those programs loaded, and the background kernel compilations not
    started yet. The memory is returned once nothing else refers to the programs: an executable kept by the caller
    (`jit(f).lower(x).compile()`) keeps working, with its kernels. Numba never unloads machine code it has compiled,
    so the code of released kernels stays mapped; everything else about them -- dispatchers, compiler records,
    generated sources -- is freed. The on-disk kernel cache is kept (delete the cache directory to clear it; see
    `fluxion_cache_dir`).

    Examples:
      >>> import fluxion
      >>> f = fluxion.jit(lambda x: x + 1)
      >>> f(1.0)
      Array(2., dtype=float32, weak_type=True)
      >>> fluxion.clear_caches()   # the next call of f traces and compiles again
      >>> f(1.0)
      Array(2., dtype=float32, weak_type=True)
    """
    jit.clear_all_caches()
    pmap.clear_all_caches()
    backends.compiler.release_kernels()
