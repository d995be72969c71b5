"""Saving and restoring training checkpoints, mirroring ``flax.training.checkpoints``.

A checkpoint is one file ``<ckpt_dir>/<prefix><step>`` (e.g. ``checkpoint_1000``) holding
the msgpack-encoded state dict of the target (see :mod:`fluxion.flax.serialization`),
behind a small integrity header:

====== ======= ===================================================================
offset bytes   content
====== ======= ===================================================================
0      8       magic ``b"FLXNCKPT"``
8      4       format version, big-endian uint32 (currently 1)
12     8       payload length in bytes, big-endian uint64
20     32      SHA-256 digest of the payload
52     ...     payload: the msgpack bytes
====== ======= ===================================================================

so a truncated or damaged file is reported as such instead of decoding to garbage. Files
without the magic are read as plain Flax msgpack checkpoints (no integrity check), so
checkpoints written by Flax's legacy (non-Orbax) writer can be restored; stripping the
52-byte header gives a file Flax can read.

Crash safety: the bytes go to a temporary file in the same directory, which is flushed and
fsynced and then renamed over the final name with ``os.replace`` (atomic on POSIX and
Windows); older checkpoints are deleted only after that. A crash at any point therefore
leaves the previous checkpoints intact, and the final name never holds a partial file.

Several writers may share a directory (processes or threads saving different steps): a
temporary file's name carries its writer's host and process id
(``.<prefix><step>.<pid>@<host>.<random>.tmp``), and a save deletes only the temporary files
left behind by a crash -- those whose writer process on this host is gone, and any older
than :data:`STALE_TEMP_SECONDS` -- never one that another live writer is still filling.

Only names of the form ``<prefix><number>`` count as checkpoints; they are ordered by the
number, so ``checkpoint_10`` is newer than ``checkpoint_9``.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import struct
import sys
import tempfile
import time
from typing import Any

from fluxion.flax import serialization

__all__ = [
    "CorruptedCheckpointError",
    "InvalidCheckpointError",
    "available_steps",
    "latest_checkpoint",
    "restore_checkpoint",
    "save_checkpoint",
]

MAGIC = b"FLXNCKPT"
FORMAT_VERSION = 1
_HEADER = struct.Struct(">8sIQ32s")  # magic, version, payload length, sha256
_TMP_SUFFIX = ".tmp"
# A temporary file older than this is abandoned whoever wrote it (a writer on another host,
# or one whose process id was reused): no save takes an hour between creating and renaming.
STALE_TEMP_SECONDS = 3600.0
# "<pid>@<host>.<random>.tmp" at the end of a temporary file's name.
_TMP_OWNER_RE = re.compile(r"\.(\d+)@([A-Za-z0-9-]*)\.[^.]*" + re.escape(_TMP_SUFFIX) + "$")

# A step as it appears in a file name: an int or float, optionally signed or in
# exponent notation ("10", "-1.5", "1e5").
_STEP_RE = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


class InvalidCheckpointError(ValueError):
    """Saving at a step not newer than the latest checkpoint, without ``overwrite=True``.

    Checkpoints are meant to move forward in time: saving step 5 after step 10 usually
    means two runs share a directory. Pass ``overwrite=True`` to replace it (newer
    checkpoints are then deleted), or use another directory or ``prefix``.
    """


class CorruptedCheckpointError(ValueError):
    """A checkpoint file is truncated, damaged, or not a checkpoint at all.

    The message names the file and what failed (header, length or SHA-256 digest). Restore
    an earlier step with ``step=...``, or delete the damaged file.
    """


def _checkpoint_path(ckpt_dir: str, step: int | float, prefix: str) -> str:
    return os.path.join(ckpt_dir, f"{prefix}{step}")


def _all_checkpoints(ckpt_dir: str, prefix: str) -> list[tuple[float, str]]:
    """Returns ``(step, path)`` of every checkpoint in ``ckpt_dir``, oldest first."""
    try:
        names = os.listdir(ckpt_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        if name.startswith(prefix) and _STEP_RE.fullmatch(name[len(prefix):]):
            found.append((float(name[len(prefix):]), os.path.join(ckpt_dir, name)))
    found.sort()
    return found


def latest_checkpoint(ckpt_dir: str | os.PathLike, prefix: str = "checkpoint_") -> str | None:
    """Returns the path of the checkpoint with the highest step, or None if there is none."""
    found = _all_checkpoints(os.fspath(ckpt_dir), prefix)
    return found[-1][1] if found else None


def available_steps(
    ckpt_dir: str | os.PathLike, prefix: str = "checkpoint_", step_type: type = int
) -> list[int | float]:
    """Returns the steps of the checkpoints in ``ckpt_dir``, ascending, as ``step_type``."""
    ckpt_dir = os.fspath(ckpt_dir)
    return [step_type(os.path.basename(p)[len(prefix):]) for _, p in _all_checkpoints(ckpt_dir, prefix)]


def _header(payload: bytes) -> bytes:
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload), hashlib.sha256(payload).digest())


def _decode(data: bytes, path: str) -> memoryview:
    """Checks the header of a checkpoint file and returns its msgpack payload."""
    if not data.startswith(MAGIC):
        # A legacy Flax checkpoint is raw msgpack; the caller decodes (and checks) it.
        return memoryview(data)
    if len(data) < _HEADER.size:
        raise CorruptedCheckpointError(
            f"{path}: truncated checkpoint: {len(data)} bytes, shorter than the {_HEADER.size}-byte header"
        )
    _, version, length, digest = _HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        raise CorruptedCheckpointError(
            f"{path}: checkpoint format version {version} is not supported (this reader knows "
            f"version {FORMAT_VERSION})"
        )
    payload = memoryview(data)[_HEADER.size:]  # a view: checkpoints can be large
    if len(payload) != length:
        what = "truncated checkpoint" if len(payload) < length else "checkpoint has trailing bytes"
        raise CorruptedCheckpointError(
            f"{path}: {what}: the header announces {length} payload bytes, the file holds {len(payload)}"
        )
    if hashlib.sha256(payload).digest() != digest:
        raise CorruptedCheckpointError(
            f"{path}: corrupted checkpoint: the SHA-256 digest of the payload does not match the header"
        )
    return payload


def _fsync_dir(path: str) -> None:
    # Makes the rename itself durable; not possible (nor needed) on every platform.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _host_tag() -> str:
    # The host name, reduced to characters that cannot be confused with the name's separators.
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())


def _write_atomically(path: str, *parts: bytes) -> None:
    """Writes the concatenation of ``parts`` to ``path`` via a temp file and a rename."""
    directory, name = os.path.split(path)
    # Hidden name that does not parse as "<prefix><number>", so it is never mistaken for
    # a checkpoint even if a crash leaves it behind; it names its writer (see _is_abandoned).
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.{os.getpid()}@{_host_tag()}.",
                               suffix=_TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


def _process_is_gone(pid: int) -> bool:
    """Whether no process ``pid`` exists on this host (False when that cannot be told)."""
    if sys.platform == "win32":
        return False  # os.kill(pid, 0) would terminate the process there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False  # it exists (owned by another user), or the probe is not possible
    return False


def _is_abandoned(path: str, name: str) -> bool:
    """Whether the temporary file ``path`` was left by a crashed save (see the module docstring)."""
    try:
        age = time.time() - os.stat(path).st_mtime
    except FileNotFoundError:
        return False  # renamed or removed meanwhile
    if age > STALE_TEMP_SECONDS:
        return True
    owner = _TMP_OWNER_RE.search(name)
    if owner is None:
        return False  # no owner recorded (an older fluxion's name): only its age tells
    pid, host = int(owner.group(1)), owner.group(2)
    return host == _host_tag() and pid != os.getpid() and _process_is_gone(pid)


def _remove_stale_temps(ckpt_dir: str, prefix: str) -> None:
    """Deletes temporary files left by saves that crashed before their rename.

    A temporary file that another live writer is still filling is kept.
    """
    for name in os.listdir(ckpt_dir):
        if name.startswith(f".{prefix}") and name.endswith(_TMP_SUFFIX):
            path = os.path.join(ckpt_dir, name)
            if _is_abandoned(path, name):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass


def save_checkpoint(
    ckpt_dir: str | os.PathLike,
    target: Any,
    step: int | float,
    prefix: str = "checkpoint_",
    keep: int = 1,
    overwrite: bool = False,
    keep_every_n_steps: int | None = None,
) -> str:
    """Saves ``target`` as checkpoint ``<ckpt_dir>/<prefix><step>``.

    Args:
        ckpt_dir: directory for the checkpoint files; created if missing.
        target: any object with a state dict (dicts/lists of arrays, NamedTuples, struct
            dataclasses such as a train state, ...).
        step: training step (int or float) used in the file name.
        prefix: file name prefix.
        keep: number of most recent checkpoints to keep (>= 1); older ones are deleted
            after the new one is safely in place.
        overwrite: allow saving at a step not newer than the latest existing one; the file
            at that step is replaced and all newer checkpoints are deleted.
        keep_every_n_steps: if set, also keep an old checkpoint when it is at least this
            many steps after the last old checkpoint kept.

    Returns:
        The path of the new checkpoint file.

    Raises:
        ValueError: if ``keep < 1``.
        InvalidCheckpointError: if a checkpoint at ``step`` or a later step exists and
            ``overwrite`` is False.
        TypeError: if the state dict holds a value that cannot be serialized.
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    ckpt_dir = os.path.normpath(os.fspath(ckpt_dir))
    path = _checkpoint_path(ckpt_dir, step, prefix)
    existing = _all_checkpoints(ckpt_dir, prefix)
    if not overwrite:
        if os.path.exists(path):
            raise InvalidCheckpointError(
                f"a checkpoint already exists at {path}; pass overwrite=True to replace it"
            )
        if existing and existing[-1][0] >= float(step):
            raise InvalidCheckpointError(
                f"trying to save an outdated checkpoint at step {step} ({path}): the latest is "
                f"{existing[-1][1]}; pass overwrite=True to replace it and delete newer ones"
            )

    payload = serialization.to_bytes(target)  # serialize before touching any file
    os.makedirs(ckpt_dir, exist_ok=True)
    _remove_stale_temps(ckpt_dir, prefix)
    _write_atomically(path, _header(payload), payload)
    _prune(ckpt_dir, prefix, float(step), keep, overwrite, keep_every_n_steps)
    return path


