"""Any OpenAI-compatible Chat Completions server over HTTP (OpenAI, vLLM/SGLang servers, Gemini).

Stdlib only (`http.client`, one keep-alive connection per worker thread), so the
harness has no HTTP dependency. `timeout_s` (`--timeout`) is a total deadline per attempt:
connecting, sending, the headers and the whole body must be done within it, however slowly a
server trickles its bytes (`backends.deadlines`); the run's deadline (`Backend.deadline`,
`--run-deadline`) cuts every attempt and wait short, and rows not answered by then fail as
"run deadline" (asked again by the next run). Requests run on a bounded thread pool; each is
retried with exponential backoff and full jitter on 429, 5xx, timeouts, dropped
connections and malformed bodies (honouring ``Retry-After``). A request that still
fails comes back as a failed `Completion` naming the kind of failure (`failure`) and
the server's own error message (truncated), which the runner records and summarises
but never caches as an answer.

Two failures stop the whole run instead, because every other request would meet them too:

- **The server cannot be reached** (connection refused, unknown host, TLS failure, connect
  timeout): a circuit breaker trips when the run's first attempts all fail that way (three
  of them, or any after 10 s), or, for a server that answered before, when every attempt for
  `down_after_s` (`--down-after`, 30 s) failed that way; when every server is down the run ends
  with `ServerUnreachableError` (exit 3), checked after each failed attempt and twice a second
  between them, so a run whose servers die ends within a minute of the last answer.
- **The server refuses the request as built** (HTTP 400, 401, 403, 404, 422: a wrong model
  name, key or URL path, or a parameter it does not take): `RequestRefusedError` (exit 2)
  with the server's message.

Answers received before a stop are still yielded, so the response cache keeps them.

Several servers of one model (`base_url` a list: `--base-url` repeated or a comma list) share the
requests: each attempt goes where `backends.replicas.ReplicaPool` says (fewest in flight, `concurrency`
per server), each server has its own connections, circuit breaker and retry budget, a failing one is
taken out for a cool-down (a probe that fails to connect spends no retry of its row), and the run stops
as unreachable only when no server can be reached. Each answer keeps the model its response names
(`Completion.served_model`); `strict_model` (`--strict-model`) refuses answers of another model
(`backends.served_model`). `base_url` is checked once (`mis_bench_dataset.toolkit.urls`); its query string
goes with every request.
The API key is read from an environment variable (default ``OPENAI_API_KEY``);
only the variable's name ever appears in logs, errors or files.

The Chat Completions API cannot say which inputs a served model takes, so the backend
assumes text only; images, audio or video must be declared (`modalities`,
``--backend-modalities``), and a setting needing an undeclared kind is refused before any call.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import logging
import os
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from eval_scripts.answers.answer_status import FAILURE_MALFORMED, USAGE_FIELDS, answer_problem
from eval_scripts.answers.expected_score import TOP_LOGPROBS, TokenChoice, expected_from_tokens, tokens_from_openai
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.backend_options import backend_option, check_passthrough, passthrough_fields
from eval_scripts.backends.base import (
    FAILURE_RUN_DEADLINE,
    Backend,
    Completion,
    DecodingConfig,
    declared_kinds_field,
    declared_modalities,
)
from eval_scripts.backends.deadlines import DEADLINES, shut_down
from eval_scripts.backends.replicas import ANSWERED, FAILED, NEUTRAL, ReplicaPool
from eval_scripts.backends.served_model import FAILURE_OTHER_MODEL, other_model_error, same_model
from mis_bench_dataset.toolkit.backoff import backoff_delay
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, MisBenchError, UsageError
from mis_bench_dataset.toolkit.options import bounded_int, http_urls, seconds, wait_seconds
from mis_bench_dataset.toolkit.urls import HttpUrl, http_url_list

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
# Refusals no retry changes and every other request of the run would get too: the run stops.
STOP_STATUS = frozenset({400, 401, 403, 404, 422})
# How much of a server's error message is kept (in errors, summaries and the raw responses).
ERROR_BODY_CHARS = 300
# How much of the model name a response gives is kept (results.json holds names up to 300 characters).
SERVED_MODEL_CHARS = 200
# Opening a connection (TCP and TLS) gets at most this long, whatever the request timeout.
CONNECT_TIMEOUT_S = 10.0
# A server that answered before is down after this many seconds of nothing but failed connections
# (`--down-after`); when every server of a run is down, the run stops (exit 3).
DOWN_AFTER_S = 30.0
# How often the run looks whether every server is down while no attempt ends (all rows waiting to retry).
_WATCH_POLL_S = 0.5

# Kinds of failure (`Completion.failure`); HTTP errors are "HTTP <status>" (`http_failure`).
FAILURE_REFUSED = "connection refused"
FAILURE_DNS = "host not found"
FAILURE_TLS = "TLS error"
FAILURE_CONNECT_TIMEOUT = "connect timeout"
FAILURE_CONNECT = "cannot connect"
FAILURE_TIMEOUT = "timeout"
FAILURE_DROPPED = "connection dropped"
FAILURE_NO_LOGPROBS = "no logprobs"
# The server was never reached: what the circuit breaker counts.
CONNECTION_FAILURES = frozenset({FAILURE_REFUSED, FAILURE_DNS, FAILURE_TLS, FAILURE_CONNECT_TIMEOUT, FAILURE_CONNECT})


def http_failure(status: int) -> str:
    return f"HTTP {status}"


class ServerUnreachableError(MisBenchError):
    """No server of the run can be reached: a wrong --base-url, or servers that stopped answering (exit 3,
    failed model requests: the answers received before are cached, and a rerun asks only the rows left)."""

    exit_code = EXIT_REQUESTS


class RequestRefusedError(UsageError):
    """The server refused a request as the command built it (HTTP 400/401/403/404/422): fix the command (exit 2)."""


class LogprobsMissingError(UsageError):
    """An expected-score run met a server that answers without log-probabilities: the run stops (exit 2)."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    timeout_s: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Full jitter: uniform(0, min(max, base * 2**attempt)), at least Retry-After (the toolkit's one backoff)."""
        return backoff_delay(
            attempt, base_s=self.backoff_base_s, max_s=self.backoff_max_s, retry_after=retry_after, rng=rng
        )


