"""A background-thread prefetching iterator, mirroring ``flax.training.prefetch_iterator``."""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterable

_END = object()


class PrefetchIterator:
    """Iterates `data_iter` on a background thread, keeping up to `buffer_size` items ready.

    Items come out in order; an exception raised by `data_iter` is re-raised by the `next` call that reaches it.
    `close()` stops the thread (also when the consumer stops early).
    """

    def __init__(self, data_iter: Iterable, buffer_size: int = 1):
        if buffer_size < 1:
            raise ValueError(f"PrefetchIterator: buffer_size must be at least 1, got {buffer_size}")
        self._queue: queue.Queue = queue.Queue(maxsize=buffer_size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, args=(iter(data_iter),), daemon=True)
        self._thread.start()

    def __iter__(self) -> "PrefetchIterator":
        return self

    def __next__(self) -> Any:
        kind, item = self._queue.get()
        if kind is _END:
            self._queue.put((kind, item))  # keep answering StopIteration (or the error) on later calls
            if item is not None:
                raise item
            raise StopIteration
        return item

    def close(self) -> None:
        """Stops the prefetching thread."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get_nowait()  # unblock a producer waiting for room
            except queue.Empty:
                pass
            self._thread.join(timeout=0.01)

    def _fill(self, it) -> None:
        try:
            for item in it:
                if self._stop.is_set():
                    return
                self._queue.put(("item", item))
        except Exception as e:  # noqa: BLE001 -- handed to the consumer
            self._queue.put((_END, e))
            return
        self._queue.put((_END, None))
