"""Tests for fluxion.flax.training.checkpoints.

Oracles: real Flax's legacy (non-Orbax) checkpointing for file naming, `keep`/`overwrite`
behaviour and file content; hand-written expectations for crash safety and integrity.
"""

import contextlib
import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Callable, NamedTuple

import ml_dtypes
import numpy as np
import pytest

from fluxion.flax import serialization, struct
from fluxion.flax.training import checkpoints


class AdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class TrainState(struct.PyTreeNode):
    step: int
    params: Any
    opt_state: Any
    apply_fn: Callable = struct.field(pytree_node=False, default=None)


def params(scale=1.0):
    return {
        "Dense_0": {"kernel": np.full((3, 4), scale, np.float32), "bias": np.zeros(4, np.float32)},
        "Output": {"kernel": np.arange(8, dtype=np.float32).reshape(4, 2) * scale, "bias": np.ones(2, np.float32)},
    }


def train_state(step=0, scale=1.0):
    p = params(scale)
    zeros = {k: {n: np.zeros_like(a) for n, a in v.items()} for k, v in p.items()}
    return TrainState(step=np.int32(step), params=p, opt_state=(AdamState(np.int32(step), zeros, zeros), ()), apply_fn=len)


def assert_tree_equal(a, b):
    sa, sb = serialization.to_state_dict(a), serialization.to_state_dict(b)
    leaves_a, leaves_b = _leaves(sa), _leaves(sb)
    assert [p for p, _ in leaves_a] == [p for p, _ in leaves_b]
    for (path, x), (_, y) in zip(leaves_a, leaves_b):
        assert np.asarray(x).dtype == np.asarray(y).dtype, path
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=path)


def _leaves(tree, path=""):
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k], f"{path}/{k}")]
    return [(path, tree)]


