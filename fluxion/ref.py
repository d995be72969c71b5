"""`fluxion.ref` (mirrors `jax.ref`): mutable array references -- `new_ref`, `empty_ref`, reads and writes
(`get`, `set`, `swap`, `addupdate`, or `ref[idx]`), `freeze`, `free_ref`."""

from ._src.refs import (AbstractRef as AbstractRef, Ref as Ref, addupdate as addupdate, empty_ref as empty_ref,
                        free_ref as free_ref, freeze as freeze, get as get, new_ref as new_ref, set as set,  # noqa: A004
                        swap as swap)

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set", "swap"]
