"""Any OpenAI-compatible Chat Completions server over HTTP (OpenAI, vLLM/SGLang servers, Gemini).

Stdlib only (`http.client`, one keep-alive connection per worker thread), so the
harness has no HTTP dependency. Requests run on a bounded thread pool; each is
retried with exponential backoff and full jitter on 429, 5xx, timeouts, dropped
connections and malformed bodies (honouring ``Retry-After``). Other 4xx errors
(bad request, auth) fail at once. A request that still fails comes back as a
failed `Completion`, which the runner records but never caches as an answer.

The API key is read from an environment variable (default ``OPENAI_API_KEY``);
only the variable's name ever appears in logs or files.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from eval_scripts.backends.base import Backend, Completion, DecodingConfig, declared_modalities
from eval_scripts.prompts import Prompt
from mis_bench_dataset.errors import UsageError

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    timeout_s: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Full jitter: uniform(0, min(max, base * 2**attempt)), at least Retry-After."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2**attempt))
        wait = rng.uniform(0.0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.backoff_max_s))
        return wait


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _Fatal(Exception):
    pass


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        modalities: Sequence[str] = ("text", "image"),
        max_tokens_field: str = "max_tokens",
        extra_body: dict | None = None,
        **_ignored,
    ):
        super().__init__(model)
        self.modalities = declared_modalities(modalities)
        parsed = urllib.parse.urlsplit(base_url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise UsageError(f"--base-url must be an http(s) URL, got {base_url!r}",
                             hint="e.g. http://127.0.0.1:8000/v1")
        self._scheme, self._host, self._port = parsed.scheme, parsed.hostname, parsed.port
        self._path = parsed.path + "/chat/completions"
        self.base_url = base_url
        self.api_key_env = api_key_env
        self._api_key = os.environ.get(api_key_env) or None
        if self._api_key is None:
            logger.info("no API key in $%s: sending requests without Authorization", api_key_env)
        self.concurrency = max(1, int(concurrency))
        self.retry = retry or RetryPolicy()
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self._local = threading.local()
        self.calls = 0  # HTTP requests sent, including retries
        self._calls_lock = threading.Lock()

    # -- request building -------------------------------------------------
    def request_body(self, prompt: Prompt, decoding: DecodingConfig) -> dict:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": message_content(prompt)}],
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "seed": decoding.seed,
            self.max_tokens_field: decoding.max_new_tokens,
        }
        body.update(self.extra_body)
        return body

    # -- transport --------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.retry.timeout_s)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def _post_once(self, payload: bytes) -> ChatAnswer:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        with self._calls_lock:
            self.calls += 1
        conn = self._connection()
        try:
            conn.request("POST", self._path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (socket.timeout, TimeoutError) as err:
            self._drop_connection()
            raise _Retryable(f"timeout after {self.retry.timeout_s:g} s") from err
        except (http.client.HTTPException, ConnectionError, OSError) as err:
            self._drop_connection()
            raise _Retryable(f"connection error: {type(err).__name__}: {err}") from err
        if response.getheader("Connection", "").lower() == "close":
            self._drop_connection()
        if response.status in RETRYABLE_STATUS:
            raise _Retryable(f"HTTP {response.status}", _retry_after(response.getheader("Retry-After")))
        if response.status >= 400:
            raise _Fatal(f"HTTP {response.status}: {raw[:300].decode('utf-8', 'replace')}")
        try:
            return parse_chat_completion(json.loads(raw))
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise _Retryable(f"malformed response body ({type(err).__name__}: {str(err)[:100]})") from err

    def _call(self, index: int, prompt: Prompt, decoding: DecodingConfig) -> Completion:
        payload = json.dumps(self.request_body(prompt, decoding)).encode("utf-8")
        rng = random.Random()
        start = time.monotonic()
        error = "not attempted"
        for attempt in range(self.retry.max_retries + 1):
            try:
                answer = self._post_once(payload)
                return Completion(index, answer.text, True, None, attempt + 1, time.monotonic() - start,
                                  finish_reason=answer.finish_reason, usage=answer.usage)
            except _Fatal as err:
                return Completion(index, None, False, str(err), attempt + 1, time.monotonic() - start)
            except _Retryable as err:
                error = str(err)
                if attempt < self.retry.max_retries:
                    wait = self.retry.delay(attempt, err.retry_after, rng)
                    logger.debug("request %d: %s; retrying in %.2f s", index, error, wait)
                    time.sleep(wait)
        return Completion(index, None, False, error, self.retry.max_retries + 1, time.monotonic() - start)

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        if not prompts:
            return
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            futures = [pool.submit(self._call, i, p, decoding) for i, p in enumerate(prompts)]
            try:
                for future in as_completed(futures):
                    yield future.result()
            finally:
                for future in futures:
                    future.cancel()


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
    """What a Chat Completions response body says: the text, why it stopped, the tokens it used."""

    text: str
    finish_reason: str | None
    usage: dict | None


def parse_chat_completion(body: dict) -> ChatAnswer:
    """The first choice of a Chat Completions response body (live or from a batch output line)."""
    choice = body["choices"][0]
    content = choice["message"]["content"]
    if isinstance(content, list):  # some servers return content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if content is None:  # e.g. a reasoning model that spent every token on hidden reasoning
        content = ""
    if not isinstance(content, str):
        raise TypeError(f"message content is {type(content).__name__}")
    usage = body.get("usage")
    usage = {k: v for k, v in usage.items() if isinstance(v, int)} if isinstance(usage, dict) else None
    return ChatAnswer(content, choice.get("finish_reason"), usage or None)
