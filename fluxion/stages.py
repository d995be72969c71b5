"""`fluxion.stages` (mirrors `jax.stages`): the ahead-of-time stages of a jitted function --
`Wrapped` (`jit(f)`) -> `Traced` (`.trace(*args)`) -> `Lowered` (`.lower()`) -> `Compiled` (`.compile()`)."""

from ._src.stages import (ArgInfo as ArgInfo, Compiled as Compiled, CompilerOptions as CompilerOptions,
                          Lowered as Lowered, Traced as Traced, Wrapped as Wrapped)

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
