"""Small argument helpers shared by the modules."""

from __future__ import annotations

import collections.abc
import re
from typing import Any, Sequence

__all__ = ["replicate", "get_channel_index"]

_CHANNELS_FIRST = re.compile(r"^NC[^C]*$")
_CHANNELS_LAST = re.compile(r"^N[^C]*C$")
_SEQUENTIAL = re.compile(r"^((BT)|(TB))[^D]*D$")


def replicate(element: Any, num_times: int, name: str) -> tuple:
    """`3 -> (3, 3)`, `[3] -> (3, 3)`, `(3, 4) -> (3, 4)` for `num_times=2`.

    Raises:
        TypeError: a sequence whose length is neither 1 nor `num_times` (message names `name`).
    """
    if isinstance(element, (str, bytes)) or not isinstance(element, collections.abc.Sequence):
        return (element,) * num_times
    if len(element) == 1:
        return tuple(element) * num_times
    if len(element) == num_times:
        return tuple(element)
    raise TypeError(f"{name} must be a scalar or sequence of length 1 or sequence of length {num_times}.")


def get_channel_index(data_format: str) -> int:
    """1 for channels-first formats (`NCHW`, "channels_first"), -1 for channels-last (`NHWC`, `BTD`, ...).

    Raises:
        ValueError: a format from which the channel axis cannot be read.
    """
    if data_format == "channels_first":
        return 1
    if data_format == "channels_last":
        return -1
    if _CHANNELS_FIRST.match(data_format):
        return 1
    if _CHANNELS_LAST.match(data_format) or _SEQUENTIAL.match(data_format):
        return -1
    raise ValueError(f"Unable to extract channel information from {data_format!r}. Valid data formats are spatial "
                     "(e.g.`NCHW`), sequential (e.g. `BTHWD`), `channels_first` and `channels_last`).")


def spatial_letters(n: int) -> str:
    """`n` distinct letters naming spatial axes in conv dimension-number strings (never N, C, O or I)."""
    letters = "DHWABEFGJKLMPQRSTUVXYZ"
    if n > len(letters):
        raise ValueError(f"at most {len(letters)} spatial dimensions are supported, got {n}")
    return letters[-n:] if n <= 3 else letters[:n]


def int_tuple(xs: Sequence[Any]) -> tuple:
    return tuple(int(x) for x in xs)
