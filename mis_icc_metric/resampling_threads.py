"""The resampling work of one command shared out over the machine's cores.

The bootstrap's statistics are independent numpy computations (one block's ranks, the design effect's second
bootstrap) whose loops run in C with the GIL released, so threads of one process run them side by side: on 2
cores `score --bootstrap 10000` answers in about the time of its longest part, not the sum. The numbers are
the same to the bit whatever the threads: each piece is computed whole by one thread and written to its own
place.

One rule keeps this free of deadlocks: a task run on these threads never waits for another task of them (the
calling thread waits; `share_out` lets the caller do the work itself whenever the threads are busy).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Generic, TypeVar

__all__ = ["Background", "extra_threads", "in_background", "share_out"]

T = TypeVar("T")
Item = TypeVar("Item")

# Threads beside the caller's at most: the statistics are memory-bound, a third core adds little (and a
# test suite already runs one process per core).
_MAX_EXTRA_THREADS = 3


def extra_threads() -> int:
    """How many threads work beside the calling one: the cores this process may use, minus one (none on one
    core), at most `_MAX_EXTRA_THREADS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(0, min(cores - 1, _MAX_EXTRA_THREADS))


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(1, extra_threads()), thread_name_prefix="mis-bench-resampling")


# A forked child (a warm process serving commands) has none of its parent's threads: a pool inherited from the
# parent would queue work that never runs. The child makes its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.cache_clear)


class Background(Generic[T]):
    """A task handed to a resampling thread (`in_background`): `result()` returns its value or raises its error.

    A task no thread has taken by the time its result is asked for (they were busy with earlier ones) runs on
    the asking thread at once, rather than waiting behind them; with no core to spare it always runs there."""

    def __init__(self, task: Callable[[], T]) -> None:
        self._task = task
        self._future: Future[T] | None = _pool().submit(task) if extra_threads() else None
        self._done: Future[T] | None = None

    def result(self) -> T:
        if self._future is not None and not self._future.cancel():  # taken by a thread: wait for it
            return self._future.result()
        if self._done is None:
            self._done = Future()
            try:
                self._done.set_result(self._task())
            except BaseException as error:  # kept, and raised at every ask, as a thread's would be
                self._done.set_exception(error)
        return self._done.result()


def in_background(task: Callable[[], T]) -> Background[T]:
    """`task()` started on a resampling thread, its result from `.result()` (`Background`)."""
    return Background(task)


_END = object()


def share_out(items: Iterable[Item], work: Callable[[Item], None]) -> None:
    """`work(item)` for every item, on the calling thread and every resampling thread that is free, each item
    taken by whichever thread is ready first; returns when all are done. `work` writes its result to a place of
    its own (the item says where). The first exception stops the rest and is raised here."""
    items = list(items)
    if len(items) < 2 or extra_threads() == 0:  # nothing to share: no thread is asked (a single figure's interval)
        for item in items:
            work(item)
        return
    pending = iter(items)
    lock = threading.Lock()
    failed = threading.Event()

    def take_until_done() -> None:
        while not failed.is_set():
            with lock:
                item = next(pending, _END)
            if item is _END:
                return
            try:
                work(item)
            except BaseException:
                failed.set()
                raise

    helpers = [_pool().submit(take_until_done) for _ in range(min(extra_threads(), len(items) - 1))]
    try:
        take_until_done()
    finally:
        for helper in helpers:
            # A helper still queued (the threads busy elsewhere) is not waited for: the caller took its items.
            if not helper.cancel():
                helper.exception()  # waits
    for helper in helpers:
        if not helper.cancelled() and helper.exception() is not None:
            raise helper.exception()
