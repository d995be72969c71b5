"""Dynamic loss scaling for mixed-precision training, mirroring ``flax.training.dynamic_scale``.

The loss is multiplied by `scale` before differentiation (so small float16 gradients do not flush to zero) and the
gradients divided by it afterwards. After `growth_interval` consecutive steps with finite gradients the scale grows
by `growth_factor` (capped at float32's maximum); a step with a non-finite gradient shrinks it by `backoff_factor`
(not below `minimum_scale`) and restarts the count. Micikevicius et al. 2018, "Mixed Precision Training",
https://arxiv.org/abs/1710.03740.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import struct


class DynamicScaleResult(NamedTuple):
    dynamic_scale: Any
    finite: Any
    aux: Any
    grad: Any


class DynamicScale(struct.PyTreeNode):
    """Loss-scaling state (a pytree: `fin_steps` and `scale` are leaves, so it passes through `jit`).

    Attributes:
      growth_factor: factor the scale grows by after `growth_interval` finite steps (static).
      backoff_factor: factor the scale shrinks by after a non-finite gradient (static).
      growth_interval: finite steps in a row before growing (static).
      fin_steps: finite steps in a row so far.
      scale: the current loss scale.
      minimum_scale: the smallest scale (static; None: no bound).
    """

    growth_factor: float = struct.field(pytree_node=False, default=2.0)
    backoff_factor: float = struct.field(pytree_node=False, default=0.5)
    growth_interval: int = struct.field(pytree_node=False, default=2000)
    fin_steps: int = 0
    scale: float = 65536.0
    minimum_scale: float | None = struct.field(pytree_node=False, default=float(np.finfo(np.float32).tiny))

    def value_and_grad(self, fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
                       axis_name: str | None = None) -> Callable[..., DynamicScaleResult]:
        """Like `fluxion.value_and_grad(fun, argnums, has_aux)` with loss scaling; the returned function gives a
        `DynamicScaleResult(new_dynamic_scale, finite, value (or (value, aux)), float32 gradients)`. With
        `axis_name`, the gradients are averaged over that `pmap` axis first."""

        @functools.wraps(fun)
        def scaled(*args):
            out = fun(*args)
            return (self.scale * out[0], out[1]) if has_aux else self.scale * out

        grad_fn = fluxion.value_and_grad(scaled, argnums, has_aux)

        def run(*args):
            value, grad = grad_fn(*args)
            value = (value[0] / self.scale, value[1]) if has_aux else value / self.scale
            grad = tree_util.tree_map(lambda g: jnp.asarray(g, jnp.float32) / self.scale, grad)
            if axis_name is not None:
                grad = lax.pmean(grad, axis_name)
            finite = jnp.array(True)
            for g in tree_util.tree_leaves(grad):
                finite &= jnp.all(jnp.isfinite(g))
            grow = self.fin_steps == self.growth_interval
            grown = jnp.where(grow & finite,
                              jnp.minimum(self.scale * self.growth_factor, float(np.finfo(np.float32).max)),
                              self.scale)
            shrunk = self.scale * self.backoff_factor
            if self.minimum_scale is not None:
                shrunk = jnp.maximum(shrunk, self.minimum_scale)
            new = self.replace(fin_steps=jnp.where(grow | ~finite, 0, self.fin_steps + 1),
                               scale=jnp.where(finite, grown, shrunk))
            return DynamicScaleResult(new, finite, value, grad)

        return run
