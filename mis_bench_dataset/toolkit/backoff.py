"""The one backoff rule of every retry (model requests, `mis-bench fetch`): how long to wait before asking again.

The wait grows as `base_s * 2**attempt`, capped at `max_s`, so a server that is down is not hammered and a
long outage costs at most `max_s` a try. With a random generator the wait is drawn uniformly between 0 and that
ceiling ("full jitter", AWS Architecture Blog 2015), so many requests that failed together do not come back
together. A server's `Retry-After` (capped at `max_s`) is the least wait.
"""

from __future__ import annotations

import random

_MAX_DOUBLINGS = 64  # 2**64 x any positive base is past every cap; keeps the power finite for any attempt


def backoff_delay(
    attempt: int,
    *,
    base_s: float,
    max_s: float,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry number `attempt` + 1 (`attempt` counts from 0): min(max_s, base_s * 2**attempt),
    drawn uniformly below that with `rng`, never below min(retry_after, max_s)."""
    ceiling = min(max_s, base_s * 2.0 ** min(max(attempt, 0), _MAX_DOUBLINGS))
    wait = rng.uniform(0.0, ceiling) if rng is not None else ceiling
    if retry_after is not None:
        wait = max(wait, min(retry_after, max_s))
    return wait
