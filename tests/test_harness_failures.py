"""Servers fail loud and fast: the circuit breaker, runs stopped by refused requests, failure summaries.

Faults a real server will not produce on demand (nothing listening, an unknown host, TLS to a
plain-HTTP port, 5xx, malformed bodies, truncated answers) come from the fake server of
`_harness_helpers` or from closed ports; `test_harness_real_server.py` covers a real one.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from functools import partial
from pathlib import Path

import pytest
from datasets import Dataset

from eval_scripts import DecodingConfig, Prompt, RunConfig, run_setting
from eval_scripts.backends.openai_backend import (
    CircuitBreaker,
    OpenAIBackend,
    RequestRefusedError,
    RetryPolicy,
    ServerUnreachableError,
    server_message,
)
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, EXIT_USAGE

from _harness_helpers import scoring_rows
from _run_args import TEST_KEY_ENV, run_args
from _server_helpers import free_port

FAST_RETRY = RetryPolicy(max_retries=3, backoff_base_s=0.005, backoff_max_s=0.02, timeout_s=2.0)
SECRET = "sk-test-NEVER-SHOWN-0123456789"


class Scripted:
    """A fault plan: the n-th request (0-based, in arrival order) gets `fault(n, digest)`; records what it gave."""

    def __init__(self, fault):
        self.fault, self.given, self.lock = fault, [], threading.Lock()

    def next(self, digest: str) -> str:
        with self.lock:
            outcome = self.fault(len(self.given), digest)
            self.given.append((digest, outcome))
        return outcome


def _config(out: Path, base_url: str, concurrency: int = 4, retry: RetryPolicy = FAST_RETRY, **kw) -> RunConfig:
    options = dict(base_url=base_url, concurrency=concurrency, retry=retry, api_key_env="MIS_BENCH_TEST_KEY")
    return RunConfig(
        backend="openai", model="fake-model", out=out, backend_options=options, n_bootstrap=0, progress=False, **kw
    )


_cli = partial(run_args, api_key_env=TEST_KEY_ENV, limit=3, flags=("--split", "test"))


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("mis-bench")]


# ----------------------------------------------------------------------------- the circuit breaker


@pytest.mark.parametrize("concurrency", ["1", "8"])
def test_nothing_listening_stops_the_run_within_seconds_with_exit_3(
    synthetic_build, tmp_path, capsys, monkeypatch, concurrency
) -> None:
    monkeypatch.setenv("MIS_BENCH_TEST_KEY", SECRET)
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    # the default retry policy: 5 retries, backoff from 1 s; without the breaker every row would retry
    code = main(_cli(synthetic_build, tmp_path / "runs", base_url, "--concurrency", concurrency))
    elapsed = time.monotonic() - started
    (line,) = _error_lines(capsys.readouterr().err)
    assert code == EXIT_REQUESTS and elapsed < 15
    assert line.startswith("mis-bench run: error: cannot reach the model server: the first ")
    assert "all failed to connect (connection refused: ConnectionRefusedError: [Errno 111] Connection refused)" in line
    assert f"(--base-url {base_url})" in line and "check --base-url" in line
    assert SECRET not in line
    assert not list((tmp_path / "runs").rglob("results.json"))
    cache = tmp_path / "runs" / "responses.cache.jsonl"
    assert not any(r["status"] == "ok" for r in iter_records(cache))


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://mis-bench-no-such-host.invalid/v1", "host not found: gaierror"),
        ("https://127.0.0.1:{port}/v1", "TLS error: SSL"),  # TLS spoken to a plain-HTTP server
    ],
)
def test_unknown_host_and_tls_failure_trip_the_breaker(tmp_path, url, kind, chat_server) -> None:
    rows = Dataset.from_list(scoring_rows(4))
    with chat_server() as server:
        base_url = url.format(port=server.httpd.server_address[1])
        with pytest.raises(ServerUnreachableError, match=kind) as caught:
            run_setting(_config(tmp_path, base_url, concurrency=2, retry=RetryPolicy()), scoring=rows)
    assert caught.value.exit_code == EXIT_REQUESTS and caught.value.where == f"--base-url {base_url}"
    assert server.requests == 0


def test_breaker_counts_only_failures_before_the_server_was_ever_reached() -> None:
    now = [0.0]
    breaker = CircuitBreaker(threshold=3, window_s=10.0, clock=lambda: now[0])
    assert not breaker.connection_failed("connection refused", "a")
    assert not breaker.connection_failed("host not found", "b")
    assert breaker.connection_failed("connection refused", "c")  # the third: trips
    assert breaker.cause() == "a; b"  # one example per kind
    breaker.rearm()  # a new run, counting from 0 s
    now[0] = 9.0
    assert not breaker.connection_failed("connect timeout", "slow")
    now[0] = 10.5
    assert breaker.connection_failed("connect timeout", "slow")  # any failure once the 10 s window has passed
    breaker.reached_server()
    breaker.rearm()
    assert not any(breaker.connection_failed("connection refused", "x") for _ in range(10))


def test_a_server_that_answered_and_then_went_away_fails_rows_without_stopping(tmp_path, chat_server) -> None:
    prompts = [Prompt(f"v{i}", "wau", f"I hear you, step {i}.") for i in range(3)]
    with chat_server() as server:
        backend = OpenAIBackend(
            "m", base_url=server.base_url, retry=FAST_RETRY, api_key_env="MIS_BENCH_UNSET", concurrency=2
        )
        assert all(c.ok for c in backend.complete(prompts, DecodingConfig()))
    later = list(backend.complete(prompts, DecodingConfig()))  # the server is gone now
    assert [c.ok for c in later] == [False] * 3
    assert {c.failure for c in later} == {"connection refused"} and {c.attempts for c in later} == {4}


# ----------------------------------------------------------------------------- refused requests stop the run


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_refused_request_stops_the_run_and_keeps_the_answers_before_it(tmp_path, status, chat_server) -> None:
    rows = Dataset.from_list(scoring_rows(4))
    refuse_from = 10
    plan = Scripted(lambda n, digest: str(status) if n >= refuse_from else "ok")
    with chat_server(plan) as server:
        with pytest.raises(RequestRefusedError) as caught:
            run_setting(_config(tmp_path, server.base_url, concurrency=1), scoring=rows)
        assert server.requests == refuse_from + 1  # no retry, no further request
        error = caught.value
        assert error.exit_code == EXIT_USAGE
        assert error.what == f"the model server refused the request: HTTP {status}: injected {status} for this request"
        assert error.where == f"--base-url {server.base_url}, --model fake-model"
        if status in (401, 403):
            assert "$MIS_BENCH_TEST_KEY" in error.hint
        answered = [r for r in iter_records(tmp_path / "responses.cache.jsonl") if r["status"] == "ok"]
        assert len(answered) == refuse_from
        # fixed, the same run asks only for the rest
        plan.fault = lambda n, digest: "ok"
        result = run_setting(_config(tmp_path, server.base_url, concurrency=1), scoring=rows)
        assert result.n_cached == refuse_from and result.n_called == 32 - refuse_from and result.n_failed == 0


def test_a_refused_request_stops_a_concurrent_run_at_once(tmp_path, chat_server) -> None:
    rows = Dataset.from_list(scoring_rows(8))
    with chat_server(Scripted(lambda n, digest: "404"), delay_s=0.02) as server:
        started = time.monotonic()
        with pytest.raises(RequestRefusedError, match="HTTP 404"):
            run_setting(_config(tmp_path, server.base_url, concurrency=8), scoring=rows)
        assert time.monotonic() - started < 5
        assert server.requests <= 16  # what was in flight, not the 64 rows


def test_grid_stops_like_a_single_setting(synthetic_build, tmp_path, capsys, chat_server) -> None:
    args = ["--grid", "--modalities", "text,audio+text", "--prompts", "direct,cot"]
    assert main(_cli(synthetic_build, tmp_path / "a", f"http://127.0.0.1:{free_port()}/v1", *args)) == EXIT_REQUESTS
    assert "cannot reach the model server" in _error_lines(capsys.readouterr().err)[0]
    with chat_server(Scripted(lambda n, digest: "401")) as server:
        assert main(_cli(synthetic_build, tmp_path / "b", server.base_url, *args)) == EXIT_USAGE
        assert server.requests <= 8
    assert "HTTP 401: injected 401" in _error_lines(capsys.readouterr().err)[0]


# ----------------------------------------------------------------------------- failure summaries


def _by_digest(n: int, digest: str) -> str:
    """Deterministic per prompt, the same on every attempt: a quarter always 500, a quarter always malformed."""
    return {0: "500", 1: "malformed"}.get(int(digest, 16) % 4, "ok")


def test_a_run_with_failures_summarises_them_by_kind(synthetic_build, tmp_path, capsys, chat_server) -> None:
    plan = Scripted(_by_digest)
    with chat_server(plan) as server:
        code = main(
            _cli(
                synthetic_build,
                tmp_path / "runs",
                server.base_url,
                "--json",
                "--max-retries",
                "2",
                "--backoff-base",
                "0.001",
                "--backoff-max",
                "0.002",
            )
        )
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    given = dict(plan.given)  # prompt digest -> its fault (the same on every attempt)
    expected = {
        "HTTP 500": sum(f == "500" for f in given.values()),
        "malformed response": sum(f == "malformed" for f in given.values()),
    }
    assert code == EXIT_REQUESTS and summary["failed"] == sum(expected.values()) and all(expected.values())
    assert {kind: entry["count"] for kind, entry in summary["failures"].items()} == expected
    assert summary["failures"]["HTTP 500"]["example"] == "HTTP 500: injected 500 for this request"
    assert summary["failures"]["malformed response"]["example"].startswith("malformed response: JSONDecodeError")
    assert f"text direct: {summary['failed']} request(s) failed, by kind:" in captured.err
    for kind, count in expected.items():
        assert f"  {count} x {kind}, e.g. " in captured.err
    results = json.loads(Path(summary["results"]).read_text())
    assert results["outcomes"]["failures"] == summary["failures"]
    assert results["outcomes"]["overall"]["failed"] == sum(expected.values())
    raw = [json.loads(line) for line in (Path(summary["results"]).parent / "raw_responses.jsonl").open()]
    assert sorted(r["failure"] for r in raw if r["failure"]) == sorted(
        kind for kind, count in expected.items() for _ in range(count)
    )


def test_server_messages_are_read_from_the_usual_error_bodies() -> None:
    assert server_message(b'{"error": {"message": "The model `x` does not exist.", "type": "invalid"}}') == (
        "The model `x` does not exist."
    )
    assert server_message(b'{"detail": "Server is pinned to \'m\'"}') == "Server is pinned to 'm'"
    assert server_message(b'{"object": "error", "message": "max_tokens too large"}') == "max_tokens too large"
    assert server_message(b'{"detail": [{"loc": ["body"], "msg": "bad"}]}') == '[{"loc": ["body"], "msg": "bad"}]'
    assert server_message(b"<html>\n  Bad   Gateway </html>") == "<html> Bad Gateway </html>"
    assert server_message(b"") == "(empty body)"
    long = server_message(json.dumps({"error": "x" * 5000}).encode())
    assert len(long) == 300 and long.endswith("\u2026")


def test_truncated_answers_are_counted_apart_from_unparsed(tmp_path, chat_server) -> None:
    rows = Dataset.from_list(scoring_rows(3))

    def fault(n: int, digest: str) -> str:
        return "truncated" if int(digest, 16) % 3 == 0 else "ok"

    plan = Scripted(fault)
    with chat_server(plan) as server:
        result = run_setting(_config(tmp_path, server.base_url), scoring=rows)
    cut = {digest for digest, outcome in plan.given if outcome == "truncated"}
    assert 0 < len(cut) < 24
    assert result.n_truncated == len(cut) and result.n_parsed == 24 - len(cut) and result.n_failed == 0
    results = json.loads(result.results_path.read_text())
    assert results["outcomes"]["overall"] == {
        "answered": 24 - len(cut),
        "unparsed": 0,
        "truncated": len(cut),
        "failed": 0,
    }
    by_dimension = {
        d: sum(p["prediction"] is None for p in results["predictions"] if p["dimension"] == d)
        for d in results["parse_rates"]
    }
    assert {d: c["truncated"] for d, c in results["outcomes"]["dimensions"].items()} == by_dimension
    digests = {hashlib.sha1(body["messages"][0]["content"].encode()).hexdigest() for body in server.bodies}
    assert cut <= digests
