"""Tests for fluxion.datasets (IDX parsing, MNIST file resolution, checksums, download).

IDX files are built here by hand with `struct.pack` (an encoder independent of the parser).
No test touches the network: downloads use file:// mirrors in temporary directories.
"""

import gzip
import hashlib
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from fluxion.datasets import idx, mnist

REPO_MNIST = Path(__file__).resolve().parents[2] / "datasets" / "mnist"

# IDX element type code -> NumPy dtype, from the format description on the MNIST page.
TYPE_CODES = {0x08: "u1", 0x09: "i1", 0x0B: "i2", 0x0C: "i4", 0x0D: "f4", 0x0E: "f8"}


def idx_bytes(array: np.ndarray, type_code: int) -> bytes:
    """Encodes `array` as IDX: magic 00 00 <type> <ndim>, big-endian dims, big-endian data."""
    header = struct.pack(">BBBB", 0, 0, type_code, array.ndim)
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(">" + TYPE_CODES[type_code]).tobytes()


def write_gz(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data))
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_split(directory: Path, split: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Writes a small MNIST-shaped split (n images) and returns the arrays written."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=(n,), dtype=np.uint8)
    image_name, label_name = mnist.FILES[split]
    write_gz(directory / image_name, idx_bytes(images, 0x08))
    write_gz(directory / label_name, idx_bytes(labels, 0x08))
    return images, labels


def table_for(*directories: Path) -> dict[str, str]:
    return {p.name: sha(p) for d in directories for p in d.glob("*.gz")}


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No env data dir, an empty private cache, no repo copy, and no real mirrors."""
    monkeypatch.delenv("FLUXION_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(mnist, "_repo_copy_dir", lambda: tmp_path / "no-repo-copy")
    monkeypatch.setattr(mnist, "MIRRORS", ())


# --- IDX parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize("type_code", sorted(TYPE_CODES))
def test_parse_idx_roundtrips_every_element_type(type_code):
    rng = np.random.default_rng(type_code)
    expected = (rng.standard_normal((3, 4, 5)) * 100).astype(TYPE_CODES[type_code])
    got = idx.parse_idx(idx_bytes(expected, type_code))
    assert got.shape == (3, 4, 5)
    assert got.dtype == np.dtype(TYPE_CODES[type_code]).newbyteorder("=")
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, expected)
    assert got.flags.writeable


def test_read_idx_gz_reads_a_file(tmp_path):
    labels = np.array([7, 2, 1, 0, 4], np.uint8)
    path = write_gz(tmp_path / "x.gz", idx_bytes(labels, 0x08))
    np.testing.assert_array_equal(idx.read_idx_gz(path), labels)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00\x00", "too short"),
        (b"\x01\x00\x08\x01" + struct.pack(">I", 1) + b"\x05", "first two bytes must be zero"),
        (b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x05", "unknown element type code 0x07"),
        (b"\x00\x00\x08\x03" + struct.pack(">I", 2), "truncated IDX header"),
        (b"\x00\x00\x08\x01" + struct.pack(">I", 4) + b"\x01\x02\x03", "truncated"),
        (b"\x00\x00\x0c\x01" + struct.pack(">I", 1) + b"\x00" * 5, "trailing bytes"),
    ],
    ids=["short", "bad-zero-bytes", "bad-type", "short-header", "short-data", "trailing"],
)
def test_parse_idx_rejects_malformed_data(data, message):
    with pytest.raises(idx.DatasetFileError, match=message) as info:
        idx.parse_idx(data, name="some/file.idx")
    assert "some/file.idx" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_read_idx_gz_rejects_non_gzip(tmp_path):
    path = tmp_path / "plain.gz"
    path.write_bytes(idx_bytes(np.zeros(3, np.uint8), 0x08))  # valid IDX, but not compressed
    with pytest.raises(idx.DatasetFileError, match="not a valid gzip file") as info:
        idx.read_idx_gz(path)
    assert str(path) in str(info.value)


def test_read_idx_gz_rejects_truncated_gzip(tmp_path):
    blob = gzip.compress(idx_bytes(np.arange(5000, dtype=np.uint8).reshape(50, 100) % 251, 0x08))
    path = tmp_path / "cut.gz"
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(idx.DatasetFileError, match="not a valid gzip file") as info:
        idx.read_idx_gz(path)
    assert str(path) in str(info.value)


def test_read_idx_gz_rejects_damaged_gzip(tmp_path):
    blob = bytearray(gzip.compress(idx_bytes(np.arange(200, dtype=np.uint8), 0x08)))
    blob[-6] ^= 0xFF  # inside the CRC32 trailer: data decodes but fails its check
    path = tmp_path / "crc.gz"
    path.write_bytes(bytes(blob))
    with pytest.raises(idx.DatasetFileError, match="not a valid gzip file"):
        idx.read_idx_gz(path)


# --- load(): checks on the files ----------------------------------------------------------


def test_load_small_split_without_verification(tmp_path):
    images, labels = write_split(tmp_path / "d", "train", n=5)
    got_images, got_labels = mnist.load("train", tmp_path / "d", verify=False)
    assert got_images.shape == (5, 28, 28) and got_images.dtype == np.uint8
    assert got_labels.shape == (5,) and got_labels.dtype == np.uint8
    np.testing.assert_array_equal(got_images, images)
    np.testing.assert_array_equal(got_labels, labels)


def test_load_checks_a_given_checksum_table(tmp_path):
    d = tmp_path / "d"
    images, labels = write_split(d, "test", n=3)
    got = mnist.load("test", d, checksums=table_for(d))
    np.testing.assert_array_equal(got[0], images)
    np.testing.assert_array_equal(got[1], labels)


def test_load_rejects_checksum_mismatch(tmp_path):
    d = tmp_path / "d"
    write_split(d, "train", n=3)
    # The official digests cannot match these made-up files.
    with pytest.raises(mnist.ChecksumMismatchError, match="train-images-idx3-ubyte.gz: SHA-256 is"):
        mnist.load("train", d)
    table = table_for(d)
    table["train-labels-idx1-ubyte.gz"] = "0" * 64
    with pytest.raises(mnist.ChecksumMismatchError, match=r"train-labels-idx1-ubyte\.gz.*expected 0{64}"):
        mnist.load("train", d, checksums=table)
    assert issubclass(mnist.ChecksumMismatchError, ValueError)


def test_load_rejects_file_missing_from_checksum_table(tmp_path):
    d = tmp_path / "d"
    write_split(d, "train", n=3)
    with pytest.raises(mnist.ChecksumMismatchError, match="no expected SHA-256 digest"):
        mnist.load("train", d, checksums={})


def test_load_rejects_count_mismatch(tmp_path):
    d = tmp_path / "d"
    write_split(d, "train", n=4)
    write_gz(d / "train-labels-idx1-ubyte.gz", idx_bytes(np.zeros(3, np.uint8), 0x08))
    with pytest.raises(idx.DatasetFileError, match="holds 4 images but .* holds 3 labels"):
        mnist.load("train", d, verify=False)


def test_load_rejects_swapped_files(tmp_path):
    d = tmp_path / "d"
    write_split(d, "train", n=4)
    labels_blob = (d / "train-labels-idx1-ubyte.gz").read_bytes()
    (d / "train-images-idx3-ubyte.gz").write_bytes(labels_blob)
    with pytest.raises(idx.DatasetFileError, match=r"train-images-idx3-ubyte\.gz: expected a rank-3 uint8"):
        mnist.load("train", d, verify=False)


def test_load_rejects_corrupt_file_by_name(tmp_path):
    d = tmp_path / "d"
    write_split(d, "test", n=2)
    (d / "t10k-images-idx3-ubyte.gz").write_bytes(b"this is not gzip")
    with pytest.raises(idx.DatasetFileError, match=r"t10k-images-idx3-ubyte\.gz: not a valid gzip"):
        mnist.load("test", d, verify=False)


def test_load_rejects_unknown_split(tmp_path):
    with pytest.raises(ValueError, match="split must be one of \\['test', 'train'\\], got 'validation'"):
        mnist.load("validation", tmp_path)


# --- where the files are found ------------------------------------------------------------


def test_resolution_order(monkeypatch, tmp_path):
    # Each place holds a split of a different size, so the size says which one was used.
    explicit, env, repo, cache = (tmp_path / n for n in ("explicit", "env", "repo", "xdg/fluxion/mnist"))
    for n, d in enumerate((explicit, env, repo, cache), start=1):
        write_split(d, "train", n=n)
    monkeypatch.setenv("FLUXION_DATA_DIR", str(env))
    monkeypatch.setattr(mnist, "_repo_copy_dir", lambda: repo)

    def size(**kw):
        return mnist.load("train", verify=False, download=False, **kw)[0].shape[0]

    assert size(data_dir=explicit) == 1
    assert size() == 2
    monkeypatch.delenv("FLUXION_DATA_DIR")
    assert size() == 3
    monkeypatch.setattr(mnist, "_repo_copy_dir", lambda: tmp_path / "absent")
    assert size() == 4
    assert mnist.find_data_dir("train") == cache


def test_env_dir_may_hold_a_mnist_subdirectory(monkeypatch, tmp_path):
    write_split(tmp_path / "root" / "mnist", "test", n=2)
    monkeypatch.setenv("FLUXION_DATA_DIR", str(tmp_path / "root"))
    assert mnist.find_data_dir("test") == tmp_path / "root" / "mnist"
    assert mnist.load("test", verify=False)[0].shape == (2, 28, 28)


def test_place_needs_both_files_of_the_split(monkeypatch, tmp_path):
    env, repo = tmp_path / "env", tmp_path / "repo"
    write_split(env, "train", n=1)
    (env / "train-labels-idx1-ubyte.gz").unlink()
    write_split(repo, "train", n=3)
    monkeypatch.setenv("FLUXION_DATA_DIR", str(env))
    monkeypatch.setattr(mnist, "_repo_copy_dir", lambda: repo)
    assert mnist.find_data_dir("train") == repo


def test_not_found_lists_places_and_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("FLUXION_DATA_DIR", str(tmp_path / "env"))
    with pytest.raises(mnist.DatasetNotFoundError) as info:
        mnist.load("train", download=False)
    message = str(info.value)
    assert "train-images-idx3-ubyte.gz" in message
    for place in (tmp_path / "env", tmp_path / "no-repo-copy", tmp_path / "xdg" / "fluxion" / "mnist"):
        assert str(place) in message
    assert "download=False" in message and "FLUXION_DATA_DIR" in message
    assert isinstance(info.value, FileNotFoundError)


def test_explicit_dir_is_the_only_place_looked(monkeypatch, tmp_path):
    write_split(tmp_path / "env", "train", n=2)
    monkeypatch.setenv("FLUXION_DATA_DIR", str(tmp_path / "env"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(mnist.DatasetNotFoundError, match="data_dir argument: .*empty"):
        mnist.load("train", tmp_path / "empty", download=False)


@pytest.mark.parametrize("download", [True, False])
def test_missing_data_dir_is_reported_and_never_created(tmp_path, download):
    """A mistyped data_dir raises FileNotFoundError naming it, even when a download would succeed."""
    mirror = tmp_path / "mirror"
    write_split(mirror, "train", n=2)
    typo = tmp_path / "typo" / "path"
    before = sorted(os.listdir(tmp_path))
    for call in (lambda: mnist.load("train", typo, download=download, mirrors=[mirror.as_uri()], verify=False),
                 lambda: mnist.load_all(str(typo), download=download, mirrors=[mirror.as_uri()], verify=False)):
        with pytest.raises(FileNotFoundError, match="MNIST data directory does not exist") as info:
            call()
        assert info.value.filename == str(typo) and str(typo) in str(info.value)
        assert isinstance(info.value, mnist.DatasetNotFoundError)
    assert sorted(os.listdir(tmp_path)) == before   # nothing created
    assert not (tmp_path / "xdg").exists()          # and nothing downloaded to the cache instead


def test_data_dir_that_is_a_file_is_reported(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(NotADirectoryError, match="not a directory") as info:
        mnist.load("test", tmp_path / "file")
    assert info.value.filename == str(tmp_path / "file")


# --- download (file:// mirrors only) ------------------------------------------------------


def test_download_into_cache_from_second_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    images, labels = write_split(mirror, "test", n=3)
    table = table_for(mirror)
    mirrors = [(tmp_path / "missing-mirror").as_uri(), mirror.as_uri()]
    got_images, got_labels = mnist.load("test", mirrors=mirrors, checksums=table)
    np.testing.assert_array_equal(got_images, images)
    np.testing.assert_array_equal(got_labels, labels)
    cache = tmp_path / "xdg" / "fluxion" / "mnist"
    assert sorted(os.listdir(cache)) == sorted(mnist.FILES["test"])  # no temp files left
    assert table_for(cache) == table


def test_download_with_bad_checksum_leaves_nothing(tmp_path):
    mirror = tmp_path / "mirror"
    write_split(mirror, "train", n=2)
    table = {name: "f" * 64 for name in mnist.FILES["train"]}
    (tmp_path / "dest").mkdir()
    with pytest.raises(mnist.DatasetNotFoundError) as info:
        mnist.load("train", tmp_path / "dest", mirrors=[mirror.as_uri()], checksums=table)
    message = str(info.value)
    assert "Downloading failed" in message and "ChecksumMismatchError" in message and mirror.as_uri() in message
    assert os.listdir(tmp_path / "dest") == []


def test_offline_download_failure_is_reported(tmp_path):
    with pytest.raises(mnist.DatasetNotFoundError, match="(?s)Looked in:.*Downloading failed.*no mirrors given"):
        mnist.load("test")


# --- the real data carried in the repository -----------------------------------------------


def test_repo_copy_matches_published_digests():
    for name, digest in mnist.SHA256.items():
        assert sha(REPO_MNIST / name) == digest, name


def test_real_mnist_from_repo_copy(monkeypatch):
    monkeypatch.undo()  # the real resolution, so that the repo copy is found by default
    monkeypatch.delenv("FLUXION_DATA_DIR", raising=False)
    monkeypatch.setattr(mnist, "MIRRORS", ())
    assert mnist.find_data_dir("train") == REPO_MNIST
    (x_train, y_train), (x_test, y_test) = mnist.load_all(download=False)
    assert x_train.shape == (60000, 28, 28) and x_train.dtype == np.uint8
    assert y_train.shape == (60000,) and y_train.dtype == np.uint8
    assert x_test.shape == (10000, 28, 28) and x_test.dtype == np.uint8
    assert y_test.shape == (10000,) and y_test.dtype == np.uint8
    # Reference statistics from /work/shared/datasets/README.md.
    np.testing.assert_array_equal(
        np.bincount(y_train), [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    )
    np.testing.assert_array_equal(np.bincount(y_test), [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])
    assert round(float(x_train.mean()), 3) == 33.318
    assert round(float(x_test.mean()), 3) == 33.791
    assert round(float(x_train.std()), 2) == 78.57
    assert x_train.min() == 0 and x_train.max() == 255
