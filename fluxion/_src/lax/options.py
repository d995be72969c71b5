"""The option types of `lax` (mirrors `jax.lax`'s enums and annotation aliases).

They are accepted wherever JAX accepts them and validated by their constructors, but fluxion computes on NumPy in
the operands' own precision, so the precision and algorithm choices do not change results: matrix products are
always computed as `Precision.HIGHEST` (float32 accumulated in float32 or wider). `RoundingMethod` does select the
rounding of `lax.round`.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, Sequence, Union

from .convolution import ConvDimensionNumbers



class Precision(enum.Enum):
    """Matrix-product precision: DEFAULT (aliases 'default', 'fastest', 'bfloat16'), HIGH ('high',
    'bfloat16_3x', 'tensorfloat32') or HIGHEST ('highest', 'float32'). Accepted; every setting computes at full
    precision here."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object):
        return _PRECISION_ALIASES.get(value) if isinstance(value, str) else None

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISION_ALIASES = {
    "default": Precision.DEFAULT, "fastest": Precision.DEFAULT, "bfloat16": Precision.DEFAULT,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
}


class RoundingMethod(enum.IntEnum):
    """How `lax.round` rounds halfway cases: away from zero (0) or to the nearest even integer (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class DotAlgorithmPreset(enum.Enum):
    """Named dot-product algorithms (input, input, accumulation types; XN = N passes of a narrower type).
    Accepted as `precision`; fluxion computes every preset in the operands' dtype with full accumulation."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name


class DotAlgorithm(NamedTuple):
    """An explicit dot-product algorithm: operand and accumulation types and pass counts. Accepted as
    `precision` (no effect on results here)."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class AccuracyMode(enum.Enum):
    """Requested accuracy of transcendental functions (`lax.exp(x, accuracy=...)` in JAX): HIGHEST or DEFAULT."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance(NamedTuple):
    """An accuracy tolerance for transcendental functions: absolute, relative and in units of the last place."""

    atol: float = 0.0
    rtol: float = 0.0
    ulps: int = 0


class RandomAlgorithm(enum.IntEnum):
    """The bit generator of `lax.rng_bit_generator`: RNG_DEFAULT, RNG_THREE_FRY or RNG_PHILOX."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


# Annotation aliases, as jax.lax names them.
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]
"""The `dimension_numbers` of `lax.dot_general`: `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`,
each a sequence of axis numbers; contracting axes are summed over, batch axes are paired and kept in front."""
PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision], DotAlgorithm,
                      DotAlgorithmPreset]
"""What a `precision=` argument accepts: None, a `Precision` or its name (`"highest"`), a pair of them (one per
operand), or a `DotAlgorithm`/`DotAlgorithmPreset`. Accepted and checked for JAX compatibility; fluxion computes
every product in the operands' dtype on the CPU, so the value does not change results."""
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]
"""The `dimension_numbers` of `lax.conv_general_dilated`: None (NCHW inputs, OIHW kernels, NCHW outputs, for any
number of spatial dimensions), three layout strings such as `("NHWC", "HWIO", "NHWC")`, or a `ConvDimensionNumbers`
of axis indices (what `lax.conv_dimension_numbers` builds from the strings)."""

