"""`fluxion.errors`: the error classes (mirrors `jax.errors`; same names and built-in bases)."""

from ._src.errors import (ConcretizationTypeError as ConcretizationTypeError, JAXTypeError as JAXTypeError,
                          KeyReuseError as KeyReuseError, NonConcreteBooleanIndexError as NonConcreteBooleanIndexError,
                          TracerArrayConversionError as TracerArrayConversionError,
                          TracerBoolConversionError as TracerBoolConversionError,
                          TracerIntegerConversionError as TracerIntegerConversionError,
                          UnexpectedTracerError as UnexpectedTracerError)
