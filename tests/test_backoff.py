"""The one backoff rule (`toolkit.backoff.backoff_delay`), used by model requests (`RetryPolicy.delay`) and by
`mis-bench fetch`: checked against the formula written out by hand, and both callers against it."""

from __future__ import annotations

import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval_scripts.backends.openai_backend import RetryPolicy
from mis_bench_dataset.release import fetch
from mis_bench_dataset.toolkit.backoff import backoff_delay

from _harness_helpers import SHUTDOWN_POLL_S

bases = st.floats(min_value=1e-3, max_value=10.0)
caps = st.floats(min_value=1e-3, max_value=120.0)


@given(attempt=st.integers(min_value=0, max_value=10_000), base=bases, cap=caps)
def test_without_jitter_the_wait_doubles_up_to_the_cap(attempt, base, cap):
    expected = cap if attempt >= 64 else min(cap, base * 2**attempt)  # the textbook form, Python's big ints
    assert backoff_delay(attempt, base_s=base, max_s=cap) == pytest.approx(expected, rel=1e-12)


@given(attempt=st.integers(min_value=0, max_value=40), base=bases, cap=caps, seed=st.integers(0, 2**32))
def test_full_jitter_draws_below_the_ceiling_and_retry_after_is_the_floor(attempt, base, cap, seed):
    ceiling = backoff_delay(attempt, base_s=base, max_s=cap)
    drawn = backoff_delay(attempt, base_s=base, max_s=cap, rng=random.Random(seed))
    assert drawn == random.Random(seed).uniform(0.0, ceiling)  # one uniform draw from the caller's generator
    assert 0.0 <= drawn <= ceiling
    floor = backoff_delay(attempt, base_s=base, max_s=cap, retry_after=cap / 2, rng=random.Random(seed))
    assert floor == max(drawn, cap / 2)
    assert backoff_delay(attempt, base_s=base, max_s=cap, retry_after=10 * cap) == cap  # a long Retry-After is capped


def test_model_requests_wait_through_it():
    policy = RetryPolicy(max_retries=5, backoff_base_s=0.5, backoff_max_s=4.0)
    for attempt in range(8):
        mine = policy.delay(attempt, 1.5, random.Random(attempt))
        assert mine == backoff_delay(attempt, base_s=0.5, max_s=4.0, retry_after=1.5, rng=random.Random(attempt))


class _Unavailable(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_error(503)


def test_fetch_pauses_through_it_after_a_server_error(tmp_path, monkeypatch):
    """A real server answering 503 to every request: fetch asks RETRIES + 1 times, pausing 0.25, 0.5, 1 s."""
    pauses = []
    monkeypatch.setattr(fetch.time, "sleep", pauses.append)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True).start()
    try:
        file = fetch.public_files()[0]
        url = f"http://127.0.0.1:{server.server_address[1]}/{file.name}"
        done = fetch.FetchedFile(file, "fetched", url)
        with pytest.raises(fetch.FetchRequestsError, match="HTTP 503|503"):
            fetch._download_with_retries(file, url, tmp_path / "part", 5.0, None, done, [])
    finally:
        server.shutdown()
        server.server_close()
    assert done.requests == fetch.RETRIES + 1
    expected = [backoff_delay(a, base_s=fetch.PAUSE_BASE_S, max_s=fetch.PAUSE_MAX_S) for a in range(fetch.RETRIES)]
    assert pauses == expected == [0.25, 0.5, 1.0]