# The request fields mis-bench sets and records (results.json's system and decoding, the cache key): the model, the
# messages, the decoding, the readout's logprobs and how the answer comes back. `extra_body` may add any other field,
# never one of these (what is sent is what the run records).
CONTROLLED_FIELDS = frozenset(
    {
        "model", "messages", "temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "logprobs",
        "top_logprobs", "n", "stream", "stream_options", "best_of", "echo", "prompt",
    }
)  # fmt: skip


@dataclass(frozen=True)
class OpenAIOptions:
    """The openai backend's options (`mis-bench run -M KEY=VALUE`; each also has its own `run` flag)."""

    base_url: str = field(
        default="https://api.openai.com/v1",
        metadata=backend_option(
            "the server's API root; repeat the flag or give a comma list for several servers of one model: requests "
            "go to the one with the fewest in flight, a failing one is taken out for a cool-down while the others "
            "carry on, and the cache is the same as one server's",
            flag="--base-url",
            parse=http_urls,
            repeatable=True,
        ),
    )
    api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata=backend_option(
            "environment variable holding the API key (the key is never logged or written)", flag="--api-key-env"
        ),
    )
    concurrency: int = field(
        default=8,
        metadata=backend_option(
            "requests in flight per server (1-1024)", flag="--concurrency", parse=bounded_int(1, 1024)
        ),
    )
    max_retries: int = field(
        default=RetryPolicy.max_retries,
        metadata=backend_option("retries of a failed request (0-100)", flag="--max-retries", parse=bounded_int(0, 100)),
    )
    timeout: float = field(
        default=RetryPolicy.timeout_s,
        metadata=backend_option(
            "seconds per request attempt, in total: connecting, sending, the headers and the whole body (a server "
            "trickling its answer is cut off too); each retry gets its own",
            flag="--timeout",
            parse=seconds,
        ),
    )
    backoff_base: float = field(
        default=RetryPolicy.backoff_base_s,
        metadata=backend_option("seconds; doubles per retry, with jitter", flag="--backoff-base", parse=wait_seconds),
    )
    backoff_max: float = field(
        default=RetryPolicy.backoff_max_s,
        metadata=backend_option("seconds, the longest wait between retries", flag="--backoff-max", parse=wait_seconds),
    )
    down_after: float = field(
        default=DOWN_AFTER_S,
        metadata=backend_option(
            "seconds of nothing but failed connections (refused, unknown host, TLS, connect timeout) after which a "
            "server that answered before counts as down; when every server is down the run stops (exit 3), the "
            "answers so far cached, and a rerun asks only the rows left (a server never reached stops the run after "
            "its first three failed connections)",
            flag="--down-after",
            parse=seconds,
        ),
    )
    cooldown: float = field(
        default=5.0,
        metadata=backend_option(
            "seconds a failing server (of several) is first taken out, doubling on each new trip", parse=seconds
        ),
    )
    strict_model: bool = field(
        default=False,
        metadata=backend_option(
            "refuse an answer whose response names another model than --model (beyond a revision or a provider's "
            "dated alias, e.g. gpt-4o -> gpt-4o-2024-08-06): the row fails (exit 3), is not cached as an answer, "
            "and goes to another server when there are several (off: a warning on stderr and in the results)",
            flag="--strict-model",
        ),
    )
    max_tokens_field: str = field(
        default="max_tokens",
        metadata=backend_option(
            "request field for the token limit (max_completion_tokens for newer OpenAI models)",
            flag="--max-tokens-field",
        ),
    )
    modalities: tuple[str, ...] = declared_kinds_field()
    extra_body: dict | None = field(
        default=None,
        metadata=backend_option(
            'fields added to every request body, a JSON object (e.g. {"reasoning_effort": "low"}); never one of '
            "the fields mis-bench sets and records (model, messages, decoding)",
            changes_answers=True,
            parse=passthrough_fields(CONTROLLED_FIELDS),
        ),
    )