def _prune(
    ckpt_dir: str, prefix: str, step: float, keep: int, overwrite: bool, keep_every_n_steps: int | None
) -> None:
    """Deletes checkpoints newer than ``step`` (when overwriting) and beyond ``keep``."""
    found = _all_checkpoints(ckpt_dir, prefix)
    if overwrite:
        for s, p in found:
            if s > step:
                _remove_if_present(p)
        found = [(s, p) for s, p in found if s <= step]
    last_kept = -float("inf")
    for s, p in found[:-keep]:  # oldest first
        # `s != 0` mirrors Flax, which never keeps step 0 by this rule.
        if keep_every_n_steps and s != 0 and s - last_kept >= keep_every_n_steps:
            last_kept = s
            continue
        _remove_if_present(p)


def _remove_if_present(path: str) -> None:
    # Another writer pruning the same directory may have deleted it first.
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def restore_checkpoint(
    ckpt_dir: str | os.PathLike,
    target: Any,
    step: int | float | None = None,
    prefix: str = "checkpoint_",
    parallel: bool = True,
) -> Any:
    """Restores the latest (or a given) checkpoint.

    Args:
        ckpt_dir: a directory of checkpoints, or the path of one checkpoint file.
        target: template with the structure of the saved object (its leaves are
            replaced), or None to get the raw state dict.
        step: the step to restore; default the latest. Requires ``ckpt_dir`` to be a
            directory.
        prefix: file name prefix.
        parallel: accepted for Flax compatibility (Flax may read large files with several
            threads); the file is read in one call here, with identical results.

    Returns:
        ``target`` rebuilt with the saved leaves (arrays as NumPy arrays), or the state dict
        if ``target`` is None. If no step is requested and ``ckpt_dir`` does not exist or
        holds no checkpoint, ``target`` is returned unchanged (as Flax does, so a fresh run
        and a resumed run share one code path).

    Raises:
        ValueError: if ``step`` is given and that checkpoint does not exist.
        CorruptedCheckpointError: if the file is truncated, damaged or not a checkpoint.
        ValueError: if the saved structure or shapes do not match ``target`` (the message
            names the file and the key path).
    """
    del parallel
    ckpt_dir = os.path.normpath(os.fspath(ckpt_dir))
    if step is not None:
        path = _checkpoint_path(ckpt_dir, step, prefix)
        if not os.path.isfile(path):
            steps = available_steps(ckpt_dir, prefix, float)
            raise ValueError(f"Matching checkpoint not found: {path} (available steps: {steps})")
    elif os.path.isdir(ckpt_dir):
        path = latest_checkpoint(ckpt_dir, prefix)
        if path is None:
            return target
    elif os.path.isfile(ckpt_dir):
        path = ckpt_dir
    else:
        return target

    with open(path, "rb") as f:
        data = f.read()
    payload = _decode(data, path)
    try:
        state = serialization.msgpack_restore(payload)
    except ValueError as e:
        raise CorruptedCheckpointError(f"{path}: not a valid checkpoint: {e}") from e
    if target is None:
        return state
    try:
        return serialization.from_state_dict(target, state)
    except ValueError as e:
        raise ValueError(f"{path}: the checkpoint does not fit the target: {e}") from e
