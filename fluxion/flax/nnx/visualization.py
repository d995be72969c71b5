"""``nnx.display``: print objects (mirrors ``flax.nnx.visualization.display``).

Flax renders with the treescope pretty-printer inside IPython and prints the
objects otherwise; fluxion has no treescope, so it always prints each
object's ``repr`` (Modules and Variables print their attribute trees), one per line.
"""

from __future__ import annotations

from typing import Any


def display(*args: Any) -> None:
    """Prints each argument (``print(x)``), in order."""
    for x in args:
        print(x)