def passthrough_body(extra_body: dict | None, max_tokens_field: str) -> dict:
    """`extra_body` checked as `-M` checks it (also when given as a dict through the Python API): none of the
    controlled fields (nor the token limit's field, whatever --max-tokens-field names), strict JSON only."""
    body = dict(extra_body or {})
    try:
        check_passthrough(body, CONTROLLED_FIELDS | {max_tokens_field})
    except argparse.ArgumentTypeError as err:
        raise UsageError(
            f"bad value for the openai backend's option extra_body: {err}",
            where="-M extra_body",
            hint="set the decoding with the run's own flags; extra_body adds only other fields",
        ) from None
    return body


class _AttemptFailed(Exception):
    """One attempt's failure: its kind, what happened, and whether another attempt may help."""

    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        retryable: bool = True,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


def connection_failure_kind(err: OSError) -> str:
    """What kept a connection from opening."""
    if isinstance(err, socket.gaierror):
        return FAILURE_DNS
    if isinstance(err, ssl.SSLError):
        return FAILURE_TLS
    if isinstance(err, ConnectionRefusedError):
        return FAILURE_REFUSED
    if isinstance(err, TimeoutError):
        return FAILURE_CONNECT_TIMEOUT
    return FAILURE_CONNECT


def server_message(raw: bytes, limit: int = ERROR_BODY_CHARS) -> str:
    """The message of an error body (OpenAI `error.message`, FastAPI `detail`, `message`, or the text), truncated."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        found = (error.get("message") if isinstance(error, dict) else error) or body.get("detail")
        found = found or body.get("message")
        if found:
            text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    text = " ".join(text.split()) or "(empty body)"
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class CircuitBreaker:
    """Says when one server is down: it failed to connect, and nothing but that, for long enough.

    - **Never reached** (a wrong URL, a server not started): down once the run's first attempts all failed to
      connect, `threshold` of them, or any after `window_s`: a run against a wrong address stops in seconds.
    - **Reached before** (the server answered, then died): down once every attempt for `down_after_s` failed
      to connect (`failing_since`); any HTTP answer, even an error, ends the streak. A replica whose cool-down
      probe fails to connect stays in its streak, so it is down again as soon as the streak is long enough.

    Other failures (timeouts, dropped connections, HTTP errors) neither start nor end a streak.
    """

    def __init__(
        self,
        threshold: int = 3,
        window_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        down_after_s: float = DOWN_AFTER_S,
    ):
        self.threshold, self.window_s, self.down_after_s, self._clock = threshold, window_s, down_after_s, clock
        self._lock = threading.Lock()
        self.reached = False
        self.rearm()

    def rearm(self) -> None:
        """Start counting afresh (a new run, or the next setting of a grid). A streak of failed connections goes
        on (nothing answered in between), but counts again only after this run's first failed connection."""
        with self._lock:
            self.failures = 0
            self.kinds: dict[str, str] = {}  # kind -> first error of that kind (in the current streak)
            self.started = self._clock()
            self.failing_since: float | None = getattr(self, "failing_since", None)
            self.tripped = False

    def reached_server(self) -> None:
        with self._lock:
            self.reached = True
            self.failures, self.failing_since, self.tripped = 0, None, False
            self.kinds = {}

    def connection_failed(self, kind: str, error: str) -> bool:
        """Count one failed connection attempt; True when the server is down now."""
        with self._lock:
            now = self._clock()
            self.failures += 1
            self.kinds.setdefault(kind, error)
            if self.failing_since is None:
                self.failing_since = now
            if not self.reached and (self.failures >= self.threshold or now - self.started >= self.window_s):
                self.tripped = True
            return self._down(now)

    def down(self) -> bool:
        """True while the server counts as down (see the class doc); read by the run's watch too, between attempts."""
        with self._lock:
            return self._down(self._clock())

    def _down(self, now: float) -> bool:
        if self.tripped:
            return True
        streak = self.failing_since is not None and now - self.failing_since >= self.down_after_s
        return streak and self.failures > 0

    def cause(self) -> str:
        with self._lock:
            return "; ".join(self.kinds.values())