@contextlib.contextmanager
def flax_legacy_checkpoints():
    """Real Flax's own msgpack checkpoints (not Orbax), with its deprecation warning muted."""
    flax = pytest.importorskip("flax")
    from flax.training import checkpoints as flax_checkpoints

    previous = flax.config.flax_use_orbax_checkpointing
    flax.config.update("flax_use_orbax_checkpointing", False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield flax_checkpoints
    finally:
        flax.config.update("flax_use_orbax_checkpointing", previous)


def files(directory):
    return sorted(os.listdir(directory))


# --- roundtrips ---------------------------------------------------------------------------


def test_roundtrip_nested_dict(tmp_path):
    target = {
        "params": params(),
        "bf16": np.array([1.5, -2.0], ml_dtypes.bfloat16),
        "ints": [np.int64(3), np.arange(3, dtype=np.uint8)],
        "meta": {"note": "text", "lr": 0.1, "none": None},
    }
    path = checkpoints.save_checkpoint(tmp_path, target, step=7)
    assert path == os.path.join(str(tmp_path), "checkpoint_7")
    assert files(tmp_path) == ["checkpoint_7"]
    template = {
        "params": params(scale=0.0),
        "bf16": np.zeros(2, ml_dtypes.bfloat16),
        "ints": [np.int64(0), np.zeros(3, np.uint8)],
        "meta": {"note": "", "lr": 0.0, "none": None},
    }
    restored = checkpoints.restore_checkpoint(tmp_path, template)
    assert_tree_equal(restored, target)
    assert isinstance(restored["ints"], list)
    raw = checkpoints.restore_checkpoint(tmp_path, None)
    assert set(raw["ints"]) == {"0", "1"}  # raw state dict: lists become {'0': ...}
    assert_tree_equal(raw, serialization.to_state_dict(target))


def test_roundtrip_struct_dataclass(tmp_path):
    saved = train_state(step=42, scale=2.5)
    checkpoints.save_checkpoint(tmp_path, saved, step=42)
    restored = checkpoints.restore_checkpoint(tmp_path, train_state(step=0, scale=0.0))
    assert type(restored) is TrainState and restored.apply_fn is len  # static field from target
    assert type(restored.opt_state[0]) is AdamState
    assert int(restored.step) == 42
    assert_tree_equal(restored, saved)


def test_restore_specific_step_and_file_path(tmp_path):
    for step in (1, 2, 3):
        checkpoints.save_checkpoint(tmp_path, {"x": np.array(step)}, step, keep=3)
    assert int(checkpoints.restore_checkpoint(tmp_path, None, step=2)["x"]) == 2
    assert int(checkpoints.restore_checkpoint(tmp_path / "checkpoint_1", None)["x"]) == 1
    assert int(checkpoints.restore_checkpoint(tmp_path, None)["x"]) == 3
    with pytest.raises(ValueError, match=r"Matching checkpoint not found: .*checkpoint_9 \(available steps: \[1.0, 2.0, 3.0\]\)"):
        checkpoints.restore_checkpoint(tmp_path, None, step=9)


def test_no_checkpoint_returns_target_unchanged(tmp_path):
    target = {"a": np.ones(2)}
    assert checkpoints.restore_checkpoint(tmp_path / "absent", target) is target
    (tmp_path / "empty").mkdir()
    assert checkpoints.restore_checkpoint(tmp_path / "empty", target) is target
    assert checkpoints.restore_checkpoint(tmp_path / "empty", None) is None


def test_latest_checkpoint_orders_steps_numerically(tmp_path):
    for step in (2, 9, 10):
        checkpoints.save_checkpoint(tmp_path, {"s": step}, step, keep=5)
    (tmp_path / "checkpoint_notes.txt").write_text("not a checkpoint")
    assert checkpoints.latest_checkpoint(tmp_path) == os.path.join(str(tmp_path), "checkpoint_10")
    assert checkpoints.available_steps(tmp_path) == [2, 9, 10]
    assert checkpoints.latest_checkpoint(tmp_path, prefix="other_") is None
    assert checkpoints.latest_checkpoint(tmp_path / "absent") is None


def test_prefix_and_float_steps(tmp_path):
    checkpoints.save_checkpoint(tmp_path, {"v": 1}, 0.5, prefix="best_", keep=2)
    checkpoints.save_checkpoint(tmp_path, {"v": 2}, 1.25, prefix="best_", keep=2)
    assert files(tmp_path) == ["best_0.5", "best_1.25"]
    assert checkpoints.restore_checkpoint(tmp_path, None, prefix="best_") == {"v": 2}


# --- keep / overwrite, against Flax -------------------------------------------------------


def run_sequence(module, directory):
    """Applies one sequence of saves with `module`; returns the listing after each."""
    listings = []
    ops = [
        dict(step=0, keep=2, keep_every_n_steps=3),
        dict(step=1, keep=2, keep_every_n_steps=3),
        dict(step=2, keep=2, keep_every_n_steps=3),
        dict(step=3, keep=2, keep_every_n_steps=3),
        dict(step=5, keep=2, keep_every_n_steps=3),
        dict(step=10, keep=2, keep_every_n_steps=3),
        dict(step=4, keep=2, overwrite=True),
        dict(step=4, keep=3, overwrite=True),
        dict(step=20, keep=1),
    ]
    for op in ops:
        module.save_checkpoint(str(directory), {"step": np.array(op["step"])}, **{k: v for k, v in op.items()})
        listings.append(files(directory))
    return listings


def test_keep_and_overwrite_match_flax(tmp_path):
    with flax_legacy_checkpoints() as flax_checkpoints:
        want = run_sequence(flax_checkpoints, tmp_path / "flax")
    got = run_sequence(checkpoints, tmp_path / "ours")
    assert got == want
    assert got[-1] == ["checkpoint_20"]


def test_keep_by_hand(tmp_path):
    for step in range(5):
        checkpoints.save_checkpoint(tmp_path, {"s": step}, step, keep=3)
    assert files(tmp_path) == ["checkpoint_2", "checkpoint_3", "checkpoint_4"]
    with pytest.raises(ValueError, match="keep must be >= 1, got 0"):
        checkpoints.save_checkpoint(tmp_path, {"s": 9}, 9, keep=0)


def test_outdated_step_raises(tmp_path):
    checkpoints.save_checkpoint(tmp_path, {"s": 5}, 5)
    with pytest.raises(checkpoints.InvalidCheckpointError, match="already exists at .*checkpoint_5"):
        checkpoints.save_checkpoint(tmp_path, {"s": 5}, 5)
    with pytest.raises(checkpoints.InvalidCheckpointError, match="outdated checkpoint at step 3"):
        checkpoints.save_checkpoint(tmp_path, {"s": 3}, 3)
    assert files(tmp_path) == ["checkpoint_5"]
    checkpoints.save_checkpoint(tmp_path, {"s": 55}, 5, overwrite=True)
    assert checkpoints.restore_checkpoint(tmp_path, None) == {"s": 55}


def test_flax_errors_on_outdated_step_too(tmp_path):
    with flax_legacy_checkpoints() as flax_checkpoints:
        flax_checkpoints.save_checkpoint(str(tmp_path), {"s": 5}, 5)
        with pytest.raises(Exception, match="outdated checkpoint"):
            flax_checkpoints.save_checkpoint(str(tmp_path), {"s": 3}, 3)


# --- interoperability with Flax files -----------------------------------------------------


def test_reads_flax_legacy_checkpoint_and_flax_reads_our_payload(tmp_path):
    flax_ser = pytest.importorskip("flax.serialization")
    target = {"params": params(3.0), "count": np.int32(4)}
    with flax_legacy_checkpoints() as flax_checkpoints:
        flax_path = flax_checkpoints.save_checkpoint(str(tmp_path / "flax"), target, 4)
    assert_tree_equal(checkpoints.restore_checkpoint(flax_path, {"params": params(0.0), "count": np.int32(0)}), target)

    our_path = checkpoints.save_checkpoint(tmp_path / "ours", target, 4)
    with open(our_path, "rb") as f:
        data = f.read()
    assert data.startswith(checkpoints.MAGIC)
    with open(flax_path, "rb") as f:
        assert data[52:] == f.read()  # same payload as Flax, behind our 52-byte header
    assert_tree_equal(flax_ser.msgpack_restore(data[52:]), serialization.to_state_dict(target))


# --- crash safety -------------------------------------------------------------------------


def test_failed_rename_keeps_previous_checkpoint(tmp_path, monkeypatch):
    checkpoints.save_checkpoint(tmp_path, {"w": np.ones(3)}, 1)

    def crash(src, dst):
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(checkpoints.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        checkpoints.save_checkpoint(tmp_path, {"w": np.full(3, 2.0)}, 2)
    monkeypatch.undo()
    assert files(tmp_path) == ["checkpoint_1"]  # no temp file, old checkpoint untouched
    np.testing.assert_array_equal(checkpoints.restore_checkpoint(tmp_path, None)["w"], np.ones(3))


def test_failed_serialization_touches_nothing(tmp_path):
    checkpoints.save_checkpoint(tmp_path, {"w": np.ones(3)}, 1)
    with pytest.raises(TypeError, match="cannot serialize 'object' object"):
        checkpoints.save_checkpoint(tmp_path, {"w": object()}, 2)
    assert files(tmp_path) == ["checkpoint_1"]


def test_killed_process_mid_save_leaves_previous_checkpoint(tmp_path):
    # The child writes checkpoint 1, then dies (os._exit, no cleanup) between writing the
    # temporary file of checkpoint 2 and renaming it, like a process killed at that moment.
    script = textwrap.dedent(
        f"""
        import os
        import numpy as np
        from fluxion.flax.training import checkpoints
        d = {str(tmp_path)!r}
        checkpoints.save_checkpoint(d, {{"w": np.ones(1000)}}, 1)
        checkpoints.os.replace = lambda src, dst: os._exit(17)
        checkpoints.save_checkpoint(d, {{"w": np.zeros(1000)}}, 2)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], env=os.environ.copy(), capture_output=True, timeout=120)
    assert proc.returncode == 17, proc.stderr.decode()
    leftovers = files(tmp_path)
    assert "checkpoint_1" in leftovers and "checkpoint_2" not in leftovers
    assert any(name.endswith(".tmp") for name in leftovers)  # the orphaned temp file
    assert checkpoints.latest_checkpoint(tmp_path) == os.path.join(str(tmp_path), "checkpoint_1")
    np.testing.assert_array_equal(checkpoints.restore_checkpoint(tmp_path, None)["w"], np.ones(1000))
    # The next save cleans up the orphan.
    checkpoints.save_checkpoint(tmp_path, {"w": np.zeros(1000)}, 2)
    assert files(tmp_path) == ["checkpoint_2"]


# --- several writers in one directory ----------------------------------------------------


def _concurrent_save_worker(ckpt_dir, step, first_temp_created, all_temps_created):
    """Saves ``step``, holding its temporary file open until every writer has created its own.

    The writer of step 1 creates its temporary file first; the others start their save (and
    its clean-up of crashed saves' temporary files) only then, so each of them sees a live
    writer's temporary file.
    """
    import tempfile

    import numpy as np

    from fluxion.flax.training import checkpoints

    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, path = real_mkstemp(*args, **kwargs)
        if step == 1:
            first_temp_created.set()
        all_temps_created.wait(timeout=120)
        return fd, path

    checkpoints.tempfile.mkstemp = mkstemp
    if step != 1:
        assert first_temp_created.wait(timeout=120)
    checkpoints.save_checkpoint(ckpt_dir, {"step": np.full(1000, step, np.int32)}, step, keep=100)


def test_concurrent_saves_from_several_processes_keep_every_step(tmp_path):
    import multiprocessing

    n = 4
    context = multiprocessing.get_context("spawn")
    first_temp_created = context.Event()
    all_temps_created = context.Barrier(n)
    workers = [context.Process(target=_concurrent_save_worker,
                               args=(str(tmp_path), step, first_temp_created, all_temps_created))
               for step in range(1, n + 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert [w.exitcode for w in workers] == [0] * n
    assert files(tmp_path) == [f"checkpoint_{step}" for step in range(1, n + 1)]  # and no temp file
    for step in range(1, n + 1):
        restored = checkpoints.restore_checkpoint(tmp_path, None, step=step)
        np.testing.assert_array_equal(restored["step"], np.full(1000, step, np.int32))


def _temp_name(step, pid, host=None):
    host = checkpoints._host_tag() if host is None else host
    return f".checkpoint_{step}.{pid}@{host}.abc123_x{checkpoints._TMP_SUFFIX}"


def test_only_abandoned_temporary_files_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        old = os.path.getmtime(tmp_path) - 2 * checkpoints.STALE_TEMP_SECONDS
        temps = {
            "live_writer": _temp_name(2, alive.pid),
            "this_process": _temp_name(3, os.getpid()),
            "dead_writer": _temp_name(4, dead.pid),
            "old_live_writer": _temp_name(5, alive.pid),
            "other_host": _temp_name(6, dead.pid, host="another-host"),
            "old_other_host": _temp_name(7, dead.pid, host="another-host"),
            "no_owner": ".checkpoint_8.q1w2e3r4.tmp",        # named by an older fluxion
            "old_no_owner": ".checkpoint_9.a1s2d3f4.tmp",
        }
        for what, name in temps.items():
            (tmp_path / name).write_bytes(b"partial")
            if what.startswith("old_"):
                os.utime(tmp_path / name, (old, old))
        checkpoints.save_checkpoint(tmp_path, {"w": np.ones(2)}, 1)
        kept = {what for what, name in temps.items() if (tmp_path / name).exists()}
        assert kept == {"live_writer", "this_process", "other_host", "no_owner"}
        assert checkpoints.latest_checkpoint(tmp_path) == os.path.join(str(tmp_path), "checkpoint_1")
    finally:
        alive.kill()
        alive.wait()


def test_temporary_file_names_its_writer(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(checkpoints.os, "replace", replace)
    checkpoints.save_checkpoint(tmp_path, {"w": np.ones(2)}, 1.5)
    (name,) = seen
    assert name.startswith(f".checkpoint_1.5.{os.getpid()}@{checkpoints._host_tag()}.")
    assert name.endswith(".tmp") and checkpoints._TMP_OWNER_RE.search(name).group(1) == str(os.getpid())


def test_pruning_tolerates_a_checkpoint_another_writer_removed(tmp_path, monkeypatch):
    checkpoints.save_checkpoint(tmp_path, {"s": 1}, 1)
    real_remove = os.remove

    def remove_twice(path):
        real_remove(path)   # the other writer's prune got there first
        real_remove(path)

    monkeypatch.setattr(checkpoints.os, "remove", remove_twice)
    checkpoints.save_checkpoint(tmp_path, {"s": 2}, 2)
    assert files(tmp_path) == ["checkpoint_2"]


# --- integrity ----------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    path = checkpoints.save_checkpoint(tmp_path, {"params": params()}, 1)
    with open(path, "rb") as f:
        return path, f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def test_truncated_checkpoint_is_reported(saved):
    path, data = saved
    write(path, data[:-10])
    with pytest.raises(checkpoints.CorruptedCheckpointError, match="truncated checkpoint: the header announces") as info:
        checkpoints.restore_checkpoint(path, None)
    assert path in str(info.value)
    write(path, data[:30])
    with pytest.raises(checkpoints.CorruptedCheckpointError, match="shorter than the 52-byte header"):
        checkpoints.restore_checkpoint(path, None)


def test_flipped_byte_is_reported(saved):
    path, data = saved
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0x01  # inside an array: msgpack alone would not notice
    write(path, bytes(damaged))
    with pytest.raises(checkpoints.CorruptedCheckpointError, match="SHA-256 digest of the payload does not match") as info:
        checkpoints.restore_checkpoint(os.path.dirname(path), None)
    assert path in str(info.value)


def test_unknown_version_is_reported(saved):
    path, data = saved
    write(path, data[:8] + (99).to_bytes(4, "big") + data[12:])
    with pytest.raises(checkpoints.CorruptedCheckpointError, match="format version 99 is not supported"):
        checkpoints.restore_checkpoint(path, None)


def test_garbage_file_is_reported(tmp_path):
    write(tmp_path / "checkpoint_3", b"\xc1 garbage that is no msgpack")
    with pytest.raises(checkpoints.CorruptedCheckpointError, match=r"checkpoint_3: not a valid checkpoint"):
        checkpoints.restore_checkpoint(tmp_path, None)


def test_structure_mismatch_names_file_and_path(saved):
    path, _ = saved
    target = {"params": params()}
    target["params"]["Output"]["kernel"] = np.zeros((5, 2), np.float32)
    with pytest.raises(ValueError, match=r"checkpoint_1: the checkpoint does not fit the target: shape mismatch at path \./params/Output/kernel"):
        checkpoints.restore_checkpoint(path, target)


@pytest.mark.parametrize("depth", [300, 900, 5000])
def test_deeply_nested_payload_is_a_corrupted_checkpoint(tmp_path, depth):
    """A payload nesting maps hundreds of levels deep raises the checkpoint error, not RecursionError."""
    payload = b"\x81\xa1a" * depth + b"\x01"   # {'a': {'a': ... 1}}
    write(tmp_path / "checkpoint_1", payload)                                  # legacy (Flax) file
    write(tmp_path / "checkpoint_2", checkpoints._header(payload) + payload)   # with our header
    for step in (1, 2):
        with pytest.raises(checkpoints.CorruptedCheckpointError,
                           match=rf"checkpoint_{step}: not a valid checkpoint: .*nests containers deeper than "
                                 rf"{serialization.MAX_DEPTH} levels"):
            checkpoints.restore_checkpoint(tmp_path, None, step=step)


def test_nesting_up_to_the_limit_round_trips(tmp_path):
    tree = leaf = {"x": np.arange(3)}
    for _ in range(serialization.MAX_DEPTH - 1):
        tree = {"a": tree}
    checkpoints.save_checkpoint(tmp_path, tree, 1)
    restored = checkpoints.restore_checkpoint(tmp_path, None)
    for _ in range(serialization.MAX_DEPTH - 1):
        restored = restored["a"]
    np.testing.assert_array_equal(restored["x"], leaf["x"])
    with pytest.raises(ValueError, match="deeper than 256 levels"):
        checkpoints.save_checkpoint(tmp_path, {"a": tree}, 2)
