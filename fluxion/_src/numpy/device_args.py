"""The Array API's `device` arguments and attributes: `zeros(..., device=d)`, `x.device`, `x.to_device(d)`.

`device` may be None (the result stays where it would be), a `Device`, or a `Sharding`; the result is then placed
as `fluxion.device_put(result, device)` places it, as JAX does. Under tracing the placement is recorded the same way
`device_put` records it inside `jit` (values never change: fluxion runs on the host).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from .. import core


def place(x: Any, device: Any) -> Any:
    """`x` (an array or a tree of them) placed on `device`; None leaves it unchanged.

    Raises:
      ValueError: `device` is neither None, a Device, nor a Sharding/PartitionSpec (the message names it).
    """
    if device is None:
        return x
    from ..devices import Device
    from ..placement import device_put_sharded_value  # imported late: placement is built on the numpy layer
    from ..sharding import PartitionSpec, Sharding
    if not isinstance(device, (Device, Sharding, PartitionSpec)):
        raise ValueError(f"device must be None, a fluxion Device or a Sharding; got {device!r} "
                         f"of type {type(device).__name__}")
    return device_put_sharded_value(x, device)


def accepts_device(fn: Callable) -> Callable:
    """Adds the Array API's keyword-only `device=None` argument to the creation function `fn`."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def with_device(*args, device=None, **kwargs):
        return place(fn(*args, **kwargs), device)

    params = list(sig.parameters.values())
    params.append(inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None))
    with_device.__signature__ = sig.replace(parameters=params)
    return with_device


def device_of(x: Any) -> Any:
    """`x.device`: the Device holding a single-device array, else its Sharding (as JAX's `Array.device`).

    Raises:
      AttributeError: `x` is a tracer (JAX tracers have no `device` either).
    """
    if not isinstance(x, core.Array):
        raise AttributeError(f"{type(x).__name__} has no attribute device")
    sharding = x.sharding
    devs = sharding.device_set
    return next(iter(devs)) if len(devs) == 1 else sharding


def to_device(x: Any, device: Any, stream: Any = None) -> Any:
    """`x.to_device(device)`: a copy of `x` placed on `device` (None: `x` unchanged in place).

    Raises:
      ValueError: `stream` is given (there are no streams on the host), or `device` is not a placement.
    """
    if stream is not None:
        raise ValueError(f"to_device: stream must be None, got {stream!r}")
    return place(x, device)
