"""The catalogue of errors raised by ``fluxion.flax`` (mirrors ``flax.errors``).

Every error is a subclass of :class:`FlaxError` and is named *verb + object +
Error* (or, where Flax already fixed the name, the Flax name), so code that
catches ``flax.errors.ScopeParamNotFoundError`` keeps working after the import
swap. Each class docstring explains when the error happens and how to fix it;
the message names the variable, the collection and the module path involved.

Template for a new error::

    class DoThingError(FlaxError):
        \"\"\"One sentence: when this is raised.

        Why it happens and how to fix it, with a short example.
        \"\"\"

        def __init__(self, what: str):
            super().__init__(f'... {what} ...; to fix it, ...')
"""

from __future__ import annotations

from typing import Any


class FlaxError(Exception):
    """Base class of every error raised by ``fluxion.flax``."""


# ----------------------------------------------------------------------------
# Random number streams.
# ----------------------------------------------------------------------------


class InvalidRngError(FlaxError):
    """A PRNG key is malformed, or a module asks for a stream nobody provided.

    ``init`` needs at least a ``'params'`` key; layers such as ``Dropout`` also
    need their own stream, e.g. ``model.apply(variables, x,
    rngs={'dropout': key})``. A key is a ``uint32[2]`` array from
    ``random.PRNGKey`` or a typed key from ``random.key``.
    """

    def __init__(self, msg: str):
        super().__init__(msg)


# ----------------------------------------------------------------------------
# Variables passed to apply().
# ----------------------------------------------------------------------------


class ApplyScopeInvalidVariablesTypeError(FlaxError):
    """The ``variables`` argument of ``apply`` is not a dict of collections.

    ``apply`` expects ``{'params': {...}, 'batch_stats': {...}, ...}``: a
    mapping from collection names to nested dicts of arrays.
    """

    def __init__(self, got: Any = None):
        kind = type(got).__name__
        super().__init__(
            'The first argument of apply() must be a dict of collections such '
            "as {'params': {...}}, each collection a dict with string keys; "
            f'got a value of type {kind}.'
        )


class ApplyScopeInvalidVariablesStructureError(FlaxError):
    """``apply`` received ``{'params': {'params': ...}}``.

    This usually means the whole result of ``init`` was wrapped once more, as
    in ``model.apply({'params': variables}, x)``. Pass ``variables`` itself.
    """

    def __init__(self, variables: Any = None):
        super().__init__(
            "The variables passed to apply() have an extra 'params' layer: "
            "{'params': {'params': ...}}. Pass the dict returned by init() "
            "directly (or wrap only variables['params'])."
        )


# ----------------------------------------------------------------------------
# Reading and writing variables in a scope.
# ----------------------------------------------------------------------------


class ScopeParamNotFoundError(FlaxError):
    """``apply`` could not find a parameter that the module asks for.

    The ``params`` collection exists but has no entry with this name at this
    module path: the variables come from a different model (or a different
    configuration of it), or the parameter was renamed.
    """

    def __init__(self, param_name: str, scope_path: str):
        super().__init__(
            f'Parameter "{param_name}" was not found in scope "{scope_path}": '
            "the 'params' collection passed to apply() has no entry with this "
            'name at this path. Check that the variables were created by '
            'init() of the same model.'
        )


class ScopeParamShapeError(FlaxError):
    """An existing parameter does not have the shape its initializer gives.

    The module was configured differently from the one that produced the
    parameters (e.g. ``Dense(128)`` applied to ``Dense(64)`` weights, or an
    input with another feature size).
    """

    def __init__(self, param_name: str, scope_path: str, value_shape: tuple,
                 init_shape: tuple):
        super().__init__(
            f'Parameter "{param_name}" in scope "{scope_path}" has shape '
            f'{tuple(value_shape)}, but its initializer produces shape '
            f'{tuple(init_shape)} for this module configuration and input.'
        )


class ScopeCollectionNotFound(FlaxError):
    """A variable was read from a collection that is empty at that path.

    Typical causes: ``apply({}, x)`` without parameters, or a ``BatchNorm``
    applied without its ``'batch_stats'`` collection. Pass the missing
    collection, or make it mutable so that it can be created.
    """

    def __init__(self, col_name: str, var_name: str, scope_path: str):
        super().__init__(
            f'Variable "{var_name}" of collection "{col_name}" was requested '
            f'in scope "{scope_path}", but that collection is empty there. '
            f'Pass the "{col_name}" collection to apply(), or mark it mutable '
            f'(mutable=["{col_name}"]) so it can be initialized.'
        )


class ScopeVariableNotFoundError(FlaxError):
    """A variable is missing from an immutable, non-empty collection."""

    def __init__(self, var_name: str, col_name: str, scope_path: str):
        super().__init__(
            f'Variable "{var_name}" was not found in collection "{col_name}" '
            f'in scope "{scope_path}", and the collection is immutable so it '
            f'cannot be created. Pass it in, or apply with '
            f'mutable=["{col_name}"].'
        )


