"""Several servers of one model (`--base-url` given more than once): which replica the next attempt goes to.

A `ReplicaPool` routes and keeps each replica's health; it sends nothing (the openai backend does).

- **Least outstanding requests.** An attempt goes to the ready replica with the fewest attempts in flight
  (ties: the one sent fewest), at most `capacity` (`--concurrency`, per replica) at once; a retry prefers a
  replica other than the one that just failed it.
- **Cool-down.** `failures_to_cool` failures in a row (a refused or dropped connection, a timeout, HTTP 429
  or 5xx, a malformed body) take a replica out for `cooldown_s`, doubling on each new trip up to
  `max_cooldown_s`; the others carry on. When the time is up one attempt probes it (half-open): an answer
  puts it back, a failure takes it out again. While every replica a request may still use is cooling
  down, the request waits for the first to come back (or the run's stop or deadline).
- **Retry budget per replica.** A request is tried at most `max_retries + 1` times on each replica (the
  caller passes which replicas a request may still use), so a run completes while at least one answers.

With one replica nothing cools down: its requests retry with backoff exactly as a single server's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# What the backend reports of an attempt (`ReplicaPool.release`).
ANSWERED = "answered"
FAILED = "failed"  # counts towards a cool-down
NEUTRAL = "neutral"  # says nothing about the replica (a refused request, the run's deadline)
# How long a waiting request sleeps between looks at the pool when no release wakes it.
_POLL_S = 0.05


@dataclass
class ReplicaHealth:
    """One replica's counters and state, as `ReplicaPool.summary` reports them."""

    outstanding: int = 0  # attempts assigned and not yet released
    sent: int = 0  # attempts assigned in all
    answered: int = 0
    failed: int = 0
    failures_in_a_row: int = 0
    cooling_until: float | None = None  # monotonic time its cool-down ends; None: in service
    cool_downs: int = 0  # times taken out
    probing: bool = False  # half-open: the one attempt after a cool-down is in flight


class ReplicaPool:
    """Routing and health of `size` replicas (see the module doc); thread-safe."""

    def __init__(
        self,
        size: int,
        *,
        capacity: int,
        failures_to_cool: int = 3,
        cooldown_s: float = 5.0,
        max_cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size, self.capacity = size, max(1, capacity)
        self.failures_to_cool, self.cooldown_s, self.max_cooldown_s = failures_to_cool, cooldown_s, max_cooldown_s
        self._clock = clock
        self._cond = threading.Condition()
        self.health = [ReplicaHealth() for _ in range(size)]

    def _ready(self, index: int, now: float) -> bool:
        health = self.health[index]
        return health.cooling_until is None or (health.cooling_until <= now and not health.probing)

    def _pick(self, usable: Callable[[int], bool], avoid: int | None) -> int | float | None:
        """The replica to use now (int), how long until one may be (float), or None: no replica is usable."""
        now = self._clock()
        candidates = [i for i in range(self.size) if usable(i)]
        if not candidates:
            return None
        ready = [i for i in candidates if self._ready(i, now)]
        free = [i for i in ready if self.health[i].outstanding < self.capacity]
        if free:
            preferred = [i for i in free if i != avoid] or free
            return min(preferred, key=lambda i: (self.health[i].outstanding, self.health[i].sent, i))
        if ready:
            return _POLL_S  # every ready replica is full: wait for a release
        ends = [self.health[i].cooling_until for i in candidates if not self.health[i].probing]
        return max(0.0, min(ends) - now) if ends else _POLL_S  # all cooling (or probing): wait for the first back

    def acquire(
        self,
        usable: Callable[[int], bool],
        *,
        avoid: int | None = None,
        stop: threading.Event | None = None,
        deadline: float | None = None,
    ) -> int | None:
        """The replica an attempt goes to (counted as outstanding until `release`), waiting while none is
        ready; None when no replica is `usable` any more, or `stop` is set, or `deadline` passes."""
        with self._cond:
            while True:
                picked = self._pick(usable, avoid)
                if picked is None or (stop is not None and stop.is_set()):
                    return None
                if isinstance(picked, int):
                    health = self.health[picked]
                    if health.cooling_until is not None:
                        health.probing = True  # half-open: this attempt decides
                    health.outstanding += 1
                    health.sent += 1
                    return picked
                if deadline is not None and self._clock() >= deadline:
                    return None
                self._cond.wait(min(max(picked, 0.001), _POLL_S * 4))

    def release(self, index: int, outcome: str) -> None:
        """An attempt on `index` is over: `ANSWERED`, `FAILED` (towards a cool-down) or `NEUTRAL`."""
        with self._cond:
            health = self.health[index]
            health.outstanding -= 1
            probing, health.probing = health.probing, False
            if outcome == ANSWERED:
                health.answered += 1
                health.failures_in_a_row = 0
                if health.cooling_until is not None and health.cooling_until <= self._clock():
                    health.cooling_until = None  # back in service
            elif outcome == FAILED:
                health.failed += 1
                health.failures_in_a_row += 1
                if probing or health.failures_in_a_row >= self.failures_to_cool:
                    self._cool(health)
            self._cond.notify_all()

    def probing(self, index: int) -> bool:
        """True while the attempt on `index` in flight is its cool-down probe (asked by the thread that holds it)."""
        with self._cond:
            return self.health[index].probing

    def take_out(self, index: int) -> None:
        """Cool `index` down now (its first attempts all failed to connect: `CircuitBreaker`)."""
        with self._cond:
            self._cool(self.health[index])
            self._cond.notify_all()

    def _cool(self, health: ReplicaHealth) -> None:
        if self.size < 2:  # a single server is never taken out: its requests back off and retry
            return
        if health.cooling_until is not None and health.cooling_until > self._clock():
            return  # already out
        health.cool_downs += 1
        seconds = min(self.max_cooldown_s, self.cooldown_s * 2 ** (health.cool_downs - 1))
        health.cooling_until = self._clock() + seconds
        health.failures_in_a_row = 0

    def wake(self) -> None:
        """Wake every waiting request (the run is stopping)."""
        with self._cond:
            self._cond.notify_all()

    def summary(self) -> list[dict]:
        """Per replica: its capacity (requests in flight at once), attempts sent, answered, failed, and how often it
        was taken out."""
        with self._cond:
            return [
                {
                    "concurrency": self.capacity,
                    "sent": h.sent,
                    "answered": h.answered,
                    "failed": h.failed,
                    "cool_downs": h.cool_downs,
                }
                for h in self.health
            ]
