"""Total deadlines for blocking HTTP requests: one watchdog thread ends a request past its deadline.

A socket timeout bounds each read, not a request: a server that trickles its answer one byte
every 0.25 s never lets a read time out. So every attempt is armed with its deadline (connect,
headers and body together), and a single daemon thread shuts the attempt's socket down when the
deadline passes; the blocked read then returns at once and the attempt is reported as timed out.
One thread serves every backend in the process; arming and disarming are O(log n).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable


class Deadlines:
    """`token = arm(deadline, on_expiry)` ... `expired = disarm(token)`; `on_expiry` runs at most once."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, Callable[[], None]] = {}
        self._expired: set[int] = set()
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, on_expiry: Callable[[], None]) -> int:
        with self._cond:
            token = next(self._tokens)
            self._armed[token] = on_expiry
            heapq.heappush(self._heap, (deadline, token))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="mis-bench-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()
        return token

    def disarm(self, token: int) -> bool:
        """Stop watching `token`; True when its deadline had passed (its `on_expiry` ran)."""
        with self._cond:
            self._armed.pop(token, None)
            if token in self._expired:
                self._expired.discard(token)
                return True
            return False

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, token = self._heap[0]
                wait = deadline - self._clock()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                action = self._armed.pop(token, None)
                if action is None:  # finished in time (disarmed)
                    continue
                self._expired.add(token)
            with contextlib.suppress(Exception):
                action()


DEADLINES = Deadlines()


def shut_down(sock: socket.socket | None) -> Callable[[], None]:
    """The expiry action for a socket: shut it down, which wakes any thread blocked on it."""

    def expire() -> None:
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    return expire
