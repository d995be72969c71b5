"""`fluxion.export` (mirrors `jax.export`): save a jitted function's program for one signature, call it, and load
it back (`export(jit(f))(*specs)` -> `Exported`; `.serialize()` / `deserialize(...)`).

Not here: symbolic shapes (`symbolic_shape`, `symbolic_args_specs`, `is_symbolic_dim`, `SymbolicScope`) and the
custom pytree serialization registries (`register_pytree_node_serialization`,
`register_namedtuple_serialization`): exported signatures are concrete, with tuple/list/dict/None structures.
"""

from ._src.export import (DisabledSafetyCheck as DisabledSafetyCheck, Exported as Exported,
                          default_export_platform as default_export_platform, deserialize as deserialize,
                          export as export,
                          maximum_supported_calling_convention_version as maximum_supported_calling_convention_version,
                          minimum_supported_calling_convention_version as minimum_supported_calling_convention_version)

__all__ = ["DisabledSafetyCheck", "Exported", "default_export_platform", "deserialize", "export",
           "maximum_supported_calling_convention_version", "minimum_supported_calling_convention_version"]
