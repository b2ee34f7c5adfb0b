"""Append-only JSONL response cache: resumable runs that never lose or duplicate a row.

One line per model call outcome, flushed as soon as it is known, keyed by
(backend, model, setting, prompt hash, video, dimension, decoding params).
A key counts as answered once an ``"ok"`` record exists; ``"failed"`` records
(retries exhausted, server errors) and ``"truncated"`` ones (the answer ended at the
token limit, `finish_reason: "length"`, so "3." may be what is left of "3.5") are kept
for the record but never served as answers, so the next run asks again.

Crash safety: each record is one ``write`` of a complete line followed by a flush,
so a SIGKILL can at worst leave the last line torn. Opening the cache drops such a
torn tail (logging it) before appending; a malformed line anywhere else is
corruption and raises, naming the file and line. An exclusive advisory lock
(`fcntl.flock`) stops two runs from appending to the same cache at once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mis_bench_dataset.errors import DataError

logger = logging.getLogger(__name__)

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_TRUNCATED = "truncated"
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_FAILED, STATUS_TRUNCATED)
# The finish reason of an answer cut by the token limit (OpenAI-compatible servers, vLLM, transformers).
FINISH_LENGTH = "length"


def outcome_status(ok: bool, finish_reason: str | None) -> str:
    """The one truncation rule: an answer that ended by the token limit is not an answer."""
    if not ok:
        return STATUS_FAILED
    return STATUS_TRUNCATED if finish_reason == FINISH_LENGTH else STATUS_OK


class CacheError(DataError):
    """The cache file is corrupt, not a cache, or locked by another run (a data error: exit 1, one line)."""


def cache_key(
    *,
    backend: str,
    model: str,
    setting: Mapping[str, Any],
    prompt_hash: str,
    video_id: str,
    dimension: str,
    decoding: Mapping[str, Any],
) -> str:
    """Stable sha256 of everything that determines a response."""
    payload = json.dumps(
        {
            "backend": backend,
            "model": model,
            "setting": dict(setting),
            "prompt_hash": prompt_hash,
            "video_id": video_id,
            "dimension": dimension,
            "decoding": dict(decoding),
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    answered: int = 0
    failed_records: int = 0
    torn_tail_bytes: int = 0


class ResponseCache:
    """Open with `with ResponseCache(path) as cache:`; `get(key)`, `append(record)`."""

    def __init__(self, path: str | Path, *, fsync: bool = False):
        self.path = Path(path)
        self.fsync = fsync
        self._answers: dict[str, dict] = {}
        self._handle = None
        self.stats = CacheStats()

    def __enter__(self) -> ResponseCache:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+b")  # noqa: SIM115 - held (with its lock) until close()
        try:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - non-POSIX: no lock, documented
            pass
        except OSError:
            handle.close()
            raise CacheError(f"{self.path}: another run is writing this cache (lock held)") from None
        self._handle = handle
        self._load()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()  # releases the lock
            self._handle = None

    def _load(self) -> None:
        handle = self._handle
        handle.seek(0)
        data = handle.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            self.stats.torn_tail_bytes = len(data) - end
            logger.warning(
                "%s: dropping a torn last line (%d bytes) left by an interrupted run",
                self.path,
                len(data) - end,
            )
            handle.truncate(end)
            handle.flush()
        for record in _records(data[:end], self.path):
            if record["status"] == STATUS_OK:
                self._answers.setdefault(record["key"], record)
            else:
                self.stats.failed_records += 1
        self.stats.answered = len(self._answers)
        handle.seek(0, os.SEEK_END)

    def __contains__(self, key: str) -> bool:
        return key in self._answers

    def get(self, key: str) -> dict | None:
        return self._answers.get(key)

    def __len__(self) -> int:
        return len(self._answers)

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line and flush it; ok records become answers."""
        if self._handle is None:
            raise CacheError(f"{self.path}: cache is not open")
        if record["status"] not in STATUSES:
            raise ValueError(f"cache record status must be one of {', '.join(STATUSES)}, got {record['status']!r}")
        if record["status"] == STATUS_OK and record["key"] in self._answers:
            return  # already answered: never a second row for the same key
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self._handle.write(line)
        self._handle.flush()
        if self.fsync:
            os.fsync(self._handle.fileno())
        if record["status"] == STATUS_OK:
            self._answers[record["key"]] = dict(record)


def _records(data: bytes, path: Path) -> Iterator[dict]:
    """The records of complete cache lines; a malformed one raises, naming the file and line."""
    for line_no, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            raise CacheError(f"{path}, line {line_no}: malformed cache record ({err})") from None
        missing = [field for field in ("key", "status") if field not in record] if isinstance(record, dict) else ["all"]
        if missing:
            raise CacheError(f"{path}, line {line_no}: malformed cache record (no {', '.join(missing)})")
        yield record


def read_answers(path: str | Path) -> dict[str, dict]:
    """key -> answer record of a cache file, read without locking or writing it (dry runs, batch exports).

    A missing file has no answers; a torn last line (a run being killed or still writing) is left out.
    """
    path = Path(path)
    if not path.is_file():
        return {}
    data = path.read_bytes()
    answers: dict[str, dict] = {}
    for record in _records(data[: data.rfind(b"\n") + 1], path):
        if record["status"] == STATUS_OK:
            answers.setdefault(record["key"], record)
    return answers


def iter_records(path: str | Path) -> Iterator[dict]:
    """Every complete record of a cache file (a torn last line is skipped)."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n") and line.strip():
                yield json.loads(line)
