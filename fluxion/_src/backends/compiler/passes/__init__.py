"""The IR pass pipeline: each pass is a function `ClosedJaxpr -> ClosedJaxpr` with its own tests.

`optimize` runs them in a fixed order; in debug mode (`fluxion.config.update("fluxion_debug_typecheck", True)`
or `FLUXION_DEBUG_TYPECHECK=1`) the result of every pass is type-checked, so a pass that breaks the IR is named in
the error instead of surfacing as a wrong value later.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ....config import config
from ....core import ClosedJaxpr, JaxprTypeError
from .. import ir
from .contract import contract
from .cse import cse
from .dce import dce
from .fold import fold_constants
from .inline import inline_calls
from .simplify import simplify

Pass = Callable[[ClosedJaxpr], ClosedJaxpr]

# Inlining runs again after folding, which can turn a `cond`'s index into a literal. Contraction comes last: it
# needs the final readers of each product, and leaves the products it absorbed to the last DCE.
PIPELINE: Sequence[Pass] = (inline_calls, simplify, fold_constants, inline_calls, simplify, cse, simplify, dce, contract,
                            dce)


def run_pass(p: Pass, closed: ClosedJaxpr, check: bool) -> ClosedJaxpr:
    out = p(closed)
    if check:
        try:
            ir.check_closed_jaxpr(out)
        except JaxprTypeError as err:
            raise JaxprTypeError(f"compiler pass {p.__name__} produced an ill-typed jaxpr: {err}\n{out}") from err
    return out


def optimize(closed: ClosedJaxpr, passes: Sequence[Pass] = PIPELINE, check: bool | None = None) -> ClosedJaxpr:
    """Runs `passes` in order.

    Args:
      closed: the program to optimize.
      passes: the pipeline (default: inline, simplify, fold, inline, simplify, CSE, simplify, DCE, multiply-add
        contraction, DCE).
      check: type-check after every pass; defaults to the `fluxion_debug_typecheck` flag.

    Returns:
      The optimized program, with the same inputs and outputs.

    Raises:
      JaxprTypeError: in debug mode, when a pass produces an ill-typed jaxpr (the message names the pass).
    """
    if check is None:
        check = bool(config.fluxion_debug_typecheck)
    for p in passes:
        closed = run_pass(p, closed, check)
    return closed


__all__ = ["optimize", "inline_calls", "dce", "cse", "fold_constants", "simplify", "contract", "PIPELINE", "run_pass"]
