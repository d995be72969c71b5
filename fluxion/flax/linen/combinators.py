"""Combinators (mirrors ``flax.linen.combinators``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .module import Module


class Sequential(Module):
    """Applies ``layers`` in order, each to the previous output.

    A tuple output is unpacked into positional arguments of the next layer,
    a dict into keyword arguments. Modules among ``layers`` are named
    ``layers_<index>`` (plain functions such as ``nn.relu`` take an index but
    no parameters)::

        model = nn.Sequential([nn.Dense(32), nn.relu, nn.Dense(1)])
        # params: {'layers_0': {...}, 'layers_2': {...}}

    Attributes:
        layers: modules or functions.
    """

    layers: Sequence[Callable[..., Any]]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the layers.

        Raises:
            ValueError: if ``layers`` is empty.
        """
        if not self.layers:
            raise ValueError(f'Sequential module {self.name or ""} has no layers to apply.')
        outputs = self.layers[0](*args, **kwargs)
        for layer in self.layers[1:]:
            if isinstance(outputs, tuple):
                outputs = layer(*outputs)
            elif isinstance(outputs, dict):
                outputs = layer(**outputs)
            else:
                outputs = layer(outputs)
        return outputs
