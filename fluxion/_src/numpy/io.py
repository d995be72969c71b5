"""Reading and writing arrays: `save`, `savez`, `load` (NumPy's .npy/.npz formats, never pickles),
`fromstring`, and `fromfile`/`fromiter`, which, as in JAX, are refused.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .creation import asarray


def _host(x):
    return np.asarray(x)


def save(file, arr, allow_pickle: bool = False, **kwargs) -> None:
    """Writes `arr` to `file` (a path or binary file) in NumPy's .npy format (pickling is refused, so object
    arrays cannot be written). bfloat16 is stored with its ml_dtypes name, as NumPy and JAX store it."""
    np.save(file, _host(arr), allow_pickle=False)


def savez(file, *args, **kwds) -> None:
    """Writes several arrays to one uncompressed .npz archive (positional ones named arr_0, arr_1, ...)."""
    np.savez(file, *[_host(a) for a in args], **{k: _host(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
    """Reads a .npy file into a fluxion Array (canonical dtype; raw 2-byte void data written for bfloat16 is
    read back as bfloat16), or a .npz archive into NumPy's lazy NpzFile (as JAX returns it). `allow_pickle` is
    forced to False."""
    kwargs["allow_pickle"] = False
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == np.dtype("V2"):
            out = out.view(dtypes.bfloat16)
        return asarray(out)
    return out


def fromstring(string, dtype=float, count: int = -1, *, sep: str):
    """Array of the numbers in the text `string` separated by `sep` (NumPy's parser; the binary mode without
    `sep` is not available)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(*args, **kwargs):
    """Refused, as in JAX: reading a file is a side effect that jit would not repeat. Read with
    `np.fromfile(...)` and convert with `fluxion.numpy.asarray`.

    Raises:
      NotImplementedError: always.
    """
    raise NotImplementedError("jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for "
                              "use with JIT and other transformations. Use jnp.asarray(np.fromfile(...)) instead, "
                              "outside of transformed functions.")


def fromiter(*args, **kwargs):
    """Refused, as in JAX: consuming an iterator is a side effect that jit would not repeat. Use
    `fluxion.numpy.asarray(np.fromiter(...))`.

    Raises:
      NotImplementedError: always.
    """
    raise NotImplementedError("jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for "
                              "use with JIT and other transformations. Use jnp.asarray(np.fromiter(...)) instead, "
                              "outside of transformed functions.")