class _Endpoint:
    """One server's address and connections: one keep-alive connection per worker thread, and its own
    circuit breaker (`CircuitBreaker`)."""

    def __init__(self, url: HttpUrl, breaker: CircuitBreaker | None = None) -> None:
        self.scheme, self.host, self.port = url.scheme, url.host, url.port
        # The query string (Azure OpenAI's ?api-version=...) goes with every request.
        self.path = url.path + "/chat/completions" + (f"?{url.query}" if url.query else "")
        self.base_url = url.url
        self.display_url = url.display  # what errors show: never a password in the URL
        self.breaker = breaker or CircuitBreaker()
        self.local = threading.local()
        self.open_connections: set[http.client.HTTPConnection] = set()
        self.lock = threading.Lock()

    def connection(self, deadline: float, timed_out: Callable[[float], Exception]) -> http.client.HTTPConnection:
        """This thread's connection, opened (TCP, TLS) under the connect timeout when it is not open;
        every blocking step of the attempt gets at most the time left before `deadline`."""
        left = max(0.001, deadline - time.monotonic())
        conn = getattr(self.local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=left)
            self.local.conn = conn
            with self.lock:
                self.open_connections.add(conn)
        if conn.sock is None:
            conn.timeout = min(left, CONNECT_TIMEOUT_S)
            try:
                conn.connect()
            except OSError as err:
                self.drop_connection()
                if isinstance(err, TimeoutError) and time.monotonic() >= deadline:
                    raise timed_out(deadline) from err
                kind = connection_failure_kind(err)
                detail = f"{type(err).__name__}: {err}"
                if kind == FAILURE_TLS and self.scheme == "https":
                    detail += " (a plain-HTTP server? then give the URL with http://)"
                raise _AttemptFailed(kind, detail) from err
        left = max(0.001, deadline - time.monotonic())
        conn.timeout = left
        conn.sock.settimeout(left)
        return conn

    def drop_connection(self) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
            with self.lock:
                self.open_connections.discard(conn)
        self.local.conn = None

    def abort_in_flight(self) -> None:
        """Wake every worker blocked on a socket, so a stopped run ends now, not after its timeouts."""
        with self.lock:
            connections = list(self.open_connections)
        for conn in connections:
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self.lock:
            connections, self.open_connections = list(self.open_connections), set()
        for conn in connections:
            conn.close()


def base_url_list(base_url: str | Sequence[str]) -> list[str]:
    """The servers of `--base-url`: given several times or as a comma list, each checked, each once, in order."""
    return [url.url for url in http_url_list(base_url, where="--base-url")]


