"""What exists on the device and when it is done: `live_arrays`, `copy_to_host_async`, `effects_barrier`.

`live_arrays` finds the arrays through the garbage collector's list of tracked objects rather than a registry that
every new Array would have to join: creating an Array stays exactly as cheap as before (the eager hot path creates
one per operation), the collector's list only ever holds objects that are still alive or unreachable-but-uncollected,
and `gc.get_objects` runs under the interpreter lock, so the answer is a consistent snapshot even while other
threads create and drop arrays. A call costs time proportional to the number of Python objects (about 15 ms for
50,000), which suits a debugging aid.
"""

from __future__ import annotations

import gc
from typing import Any

from .core import Array
from .tree_util import tree_map


def live_arrays(platform: str | None = None) -> list[Array]:
    """Every fluxion Array that is alive now and not deleted (donated or `delete()`d), in no particular order.

    Args:
      platform: None or "cpu" (fluxion's only backend); other names raise `RuntimeError` as JAX does for a
        backend it does not have.

    Arrays that are unreachable but sit in a reference cycle the collector has not freed yet are included, as JAX
    includes buffers not yet released. Internal constants fluxion holds (e.g. captured in a compiled program) count
    as live, as in JAX.
    """
    if platform is not None and platform.lower() != "cpu":
        raise RuntimeError(f"live_arrays: unknown backend {platform!r}; fluxion has only 'cpu'")
    # type() rather than isinstance: isinstance on a dead weakref.proxy in the collector's list raises ReferenceError.
    return [o for o in gc.get_objects() if issubclass(type(o), Array) and not o.is_deleted()]


def copy_to_host_async(x: Any) -> Any:
    """Starts the host copy of every Array leaf of the pytree `x` and returns `x` (other leaves are left alone).

    fluxion's buffers already live in host memory, so each Array's `copy_to_host_async()` has nothing to start; the
    function still visits the leaves as JAX does, so objects defining their own `copy_to_host_async` get it called.
    """
    def start(leaf):
        method = getattr(leaf, "copy_to_host_async", None)
        if isinstance(leaf, Array) or (method is not None and callable(method)):
            method()
        return leaf
    tree_map(start, x)
    return x


def effects_barrier() -> None:
    """Waits until every side effect of calls made so far (`io_callback`, `debug.print`, `debug.callback`, ordered
    or not) has happened.

    fluxion dispatch is synchronous: a call (eager, jitted or pmapped) returns only after its program, including its
    callbacks, has run on every replica. So when this is reached every earlier effect is already done and it returns
    at once; it exists so that code written for JAX's asynchronous dispatch runs unchanged.
    """
    return None