class ModifyScopeVariableError(FlaxError):
    """A variable was written in a collection that is not mutable.

    In ``apply`` only the collections listed in ``mutable=`` may change, e.g.
    ``model.apply(variables, x, mutable=['batch_stats'])`` for ``BatchNorm``
    in training mode.
    """

    def __init__(self, col_name: str, var_name: str, scope_path: str):
        super().__init__(
            f'Cannot write variable "{var_name}" in scope "{scope_path}": '
            f'collection "{col_name}" is immutable in this call. Pass '
            f'mutable=["{col_name}"] to apply() to allow updates.'
        )


# ----------------------------------------------------------------------------
# Module definition and binding.
# ----------------------------------------------------------------------------


class OverrideModuleInitError(FlaxError, TypeError):
    """A ``Module`` subclass defines ``__init__``.

    Modules are dataclasses: declare the configuration as annotated class
    attributes and build submodules in ``setup()`` or a ``@compact`` method::

        class MLP(nn.Module):
            features: int            # instead of __init__(self, features)

            def setup(self):
                self.dense = nn.Dense(self.features)
    """

    def __init__(self, class_name: str):
        super().__init__(
            f'Module {class_name} defines __init__, which Modules do not '
            'allow: a Module is a dataclass whose constructor is generated '
            'from its annotated fields. Declare the constructor arguments as '
            f'annotated class attributes (e.g. `features: int`) and create '
            'submodules and parameters in setup() or in a @compact method.'
        )


class NameInUseError(FlaxError):
    """Two submodules, parameters or variables of one module share a name.

    Names are unique per module; auto-generated names (``Dense_0``) never
    clash with each other, so the clash comes from an explicit ``name=`` or a
    ``self.param``/``self.variable`` name.
    """

    def __init__(self, key_type: str, value: str, module_name: str):
        super().__init__(
            f'Could not create {key_type} "{value}" in Module {module_name}: '
            'the name is already used by another submodule, parameter or '
            'variable of this module.'
        )


class AssignSubModuleError(FlaxError):
    """A submodule was created outside ``setup()`` and ``@compact`` methods."""

    def __init__(self, cls_name: str):
        super().__init__(
            f'Submodule {cls_name} must be created in setup() or in a method '
            'decorated with @nn.compact; it was created in a plain method.'
        )


class SetAttributeFrozenModuleError(FlaxError):
    """An attribute of a bound module was set outside ``setup()``."""

    def __init__(self, module_cls: str, attr_name: str, attr_val: Any):
        super().__init__(
            f"Can't set {attr_name}={attr_val!r} on Module {module_cls}: a "
            'bound Module is frozen outside of setup(). Assign attributes in '
            'setup(), or return the value instead of storing it.'
        )


class CallCompactUnboundModuleError(FlaxError):
    """A ``@compact`` method was called on a module that is not bound.

    Modules hold no variables themselves: run them through ``init`` /
    ``apply`` (``model.apply(variables, x)``) or bind them first
    (``model.bind(variables)(x)``).
    """

    def __init__(self, class_name: str = 'Module', method_name: str = '__call__'):
        super().__init__(
            f"Can't call compact method {class_name}.{method_name} on an "
            'unbound module: use model.init(rng, ...) / model.apply(variables, '
            '...), or model.bind(variables) first.'
        )


class CallSetupUnboundModuleError(FlaxError):
    """``setup()`` was called by hand on a module that is not bound."""

    def __init__(self, class_name: str = 'Module'):
        super().__init__(
            f"Can't call {class_name}.setup() on an unbound module: setup() "
            'runs automatically inside init()/apply() or on a module returned '
            'by bind().'
        )


class CallUnboundModuleMethodError(FlaxError, ValueError):
    """Variables or PRNG streams were used on a module that is not bound."""

    def __init__(self, class_name: str, what: str):
        super().__init__(
            f"Can't use {what} on unbound module {class_name}: variables and "
            'PRNG streams only exist inside init()/apply() or on a module '
            'returned by bind().'
        )


class CallShareScopeOnUnboundModuleError(FlaxError):
    """``nn.share_scope`` was given a module that is not bound."""

    def __init__(self):
        super().__init__(
            "Can't share scopes between unbound modules: call nn.share_scope in "
            'setup() or in a @compact method, where both modules are bound.'
        )


class PartitioningUnspecifiedError(FlaxError):
    """A lifted transform stacked a partitioned variable without naming the new axis."""

    def __init__(self, target: object):
        super().__init__(
            f'Trying to transform a Partitioned variable without naming the new axis: pass '
            f'metadata_params={{nn.PARTITION_NAME: name_or_None}} to the transformation '
            f'(nn.scan/nn.vmap) that stacks {type(target).__name__} values.'
        )


class InvalidInstanceModuleError(FlaxError):
    """``init``/``apply`` was called on the Module class instead of an instance.

    Write ``nn.Dense(3).init(key, x)``, not ``nn.Dense.init(key, x)``.
    """

    def __init__(self):
        super().__init__(
            'init, init_with_output, apply and tabulate must be called on a '
            'Module instance (e.g. nn.Dense(3).init(key, x)), not on the '
            'Module class itself.'
        )
