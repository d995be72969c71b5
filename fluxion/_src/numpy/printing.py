"""Text form of arrays: `array_repr`, `array_str`, and NumPy's print options (`printoptions`,
`get_printoptions`, `set_printoptions`), which fluxion's Array printing follows because it formats with NumPy."""

from __future__ import annotations

import numpy as np

printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """`Array([...], dtype=...)`: NumPy's `array_repr` of the values with fluxion's type name."""
    text = np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)
    return "Array" + text[len("array"):] if text.startswith("array") else text


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """The values of `a` as NumPy prints them (no type name or dtype)."""
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)
