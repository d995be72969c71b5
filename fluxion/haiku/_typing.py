"""Types of the Haiku API: `ModuleProtocol`, `SupportsCall`, `MutableParams`, `MutableState`."""

from __future__ import annotations

from typing import Any, Mapping, MutableMapping, Protocol, runtime_checkable

__all__ = ["ModuleProtocol", "SupportsCall", "MutableParams", "MutableState"]

MutableParams = MutableMapping[str, MutableMapping[str, Any]]
"""Parameters as a transformed function's `init` returns them: module name -> parameter name -> array."""
MutableState = MutableMapping[str, MutableMapping[str, Any]]
"""State (`hk.get_state`/`hk.set_state`) as `transform_with_state` carries it: module name -> state name -> array."""


@runtime_checkable
class ModuleProtocol(Protocol):
    """Anything module-like: has `name`, `module_name`, `params_dict()` and `state_dict()`."""

    name: str
    module_name: str

    def params_dict(self) -> Mapping[str, Any]: ...

    def state_dict(self) -> Mapping[str, Any]: ...


@runtime_checkable
class SupportsCall(ModuleProtocol, Protocol):
    """A `ModuleProtocol` that is also callable (`isinstance(hk.Linear(1), hk.SupportsCall)` is True)."""

    def __call__(self, *args, **kwargs) -> Any: ...
