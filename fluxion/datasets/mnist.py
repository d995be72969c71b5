"""The MNIST handwritten-digit dataset, read from the four canonical IDX ``.gz`` files.

MNIST (LeCun, Cortes and Burges) has 60,000 training and 10,000 test images of 28x28
grey-scale digits with labels 0-9. This module finds the four standard files, checks
their SHA-256 digests, and decodes them with NumPy.

Where the files are looked for, in this order:

1. the ``data_dir`` argument, when given (then only there);
2. the directory named by the ``fluxion_data_dir`` option (``fluxion.config``), or the
   ``FLUXION_DATA_DIR`` environment variable;
3. the copy carried in the repository, ``<repo>/datasets/mnist``;
4. the user cache, ``$XDG_CACHE_HOME/fluxion/mnist`` (default ``~/.cache/fluxion/mnist``).

A directory counts when it holds the files itself or in a ``mnist`` subdirectory. When no
place holds them, they are downloaded from public mirrors into the cache (or into
``data_dir`` when given) and verified before use.

Example::

    from fluxion.datasets import mnist
    (x_train, y_train), (x_test, y_test) = mnist.load_all()
    x_train.shape, x_train.dtype   # (60000, 28, 28), uint8
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from fluxion import config

from .idx import DatasetFileError, read_idx_gz

__all__ = [
    "ChecksumMismatchError",
    "DatasetNotFoundError",
    "FILES",
    "MIRRORS",
    "SHA256",
    "cache_dir",
    "download",
    "find_data_dir",
    "load",
    "load_all",
    "sha256_of",
]

# split -> (images file, labels file). Standard names from the MNIST distribution.
FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}

# SHA-256 of the official files (their MD5s match the values published with MNIST).
SHA256: dict[str, str] = {
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}

# Public mirrors serving the files under their standard names, tried in order.
MIRRORS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)

ENV_DATA_DIR = "FLUXION_DATA_DIR"
_DOWNLOAD_TIMEOUT_S = 30.0
_SUBDIR = "mnist"


class ChecksumMismatchError(DatasetFileError):
    """A dataset file's SHA-256 digest differs from the published one.

    The file is damaged or is a different file under the standard name. Delete it so that
    it is fetched again, or pass ``verify=False`` for deliberately modified data.
    """


class DatasetNotFoundError(FileNotFoundError):
    """The dataset files are in none of the places searched and could not be downloaded."""


def sha256_of(path: str | os.PathLike) -> str:
    """Returns the hex SHA-256 digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_dir() -> Path:
    """Returns the per-user cache directory for MNIST (it may not exist yet)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fluxion" / _SUBDIR


def _repo_copy_dir() -> Path:
    # fluxion/datasets/mnist.py -> parents[2] is the repository root in a source checkout.
    return Path(__file__).resolve().parents[2] / "datasets" / _SUBDIR


def _holding_dir(root: Path, names: Sequence[str]) -> Path | None:
    """Returns ``root`` or ``root/mnist`` if it holds every file in ``names``, else None."""
    for candidate in (root, root / _SUBDIR):
        if all((candidate / n).is_file() for n in names):
            return candidate
    return None


def _search_roots() -> list[tuple[str, Path]]:
    """The places searched when no ``data_dir`` is given, as (description, path)."""
    roots = []
    configured = config.fluxion_data_dir
    if configured:
        roots.append((f"${ENV_DATA_DIR}" if config.from_environment("fluxion_data_dir") else "fluxion_data_dir",
                      Path(configured)))
    roots.append(("repository copy", _repo_copy_dir()))
    roots.append(("user cache", cache_dir()))
    return roots


def find_data_dir(split: str = "train", data_dir: str | os.PathLike | None = None) -> Path | None:
    """Finds the directory holding the two files of ``split``, without downloading.

    Args:
        split: ``'train'`` or ``'test'``.
        data_dir: if given, the only directory considered (it or its ``mnist`` subdirectory).

    Returns:
        The directory, or None if no searched place holds both files.

    Raises:
        ValueError: if ``split`` is not ``'train'`` or ``'test'``.
    """
    names = _split_files(split)
    if data_dir is not None:
        return _holding_dir(Path(data_dir), names)
    for _, root in _search_roots():
        found = _holding_dir(root, names)
        if found is not None:
            return found
    return None


def _split_files(split: str) -> tuple[str, str]:
    if split not in FILES:
        raise ValueError(f"split must be one of {sorted(FILES)}, got {split!r}")
    return FILES[split]


def _fetch_to(url: str, dest: Path, expected_sha256: str | None) -> None:
    """Downloads ``url`` to ``dest`` atomically, checking the digest before the rename."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as resp:
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if expected_sha256 is not None and digest.hexdigest() != expected_sha256:
            raise ChecksumMismatchError(
                f"{url}: downloaded data has SHA-256 {digest.hexdigest()}, expected {expected_sha256}"
            )
        os.replace(tmp, dest)
    except BaseException:
        # Never leave a partial file behind; the final name only ever holds verified data.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def download(
    dest_dir: str | os.PathLike | None = None,
    *,
    splits: Sequence[str] = ("train", "test"),
    mirrors: Sequence[str] | None = None,
    checksums: Mapping[str, str] | None = None,
) -> Path:
    """Downloads the MNIST files that ``dest_dir`` does not hold yet.

    Each file is written to a temporary file in ``dest_dir``, its SHA-256 digest is
    checked, and only then is it renamed to its standard name, so an interrupted download
    never leaves a partial file under that name.

    Args:
        dest_dir: target directory, created if needed; default :func:`cache_dir`.
        splits: which splits to fetch.
        mirrors: base URLs tried in order (each joined with the file name); default
            :data:`MIRRORS`. ``file://`` URLs work too.
        checksums: file name -> expected SHA-256 hex digest; default :data:`SHA256`.

    Returns:
        ``dest_dir`` as a Path.

    Raises:
        DatasetNotFoundError: if some file could not be fetched from any mirror; the
            message lists each mirror's error.
    """
    dest = Path(dest_dir) if dest_dir is not None else cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    mirrors = MIRRORS if mirrors is None else tuple(mirrors)
    checksums = SHA256 if checksums is None else checksums
    for split in splits:
        for name in _split_files(split):
            target = dest / name
            if target.is_file():
                continue
            failures = []
            for base in mirrors:
                url = base.rstrip("/") + "/" + name
                try:
                    _fetch_to(url, target, checksums.get(name))
                    break
                except (OSError, http.client.HTTPException, ValueError) as e:
                    # OSError covers URLError and timeouts; HTTPException a cut-off
                    # response; ValueError a malformed URL or a checksum mismatch.
                    failures.append(f"  {url}: {type(e).__name__}: {e}")
            else:
                raise DatasetNotFoundError(
                    f"could not download {name} into {dest}:\n" + "\n".join(failures or ["  (no mirrors given)"])
                )
    return dest


