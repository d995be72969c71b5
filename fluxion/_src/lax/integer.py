"""`mulhi`: the high half of the double-width product of two integers (elementwise).

For n-bit operands, mulhi(x, y) = (x * y) >> n computed exactly in 2n bits (signed operands use the signed
product, arithmetic shift). This is the building block of multiply-high tricks such as division by constants and
Philox-style generators. Integer-valued, so not differentiable; batching is the elementwise family's.
"""

from __future__ import annotations

from ..interpreters import ad
from .elementwise import _make_binary, _nary

mulhi_p = _nary("mulhi", "int")
mulhi = _make_binary(mulhi_p)
mulhi.__doc__ = """The high n bits of the 2n-bit product of the n-bit integers x and y (one integer dtype, scalars
broadcast): (x * y) >> n, signed or unsigned as the dtype. Not differentiable."""
ad.defnondifferentiable(mulhi_p)
