"""Reader for the IDX file format used by MNIST and its relatives.

An IDX file (format described by LeCun, Cortes and Burges on the MNIST page) is:

* a 4-byte magic number: two zero bytes, one byte naming the element type, one byte
  giving the number of dimensions ``ndim``;
* ``ndim`` big-endian unsigned 32-bit integers, the size of each dimension;
* the elements themselves, big-endian, in C (row-major) order.

Element type codes: ``0x08`` uint8, ``0x09`` int8, ``0x0B`` int16, ``0x0C`` int32,
``0x0D`` float32, ``0x0E`` float64.

The distributed files are gzip-compressed; :func:`read_idx_gz` handles that.
"""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

__all__ = [
    "DatasetFileError",
    "IDX_DTYPES",
    "parse_idx",
    "read_idx_gz",
]

# Element type code -> big-endian NumPy dtype.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


class DatasetFileError(ValueError):
    """A dataset file exists but cannot be used: truncated, corrupt or not what it claims.

    The message names the file and what is wrong with it. The usual fix is to delete the
    file so that it is fetched again, or to point the loader at a good copy.
    """


def parse_idx(data: bytes, name: str = "<bytes>") -> np.ndarray:
    """Decodes the (already decompressed) bytes of an IDX file.

    Args:
        data: the raw IDX bytes (header followed by the elements).
        name: how to refer to the data in error messages, usually the file path.

    Returns:
        A NumPy array with the shape stored in the header and the element type in native
        byte order (for example ``uint8`` of shape ``(60000, 28, 28)`` for MNIST training
        images). The array owns its memory and is writeable.

    Raises:
        DatasetFileError: if the magic number is malformed, the type code is unknown, the
            header is cut short, or the number of element bytes does not match the
            dimensions in the header.
    """
    if len(data) < 4:
        raise DatasetFileError(
            f"{name}: not an IDX file: only {len(data)} bytes, too short for the 4-byte magic number"
        )
    zero0, zero1, type_code, ndim = data[0], data[1], data[2], data[3]
    if zero0 != 0 or zero1 != 0:
        raise DatasetFileError(
            f"{name}: bad IDX magic number 0x{data[:4].hex()}: the first two bytes must be zero"
        )
    if type_code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in IDX_DTYPES)
        raise DatasetFileError(
            f"{name}: bad IDX magic number 0x{data[:4].hex()}: unknown element type code "
            f"0x{type_code:02X} (known: {known})"
        )
    header_len = 4 + 4 * ndim
    if len(data) < header_len:
        raise DatasetFileError(
            f"{name}: truncated IDX header: {ndim} dimensions need {header_len} header bytes, "
            f"the data has {len(data)}"
        )
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    dtype = IDX_DTYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    actual = len(data) - header_len
    if actual != expected:
        what = "truncated" if actual < expected else "has trailing bytes"
        raise DatasetFileError(
            f"{name}: IDX data {what}: header says shape {shape} of {dtype.name} "
            f"({expected} bytes), but {actual} bytes follow the header"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header_len).reshape(shape)
    # astype to native order also copies, so the result does not pin `data` and is writeable.
    return array.astype(dtype.newbyteorder("="))


def read_idx_gz(path: str | os.PathLike) -> np.ndarray:
    """Reads a gzip-compressed IDX file.

    Args:
        path: path of the ``.gz`` file.

    Returns:
        The decoded array, as for :func:`parse_idx`.

    Raises:
        FileNotFoundError: if the file does not exist.
        DatasetFileError: if the file is not valid gzip (corrupt or truncated) or its
            content is not a valid IDX array.
    """
    path = os.fspath(path)
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        # EOFError: the compressed stream ends early (truncated download);
        # BadGzipFile/zlib.error: not gzip at all, or damaged bytes.
        raise DatasetFileError(f"{path}: not a valid gzip file ({type(e).__name__}: {e})") from e
    return parse_idx(data, name=path)