# `load` has a `download` flag that shadows the function inside its body.
_download = download


def _not_found_message(split: str, data_dir: Path | None, download_error: Exception | None) -> str:
    names = _split_files(split)
    if data_dir is not None:
        looked = [f"  data_dir argument: {data_dir} (and {data_dir / _SUBDIR})"]
    else:
        looked = [f"  {desc}: {root} (and {root / _SUBDIR})" for desc, root in _search_roots()]
    lines = [
        f"MNIST {split!r} files {', '.join(names)} not found.",
        "Looked in:",
        *looked,
    ]
    if download_error is not None:
        lines.append(f"Downloading failed: {download_error}")
    else:
        lines.append("Downloading was disabled (download=False).")
    lines.append(
        "To fix: copy the four MNIST .gz files into one of these directories, set "
        f"${ENV_DATA_DIR} to a directory holding them, pass data_dir=..., or allow the "
        "download from a machine with network access."
    )
    return "\n".join(lines)


def _check_digest(path: Path, checksums: Mapping[str, str]) -> None:
    expected = checksums.get(path.name)
    if expected is None:
        raise ChecksumMismatchError(
            f"{path}: no expected SHA-256 digest for this file name in the checksum table; "
            "add one or pass verify=False"
        )
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumMismatchError(
            f"{path}: SHA-256 is {actual}, expected {expected}; the file is damaged or not the "
            "official one. Delete it to fetch it again, or pass verify=False for modified data."
        )