class OpenAIBackend(Backend):
    name = "openai"
    Options = OpenAIOptions

    def __init__(
        self,
        model: str,
        options: OpenAIOptions | None = None,
        *,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        **fields,
    ):
        """`options` (default: the defaults), then `fields` naming options (`OpenAIBackend(m, base_url=...)`);
        `retry` replaces the retry options whole, `breaker` the first server's circuit breaker (tests)."""
        options = replace(options or OpenAIOptions(), **fields)
        super().__init__(model, options)
        self.modalities = declared_modalities(options.modalities)
        urls = http_url_list(options.base_url, where="--base-url")  # checked here too, for callers of the Python API
        # Several servers of one model (`backends.replicas`): one endpoint (connections, breaker) each.
        self.down_after_s = down_after_s = options.down_after
        self.strict_model = options.strict_model  # refuse answers another model gave (`backends.served_model`)
        self.endpoints = [
            _Endpoint(url, breaker if n == 0 and breaker is not None else CircuitBreaker(down_after_s=down_after_s))
            for n, url in enumerate(urls)
        ]
        first = self.endpoints[0]
        self.base_url, self.display_url, self.breaker = first.base_url, first.display_url, first.breaker
        self.api_key_env = api_key_env = options.api_key_env
        self._api_key = os.environ.get(api_key_env) or None
        if self._api_key is None:
            logger.info("no API key in $%s: sending requests without Authorization", api_key_env)
        self.concurrency = max(1, int(options.concurrency))  # per server
        self.retry = retry or RetryPolicy(
            options.max_retries, options.backoff_base, options.backoff_max, options.timeout
        )
        self.max_tokens_field = options.max_tokens_field
        self.extra_body = passthrough_body(options.extra_body, self.max_tokens_field)
        self.cooldown_s = options.cooldown
        self.pool = ReplicaPool(len(self.endpoints), capacity=self.concurrency, cooldown_s=self.cooldown_s)
        self._stop = threading.Event()
        self._stop_error: Exception | None = None
        self._lock = threading.Lock()
        self.calls = 0  # HTTP requests sent, including retries

    def replicas(self) -> list[dict] | None:
        """Per server (when there are several): its address and what it did this run (`ReplicaPool.summary`)."""
        if len(self.endpoints) < 2:
            return None
        return [{"url": e.display_url, **s} for e, s in zip(self.endpoints, self.pool.summary(), strict=True)]

    # -- request building -------------------------------------------------
    def request_body(self, prompt: Prompt, decoding: DecodingConfig) -> dict:
        body = {
            "model": self.model,
            "messages": chat_messages(prompt),
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "seed": decoding.seed,
            self.max_tokens_field: decoding.max_new_tokens,
        }
        if decoding.expected:  # the expected-score readout reads the top candidates of every token
            body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        return {**self.extra_body, **body}  # extra fields never replace a controlled one (refused when parsed)

    # -- transport --------------------------------------------------------
    def _attempt_deadline(self) -> float:
        """When this attempt must be over: --timeout from now, or the run's deadline if that comes first."""
        ends = time.monotonic() + self.retry.timeout_s
        return ends if self.deadline is None else min(ends, self.deadline)

    def _timed_out(self, deadline: float) -> _AttemptFailed:
        if self.deadline is not None and deadline >= self.deadline:
            return _AttemptFailed(
                FAILURE_RUN_DEADLINE, "the run's deadline (--run-deadline) passed during the request", retryable=False
            )
        return _AttemptFailed(
            FAILURE_TIMEOUT, f"no complete answer within {self.retry.timeout_s:g} s (connect, headers and body)"
        )

    def _abort_in_flight(self) -> None:
        for endpoint in self.endpoints:
            endpoint.abort_in_flight()
        self.pool.wake()

    def _post_once(self, payload: bytes, endpoint: _Endpoint | None = None) -> ChatAnswer:
        endpoint = endpoint or self.endpoints[0]
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        with self._lock:
            self.calls += 1
        deadline = self._attempt_deadline()
        conn = endpoint.connection(deadline, self._timed_out)
        # The whole attempt (request, headers, body) ends by the deadline, however slowly the bytes come.
        token = DEADLINES.arm(deadline, shut_down(conn.sock))
        try:
            conn.request("POST", endpoint.path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (http.client.HTTPException, OSError) as err:
            expired = DEADLINES.disarm(token)
            endpoint.drop_connection()
            if expired or isinstance(err, TimeoutError):
                raise self._timed_out(deadline) from err
            raise _AttemptFailed(FAILURE_DROPPED, f"{type(err).__name__}: {err}") from err
        DEADLINES.disarm(token)  # complete in time (or completed just as it passed: a whole answer is kept)
        endpoint.breaker.reached_server()
        if response.getheader("Connection", "").lower() == "close":
            endpoint.drop_connection()
        if response.status >= 400:
            raise _AttemptFailed(
                http_failure(response.status),
                server_message(raw),
                retryable=response.status in RETRYABLE_STATUS,
                retry_after=_retry_after(response.getheader("Retry-After")),
                status=response.status,
            )
        try:
            return parse_chat_completion(json.loads(raw))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
            raise _AttemptFailed(FAILURE_MALFORMED, f"{type(err).__name__}: {str(err)[:100]}") from err

    # -- stopping the run -------------------------------------------------
    def _request_stop(self, error: Exception) -> None:
        with self._lock:
            if self._stop_error is None:
                self._stop_error = error
        self._stop.set()
        self._abort_in_flight()

    def _all_down(self) -> bool:
        return all(endpoint.breaker.down() for endpoint in self.endpoints)

    def _unreachable(self) -> ServerUnreachableError:
        def what_failed(breaker: CircuitBreaker) -> str:
            if breaker.reached:
                return (
                    f"stopped answering: every attempt for the last {breaker.down_after_s:g} s failed to connect "
                    f"({breaker.cause()})"
                )
            return f"the first {breaker.failures} attempt(s) all failed to connect ({breaker.cause()})"

        if len(self.endpoints) == 1:
            what = f"cannot reach the model server: {what_failed(self.breaker)}"
        else:
            each = "; ".join(f"{e.display_url} {what_failed(e.breaker)}" for e in self.endpoints)
            what = f"cannot reach any of the {len(self.endpoints)} model servers: {each}"
        return ServerUnreachableError(
            what,
            where="--base-url " + ", ".join(e.display_url for e in self.endpoints),
            hint="check --base-url and that the server is running and reachable from here; the run was stopped, "
            "answers received before are kept in the response cache and a rerun asks only the rows left "
            f"(--down-after: seconds of failed connections before a server counts as down, now {self.down_after_s:g})",
        )

    def _refused(self, status: int, message: str, endpoint: _Endpoint) -> RequestRefusedError:
        if status in (401, 403):
            hint = f"check the API key in ${self.api_key_env} (--api-key-env) and its access to the model"
        elif status == 404:
            hint = "check --model (the server's model id) and --base-url (usually ending in /v1)"
        else:
            hint = "check --model and the request options (--max-tokens-field, --backend-modalities)"
        return RequestRefusedError(
            f"the model server refused the request: HTTP {status}: {message}",
            where=f"--base-url {endpoint.display_url}, --model {self.model}",
            hint=hint + "; the run was stopped, answers received before are kept in the response cache",
        )

    @staticmethod
    def _expected(answer: ChatAnswer, decoding: DecodingConfig) -> dict | None:
        """The expected-score record of an answer ({} when the decoding asked for none; None: no logprobs)."""
        if not decoding.expected:
            return {}
        if answer.tokens is None:
            return None
        return expected_from_tokens(answer.tokens, decoding.style or "direct").as_record()

    def _no_logprobs(self, answer: ChatAnswer, endpoint: _Endpoint) -> LogprobsMissingError:
        return LogprobsMissingError(
            f"--score-from expected needs the token log-probabilities, but the model server answered without "
            f"them (its reply's first choice: {answer.excerpt})",
            where=f"--base-url {endpoint.display_url}, --model {self.model}",
            hint="serve the model with a server that returns logprobs (vLLM, SGLang, OpenAI; `transformers serve` "
            "does not), or use --score-from text; the run was stopped before sending the rest",
        )

    # -- one request, with retries ------------------------------------------
    def _call(self, index: int, prompt: Prompt, decoding: DecodingConfig) -> Completion:
        """One request: each attempt to the replica `ReplicaPool` picks, at most `max_retries + 1` on each; a
        retry on the replica that just failed waits the backoff, one on another replica does not."""
        payload = json.dumps(self.request_body(prompt, decoding)).encode("utf-8")
        rng = random.Random()
        start = time.monotonic()
        failure: _AttemptFailed | None = None
        tries = [0] * len(self.endpoints)
        attempts, last, free_probes = 0, None, self.retry.max_retries + 1
        while not self._stop.is_set():
            if self.past_deadline():
                return self.deadline_failure(index, attempts=attempts, latency_s=time.monotonic() - start)
            replica = self.pool.acquire(
                lambda r: tries[r] <= self.retry.max_retries, avoid=last, stop=self._stop, deadline=self.deadline
            )
            if replica is None:
                if self.past_deadline():
                    continue
                break
            if failure is not None and replica == last and not self._back_off(index, failure, tries[replica], rng):
                self.pool.release(replica, NEUTRAL)
                continue  # stopped, or the run's deadline passed while waiting
            probe = self.pool.probing(replica)
            attempts += 1
            tries[replica] += 1
            outcome = self._attempt(payload, replica)
            if isinstance(outcome, ChatAnswer):
                return self._answered(index, outcome, decoding, attempts, start, self.endpoints[replica])
            failure, last = outcome, replica
            if failure.kind == FAILURE_OTHER_MODEL:  # --strict-model: this server serves another model
                tries[replica] = self.retry.max_retries + 1
            if probe and failure.kind in CONNECTION_FAILURES and free_probes:
                # A cool-down probe tests the server, not the row: its failure spends none of the row's retries
                # (at most max_retries + 1 such probes a row, so a row always ends; the run's watch stops the
                # run when every server is down).
                tries[replica] -= 1
                free_probes -= 1
            if not failure.retryable:
                break
        error = str(failure) if failure is not None else "not sent: the run was stopped"
        kind = failure.kind if failure is not None else "not sent"
        return Completion(index, None, False, error, attempts, time.monotonic() - start, failure=kind)

    def _back_off(self, index: int, failure: _AttemptFailed, tried: int, rng: random.Random) -> bool:
        """Wait before retrying on the replica that failed; False when the run stopped or its deadline came."""
        wait = self.retry.delay(tried - 1, failure.retry_after, rng)
        if self.deadline is not None:
            wait = min(wait, max(0.0, self.deadline - time.monotonic()))
        logger.debug("request %d: %s; retrying in %.2f s", index, failure, wait)
        return not self._stop.wait(wait) and not self.past_deadline()

    def _attempt(self, payload: bytes, replica: int) -> ChatAnswer | _AttemptFailed:
        """One attempt on `replica` (released to the pool with its outcome); a failure that concerns the whole
        run (no server reachable, a refused request) stops it."""
        endpoint = self.endpoints[replica]
        try:
            answer = self._post_once(payload, endpoint)
        except _AttemptFailed as err:
            self.pool.release(replica, FAILED if _replica_failure(err) else NEUTRAL)
            if err.kind in CONNECTION_FAILURES and endpoint.breaker.connection_failed(err.kind, str(err)):
                if self._all_down():
                    self._request_stop(self._unreachable())
                else:
                    self.pool.take_out(replica)
            if err.status in STOP_STATUS:
                self._request_stop(self._refused(err.status, err.detail, endpoint))
            return err
        if self.strict_model and not same_model(self.model, answer.model):
            self.pool.release(replica, FAILED)
            return _AttemptFailed(FAILURE_OTHER_MODEL, other_model_error(self.model, answer.model).partition(": ")[2])
        self.pool.release(replica, ANSWERED)
        return answer

    def _answered(self, index, answer: ChatAnswer, decoding, attempts: int, start: float, endpoint) -> Completion:
        expected = self._expected(answer, decoding)
        if expected is None:
            self._request_stop(self._no_logprobs(answer, endpoint))
            return Completion(
                index, None, False, "the server answered without logprobs", attempts, failure=FAILURE_NO_LOGPROBS
            )
        return Completion(
            index,
            answer.text,
            True,
            None,
            attempts,
            time.monotonic() - start,
            finish_reason=answer.finish_reason,
            usage=answer.usage,
            expected=expected or None,
            served_model=answer.model,
        )

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        if not prompts:
            return
        self._stop.clear()
        self._stop_error = None
        for endpoint in self.endpoints:
            endpoint.breaker.rearm()
        workers = min(self.concurrency * len(self.endpoints), len(prompts))  # --concurrency is per server
        pool = ThreadPoolExecutor(max_workers=workers)
        futures = [pool.submit(self._call, i, p, decoding) for i, p in enumerate(prompts)]
        yielded: set[Future] = set()
        finished = threading.Event()
        threading.Thread(target=self._watch, args=(finished,), name="mis-bench-server-watch", daemon=True).start()
        try:
            for future in as_completed(futures):
                if self._stop.is_set():
                    break
                yielded.add(future)
                yield future.result()
            if self._stop_error is not None:
                # Answers that arrived while the run was stopping are still answers: keep them.
                for future in futures:
                    if future not in yielded and future.done() and not future.cancelled() and future.result().ok:
                        yield future.result()
                raise self._stop_error
        finally:
            finished.set()
            self._stop.set()  # workers still retrying give up at once (an early exit, Ctrl-C)
            pool.shutdown(wait=False, cancel_futures=True)
            self._abort_in_flight()  # and those waiting for an answer stop waiting
            self.close()  # the pool's threads end: so do their connections

    def _watch(self, finished: threading.Event) -> None:
        """Until the run ends: every `_WATCH_POLL_S`, stop it once every server is down (`CircuitBreaker`), even
        while no attempt ends because every row waits out a backoff (a thread: `as_completed` stays O(n))."""
        while not finished.wait(_WATCH_POLL_S) and not self._stop.is_set():
            if self._all_down():
                self._request_stop(self._unreachable())

    def close(self) -> None:
        for endpoint in self.endpoints:
            endpoint.close()


def _replica_failure(err: _AttemptFailed) -> bool:
    """A failure that says the replica is unwell (towards its cool-down): no connection, a dropped or timed-out
    attempt, HTTP 429 or 5xx, a malformed body; not a refused request or the run's deadline."""
    return err.kind != FAILURE_RUN_DEADLINE and (err.status is None or err.status in RETRYABLE_STATUS)


def chat_messages(prompt: Prompt) -> list[dict]:
    """The request's messages: the system message when the prompt has one, then the user message."""
    user = {"role": "user", "content": message_content(prompt)}
    return [{"role": "system", "content": prompt.system}, user] if prompt.system is not None else [user]


def message_content(prompt: Prompt) -> str | list[dict]:
    """The user message's content in the Chat Completions format: the bare text, or
    OpenAI-style parts (video, audio, images, then the text). vLLM's `LLM.chat` takes the same."""
    if not (prompt.images or prompt.audio_path or prompt.video_path):
        return prompt.text
    parts: list[dict] = []
    if prompt.video_path:
        parts.append({"type": "video_url", "video_url": {"url": _data_url(prompt.video_path, "video/mp4")}})
    if prompt.audio_path:
        audio = base64.b64encode(Path(prompt.audio_path).read_bytes()).decode("ascii")
        fmt = Path(prompt.audio_path).suffix.lstrip(".").lower() or "wav"
        parts.append({"type": "input_audio", "input_audio": {"data": audio, "format": fmt}})
    for image in prompt.images:
        url = "data:image/png;base64," + base64.b64encode(image).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": url}})
    parts.append({"type": "text", "text": prompt.text})
    return parts


def _data_url(path: str, mime: str) -> str:
    if path.startswith(("http://", "https://", "data:")):
        return path
    return f"data:{mime};base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


@dataclass(frozen=True)
class ChatAnswer:
    """What a Chat Completions response body says: the text, why it stopped, the tokens it used, and
    (when asked for) each generated token's top candidates; `excerpt` is the first choice, shortened."""

    text: str
    finish_reason: str | None
    usage: dict | None
    tokens: list[TokenChoice] | None = None
    excerpt: str = ""
    model: str | None = None  # the model the response names (`backends.served_model`)


def parse_chat_completion(body: dict) -> ChatAnswer:
    """The first choice of a Chat Completions response body (live or from a batch output line); a body of another
    shape is a TypeError or ValueError naming the field (a malformed response, never an internal error)."""
    if not isinstance(body, dict):
        raise TypeError(f"the body is {type(body).__name__}, not an object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        shape = "missing" if choices is None else "an empty list" if choices == [] else type(choices).__name__
        raise ValueError(f"field choices is {shape}, not a list of at least one choice")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise TypeError("field choices[0].message is not an object")
    tokens = tokens_from_openai(choice.get("logprobs"))
    content = choice["message"]["content"]
    if isinstance(content, list):  # some servers return content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if content is None:  # e.g. a reasoning model that spent every token on hidden reasoning
        content = ""
    if not isinstance(content, str):
        raise TypeError(f"message content is {type(content).__name__}")
    usage = body.get("usage")
    if isinstance(usage, dict):  # the counts (checked below); nested details (prompt_tokens_details) are dropped
        usage = {
            k: v for k, v in usage.items() if k in USAGE_FIELDS or (isinstance(v, int) and not isinstance(v, bool))
        }
    else:
        usage = None
    finish_reason = choice.get("finish_reason")
    problem = answer_problem(content, finish_reason, usage)
    if problem is not None:  # NaN, a lone surrogate, negative or absurd token counts: never an answer
        raise ValueError(problem)
    excerpt = ""
    if tokens is None:  # what an expected-score run's error shows of a reply without logprobs
        excerpt = json.dumps(choice, ensure_ascii=False)
        excerpt = excerpt if len(excerpt) <= 200 else excerpt[:199] + "\u2026"
    model = body.get("model")
    model = model.strip()[:SERVED_MODEL_CHARS] if isinstance(model, str) and model.strip() else None
    return ChatAnswer(content, finish_reason, usage or None, tokens, excerpt, model)
