"""Tiny Shakespeare: the 1,115,394-character plain-text corpus of Karpathy's char-rnn (2015), a concatenation of
works of Shakespeare (public domain), used for character-level language modelling.

The file ``input.txt`` is looked for, in this order (as :mod:`fluxion.datasets.mnist` does, a directory counts
when it holds the file itself or in a ``tinyshakespeare`` subdirectory):

1. the ``data_dir`` argument, when given (then only there);
2. the directory named by the ``fluxion_data_dir`` option (``fluxion.config``) or ``$FLUXION_DATA_DIR``;
3. the copy carried in the repository, ``<repo>/datasets/tinyshakespeare``;
4. the user cache, ``$XDG_CACHE_HOME/fluxion/tinyshakespeare``.

Nothing is downloaded: the repository carries the file. Its SHA-256 is checked before use.

Example::

    from fluxion.datasets import tinyshakespeare
    text = tinyshakespeare.load()          # str, 1,115,394 characters, 65 distinct
"""

from __future__ import annotations

import os
from pathlib import Path

from fluxion import config

from .mnist import ChecksumMismatchError, DatasetNotFoundError, sha256_of

__all__ = ["FILE", "SHA256", "find_file", "load"]

FILE = "input.txt"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
_SUBDIR = "tinyshakespeare"


def _search_roots() -> list[Path]:
    roots = []
    if config.fluxion_data_dir:
        roots.append(Path(config.fluxion_data_dir))
    # fluxion/datasets/tinyshakespeare.py -> parents[2] is the repository root in a source checkout.
    roots.append(Path(__file__).resolve().parents[2] / "datasets" / _SUBDIR)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    roots.append(Path(base) / "fluxion" / _SUBDIR)
    return roots


def find_file(data_dir: str | os.PathLike | None = None) -> Path | None:
    """Returns the path of ``input.txt`` in the first searched place holding it, or None (see the module docs)."""
    roots = [Path(data_dir)] if data_dir is not None else _search_roots()
    for root in roots:
        for candidate in (root / FILE, root / _SUBDIR / FILE):
            if candidate.is_file():
                return candidate
    return None


def load(data_dir: str | os.PathLike | None = None, *, verify: bool = True) -> str:
    """Reads the corpus as one string.

    Args:
        data_dir: a directory holding ``input.txt`` (or ``tinyshakespeare/input.txt``); when given, the only place
            looked in. Default: the search described in the module docstring.
        verify: check the file's SHA-256 digest against :data:`SHA256` first.

    Returns:
        The text (ASCII, 1,115,394 characters for the official file).

    Raises:
        DatasetNotFoundError (a FileNotFoundError): no searched place holds the file; the message lists them.
        ChecksumMismatchError: ``verify`` and the digest differs (a damaged or different file).
    """
    path = find_file(data_dir)
    if path is None:
        looked = [Path(data_dir)] if data_dir is not None else _search_roots()
        raise DatasetNotFoundError(
            f"Tiny Shakespeare {FILE} not found. Looked in: " + ", ".join(str(p) for p in looked)
            + ". Put the file in one of them, set $FLUXION_DATA_DIR, or pass data_dir=...")
    if verify:
        actual = sha256_of(path)
        if actual != SHA256:
            raise ChecksumMismatchError(f"{path}: SHA-256 is {actual}, expected {SHA256}; pass verify=False "
                                        "to read a modified file")
    return path.read_text(encoding="utf-8")
