"""`nets.MLP`: a stack of `Linear` layers named `linear_0`, `linear_1`, ... (created in `__init__`, hence
`mlp/~/linear_0`)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from fluxion import nn

from .._basic import Linear, dropout
from .._module import Module
from .._prng import PRNGSequence

__all__ = ["MLP"]


class MLP(Module):
    """Multi-layer perceptron: `Linear -> activation -> ... -> Linear` (activation after the last layer only
    with `activate_final`). With `dropout_rate`, dropout is applied before each activation.

    Args:
        output_sizes: widths of the layers.
        w_init, b_init, with_bias: passed to every `Linear`.
        activation: elementwise function (default `nn.relu`).
        activate_final: also apply the activation (and dropout) after the last layer.

    Raises:
        ValueError: `b_init` given with `with_bias=False`; at call time, `dropout_rate` without `rng` or vice versa.
    """

    def __init__(self, output_sizes: Iterable[int], w_init: Callable | None = None, b_init: Callable | None = None,
                 with_bias: bool = True, activation: Callable[[Any], Any] | None = None,
                 activate_final: bool = False, name: str | None = None):
        if not with_bias and b_init is not None:
            raise ValueError("When with_bias=False b_init must not be set.")
        super().__init__(name=name)
        self.with_bias = with_bias
        self.w_init = w_init
        self.b_init = b_init
        # Resolved here rather than as a default argument so that importing haiku does not require fluxion.nn.
        self.activation = activation if activation is not None else nn.relu
        self.activate_final = activate_final
        output_sizes = tuple(output_sizes)
        self.layers = tuple(Linear(output_size=size, w_init=w_init, b_init=b_init, with_bias=with_bias,
                                   name=f"linear_{i}") for i, size in enumerate(output_sizes))
        self.output_size = output_sizes[-1] if output_sizes else None

    def __call__(self, inputs: Any, dropout_rate: float | None = None, rng: Any = None) -> Any:
        """inputs `(..., d)` -> `(..., output_sizes[-1])`."""
        if dropout_rate is not None and rng is None:
            raise ValueError("When using dropout an rng key must be passed.")
        if dropout_rate is None and rng is not None:
            raise ValueError("RNG should only be passed when using dropout.")
        keys = PRNGSequence(rng) if rng is not None else None
        out = inputs
        for i, layer in enumerate(self.layers):
            out = layer(out)
            if i < len(self.layers) - 1 or self.activate_final:
                if dropout_rate is not None:
                    out = dropout(next(keys), dropout_rate, out)
                out = self.activation(out)
        return out

    def reverse(self, activate_final: bool | None = None, name: str | None = None) -> "MLP":
        """An MLP mirroring this one's layer sizes (input sizes in reverse order).

        Raises:
            ValueError: this MLP has not been called yet (input sizes unknown).
        """
        if activate_final is None:
            activate_final = self.activate_final
        if name is None:
            name = self.name + "_reversed"
        sizes = tuple(layer.input_size for layer in reversed(self.layers) if layer.input_size is not None)
        if len(sizes) != len(self.layers):
            raise ValueError("You cannot reverse an MLP until it has been called.")
        return MLP(output_sizes=sizes, w_init=self.w_init, b_init=self.b_init, with_bias=self.with_bias,
                   activation=self.activation, activate_final=activate_final, name=name)