def load(
    split: str = "train",
    data_dir: str | os.PathLike | None = None,
    *,
    verify: bool = True,
    checksums: Mapping[str, str] | None = None,
    download: bool = True,
    mirrors: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Loads one split of MNIST.

    Args:
        split: ``'train'`` (60,000 examples) or ``'test'`` (10,000 examples).
        data_dir: an existing directory holding the files (or holding them in ``mnist/``).
            When given, it is the only place looked in and the download target; it is never
            created (a mistyped path is reported, not made). Default: search as described in
            the module docstring.
        verify: check each file's SHA-256 digest before decoding it.
        checksums: file name -> SHA-256 hex digest used when ``verify``; default the
            official digests :data:`SHA256`.
        download: fetch missing files from ``mirrors`` (default :data:`MIRRORS`).
        mirrors: base URLs to download from.

    Returns:
        ``(images, labels)``: ``images`` is ``uint8`` of shape ``(N, 28, 28)`` with
        values 0-255, ``labels`` is ``uint8`` of shape ``(N,)`` with values 0-9; ``N`` is
        60,000 for train and 10,000 for test.

    Raises:
        ValueError: if ``split`` is unknown.
        DatasetNotFoundError (a FileNotFoundError): if ``data_dir`` does not exist (the
            message and ``.filename`` name it; nothing is created), or the files are nowhere
            and cannot be downloaded (the message lists the places searched and how to fix it).
        NotADirectoryError: if ``data_dir`` exists but is not a directory.
        ChecksumMismatchError: if ``verify`` and a file's digest is wrong.
        DatasetFileError: if a file is not valid gzip/IDX, or images and labels do not fit
            together (rank, dtype or count).
    """
    image_name, label_name = _split_files(split)
    explicit = Path(data_dir) if data_dir is not None else None
    if explicit is not None:
        _check_data_dir(explicit)
    found = find_data_dir(split, explicit)
    if found is None:
        download_error: Exception | None = None
        if download:
            try:
                target = explicit if explicit is not None else cache_dir()
                found = _download(target, splits=(split,), mirrors=mirrors, checksums=checksums)
            except DatasetNotFoundError as e:
                download_error = e
        if found is None:
            raise DatasetNotFoundError(_not_found_message(split, explicit, download_error))

    image_path, label_path = found / image_name, found / label_name
    if verify:
        table = SHA256 if checksums is None else checksums
        _check_digest(image_path, table)
        _check_digest(label_path, table)
    images = read_idx_gz(image_path)
    labels = read_idx_gz(label_path)
    _check_pair(images, labels, image_path, label_path)
    return images, labels


def _check_data_dir(data_dir: Path) -> None:
    """Raises unless the ``data_dir`` a caller named is an existing directory (it is never created)."""
    if not data_dir.exists():
        raise DatasetNotFoundError(
            errno.ENOENT,
            "MNIST data directory does not exist (it is not created: check the path, or omit "
            f"data_dir to use ${ENV_DATA_DIR}, the repository copy or the download cache)",
            str(data_dir),
        )
    if not data_dir.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "MNIST data_dir is not a directory", str(data_dir))


def _check_pair(images: np.ndarray, labels: np.ndarray, image_path: Path, label_path: Path) -> None:
    """Checks that decoded arrays look like MNIST images and their labels."""
    if images.ndim != 3 or images.dtype != np.uint8:
        raise DatasetFileError(
            f"{image_path}: expected a rank-3 uint8 image array, got shape {images.shape} "
            f"dtype {images.dtype}"
        )
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise DatasetFileError(
            f"{label_path}: expected a rank-1 uint8 label array, got shape {labels.shape} "
            f"dtype {labels.dtype}"
        )
    if images.shape[0] != labels.shape[0]:
        raise DatasetFileError(
            f"{image_path} holds {images.shape[0]} images but {label_path} holds "
            f"{labels.shape[0]} labels"
        )


def load_all(
    data_dir: str | os.PathLike | None = None,
    **kwargs,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Loads both splits, in the layout of ``keras.datasets.mnist.load_data()``.

    Args:
        data_dir: as for :func:`load`.
        **kwargs: ``verify``, ``checksums``, ``download``, ``mirrors`` as for :func:`load`.

    Returns:
        ``((x_train, y_train), (x_test, y_test))`` with shapes ``(60000, 28, 28)``,
        ``(60000,)``, ``(10000, 28, 28)``, ``(10000,)``, all ``uint8``.

    Raises:
        The errors of :func:`load`.
    """
    return load("train", data_dir, **kwargs), load("test", data_dir, **kwargs)
