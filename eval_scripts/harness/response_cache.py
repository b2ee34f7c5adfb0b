"""Append-only JSONL response cache: resumable runs that never lose or duplicate a row, proven before use.

One line per model call outcome, flushed as soon as it is known, keyed by
(backend, model, setting, prompt hash, video, dimension, decoding params).
A key counts as answered once an ``"ok"`` record exists; ``"failed"`` records
(retries exhausted, server errors, malformed responses) and ``"truncated"`` ones (the answer
ended at the token limit, `finish_reason: "length"`, so "3." may be what is left of "3.5") are
kept for the record but never served as answers, so the next run asks again.

**Proof before change.** A cache file starts with a header line (`{"mis_bench_cache": 1, ...}`,
written once, atomically, when the file is created); a cache written before headers existed
starts with a record. Before anything is changed, an existing file is *proven* a cache: empty,
or its first line a header or a record. Anything else (a JSON file, a Parquet shard, a notes
file) is refused and left byte for byte as it was; so is a path inside the dataset or any input.
Only a proven cache gets its torn last line repaired.

**Records checked against the row they serve.** Every answer is validated when it is read (the
record's schema: its fields' types, and a key that is the hash of the backend, model, setting,
prompt, video, dimension and decoding it records, so a hand-edited line is caught; a response that
is text, a finish reason that is text, token counts that are whole, non-negative and plausible, no
non-finite number, no lone surrogate): one that fails (edited, or written by an older version from a
hostile server) is not served, it is named (line and field), and the row is asked again. When a row is served,
the record's video, dimension and prompt hash must be the row's: a record naming another row
is never served (logged, and the row asked again). Two usable answers for one row that differ
(two machines' caches concatenated) are a conflict: the run stops before any call, naming both
answers and their lines; `mis-bench cache merge` keeps conflicting records apart.
`answer_problem` is the one rule of what may be cached or served as an answer; the caching
wrapper applies it to every new outcome, so no record this version writes can break a later run.
Records may carry more fields than these; they are kept and ignored.

Crash safety: each record is one ``write`` of a complete line followed by a flush,
so a SIGKILL can at worst leave the last line torn. A malformed line anywhere else is corruption
and raises, naming the file and line. An exclusive lock on a hidden file beside the cache's
real file (`.NAME.lock`, the toolkit's one lock: `toolkit.atomic.try_lock`) stops two runs from appending to the
same cache at once, however they name it (links resolved); the lock file stays (the next run reuses it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_scripts.answers.answer_status import STATUS_OK, STATUSES, answer_problem, non_finite
from mis_bench_dataset.toolkit.atomic import create_new, try_lock
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.ownership import resolve_path

logger = logging.getLogger(__name__)

CACHE_VERSION = 1
HEADER: dict[str, Any] = {"mis_bench_cache": CACHE_VERSION, "written_by": "mis-bench", "format": "jsonl"}
HEADER_LINE = json.dumps(HEADER, separators=(",", ":")).encode("utf-8") + b"\n"
# The fields that name the row a record serves (validated against the row when it is served).
ROW_FIELDS = ("video_id", "dimension", "prompt_hash")
_QUOTE_CHARS = 80


class CacheError(DataError):
    """The cache file is corrupt, not a cache, conflicting, or locked by another run (a data error: exit 1)."""


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


def record_problem(record: Mapping[str, Any]) -> str | None:
    """Why an `ok` record of a cache file cannot be served as an answer (None when it can)."""
    schema = record_schema_problem(record)
    if schema is not None:
        return schema
    if "response" not in record:
        return "an answer without a response"
    problem = answer_problem(
        record["response"], record.get("finish_reason"), record.get("usage"), record.get("expected")
    )
    if problem is None and non_finite(record):
        problem = "a non-finite number (NaN or Infinity)"
    return problem


# ----------------------------------------------------------------------------- reading a cache file


# The one schema of a cache record line, checked with its answer when the line is read (`record_problem`): each
# field a record names its row and request with, and its type. A record carrying every KEYED field must have the
# key those fields hash to (`cache_key`): a line edited by hand (another temperature, another video) is never
# served as the answer to a request it does not record; it is named (line and field) and its row asked again.
KEYED_FIELDS = ("backend", "model", "setting", "prompt_hash", "video_id", "dimension", "decoding")
_RECORD_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "backend": (str,),
    "model": (str,),
    "setting": (dict,),
    "prompt_hash": (str,),
    "video_id": (str,),
    "dimension": (str,),
    "decoding": (dict,),
    "error": (str, type(None)),
    "attempts": (int,),
    "latency_s": (int, float),
    "created_at": (int, float),
    "served_model": (str, type(None)),
}
_TYPE_NAMES = {str: "a string", dict: "an object", int: "an integer", float: "a number", type(None): "null"}


def record_schema_problem(record: Mapping[str, Any]) -> str | None:
    """Why a cache record line fails the record schema (naming the field), or None."""
    for name, types in _RECORD_FIELD_TYPES.items():
        if name in record and (not isinstance(record[name], types) or isinstance(record[name], bool)):
            wanted = " or ".join(dict.fromkeys(_TYPE_NAMES[t] for t in types))
            return f"field {name} is {type(record[name]).__name__}, not {wanted}"
    if isinstance(record.get("attempts"), int) and record["attempts"] < 0:
        return f"field attempts is {record['attempts']}, below 0"
    keyed = all(name in record for name in KEYED_FIELDS)
    if keyed and record["key"] != cache_key(**{name: record[name] for name in KEYED_FIELDS}):
        return (
            "field key is not the hash of the record's backend, model, setting, prompt_hash, video_id, dimension "
            "and decoding: the line was edited after it was written"
        )
    return None


def _is_header(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("mis_bench_cache") == CACHE_VERSION


def _is_record(obj: Any) -> bool:
    return (
        isinstance(obj, dict) and isinstance(obj.get("key"), str) and bool(obj["key"]) and obj.get("status") in STATUSES
    )


def not_a_cache_error(path: Path, why: str) -> CacheError:
    return CacheError(
        f"{path} is not a response cache ({why}); nothing was changed",
        where="--cache",
        hint="give a new file, or a cache that `mis-bench run` wrote",
    )


def prove_cache(path: Path, data: bytes) -> None:
    """Raise CacheError unless `data` (a file's bytes) is empty or starts with a cache header or record line."""
    if not data:
        return
    first, newline, _ = data.partition(b"\n")
    if not newline:
        raise not_a_cache_error(path, "its first line is incomplete")
    try:
        obj = json.loads(first)
    except ValueError:
        raise not_a_cache_error(path, "its first line is not a JSON object") from None
    if not (_is_header(obj) or _is_record(obj)):
        raise not_a_cache_error(path, "its first line is neither a cache header nor a cache record")


def _quote(text: Any) -> str:
    text = str(text)
    return repr(text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1] + "\u2026")


@dataclass
class Candidate:
    """One usable answer of a cache file, with the line it is on."""

    line: int
    record: dict

    def row(self) -> tuple:
        return tuple(self.record.get(name) for name in ROW_FIELDS)


@dataclass
class CacheStats:
    answered: int = 0
    failed_records: int = 0
    torn_tail_bytes: int = 0
    duplicates: int = 0  # answers repeated with the same text (harmless: the first is served)
    unusable: list[tuple[int, str]] = field(default_factory=list)  # (line, why) of answers never served


class CacheIndex:
    """The answers of a cache file, by key; `answer_for(key, row)` serves one after checking it."""

    def __init__(self, path: Path, *, warn: bool = True) -> None:
        self.path = path
        self.warn = warn  # False where the caller reports (checks and merges) instead of a run
        self.candidates: dict[str, list[Candidate]] = {}
        self.stats = CacheStats()
        self._warned: set[int] = set()

    def add(self, line: int, record: dict) -> None:
        if record["status"] != STATUS_OK:
            self.stats.failed_records += 1
            return
        problem = record_problem(record)
        if problem is not None:
            self.stats.unusable.append((line, problem))
            if self.warn:
                logger.warning(
                    "%s, line %d: not used as an answer (%s); the row is asked again", self.path, line, problem
                )
            return
        candidate = Candidate(line, record)
        found = self.candidates.setdefault(record["key"], [])
        if any(c.row() == candidate.row() and c.record["response"] == record["response"] for c in found):
            self.stats.duplicates += 1
            return
        found.append(candidate)

    def __contains__(self, key: str) -> bool:
        return key in self.candidates

    def answers_row(self, record: Mapping[str, Any]) -> bool:
        """Whether an answer for the key and row of `record` is held already."""
        row = tuple(record.get(name) for name in ROW_FIELDS)
        return any(c.row() == row for c in self.candidates.get(record["key"], ()))

    def __len__(self) -> int:
        return len(self.candidates)

    def get(self, key: str) -> dict | None:
        """The first usable answer of `key`, unchecked against any row (use `answer_for` to serve one)."""
        found = self.candidates.get(key)
        return found[0].record if found else None

    def answer_for(self, key: str, *, video_id: str, dimension: str, prompt_hash: str) -> dict | None:
        """The answer of `key` for the row it must serve, or None (ask again).

        A record naming another row is skipped (and logged once); two different answers for
        the row are a conflict (CacheError naming both, with their lines).
        """
        row = (video_id, dimension, prompt_hash)
        matching = []
        for candidate in self.candidates.get(key, ()):
            if candidate.row() == row:
                matching.append(candidate)
            elif candidate.line not in self._warned:
                self._warned.add(candidate.line)
                logger.warning(
                    "%s, line %d: the record for this key names another row (video %s, dimension %s, prompt %s) "
                    "than the one its key serves (video %s, dimension %s, prompt %s); never served, the row is asked "
                    "again",
                    self.path,
                    candidate.line,
                    *(_quote(v) for v in candidate.row()),
                    *(_quote(v) for v in row),
                )
        if len({c.record["response"] for c in matching}) > 1:
            first, second = (
                matching[0],
                next(c for c in matching if c.record["response"] != matching[0].record["response"]),
            )
            raise CacheError(
                f"{self.path}: two different cached answers for video {video_id}, dimension {dimension}: "
                f"{_quote(first.record['response'])} (line {first.line}) and {_quote(second.record['response'])} "
                f"(line {second.line})",
                where="--cache",
                hint="`mis-bench cache merge FILE --out NEW --conflicts APART` writes a cache without them "
                "(those rows are asked again) and keeps them apart; then run with --cache NEW",
            )
        return matching[0].record if matching else None


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    for line_no, line in enumerate(data.split(b"\n"), start=1):  # records end in \n only (as the torn-tail rule)
        if line.strip():
            yield line_no, line


def scan_records(data: bytes, path: Path) -> Iterator[tuple[int, dict]]:
    """(line, record) of complete cache lines (headers skipped); a malformed line raises, naming the file and line."""
    for line_no, line in _lines(data):
        try:
            record = json.loads(line)
        except ValueError as err:
            raise CacheError(f"{path}, line {line_no}: malformed cache record ({err})") from None
        if _is_header(record):
            continue
        if not _is_record(record):
            missing = [f for f in ("key", "status") if not isinstance(record, dict) or f not in record]
            why = f"no {', '.join(missing)}" if missing else f"status {record.get('status')!r} or key not valid"
            raise CacheError(f"{path}, line {line_no}: malformed cache record ({why})")
        yield line_no, record


def _complete_part(data: bytes) -> bytes:
    return data[: data.rfind(b"\n") + 1]


def index_cache(data: bytes, path: Path) -> CacheIndex:
    """The index of a proven cache's complete lines."""
    index = CacheIndex(path)
    for line_no, record in scan_records(_complete_part(data), path):
        index.add(line_no, record)
    index.stats.answered = len(index)
    return index


def check_cache_path(path: str | Path, protected: Iterable[str | Path]) -> None:
    """Refuse a cache path that is, or lies inside, one of the run's inputs (the dataset, imported files)."""
    resolved = resolve_path(path)
    for item in protected:
        source = resolve_path(item)
        if resolved == source or source in resolved.parents:
            what = f"lies inside the dataset or input folder {source}" if source.is_dir() else "is an input of the run"
            raise UsageError(
                f"--cache {path} {what}",
                where="mis-bench run",
                hint="give a cache file outside the dataset and the run's inputs; nothing was changed",
            )


def read_cache(path: str | Path, protected: Iterable[str | Path] = ()) -> CacheIndex:
    """The index of a cache file, read without locking or writing it (dry runs, batch exports, checks).

    A missing file has no answers; a torn last line (a run being killed or still writing) is left out.
    """
    path = Path(path)
    check_cache_path(path, protected)
    if not path.is_file():
        return CacheIndex(path)
    data = path.read_bytes()
    prove_cache(path, data)
    return index_cache(data, path)


def iter_records(path: str | Path) -> Iterator[dict]:
    """Every complete record of a cache file (headers and a torn last line are skipped)."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n") and line.strip():
                record = json.loads(line)
                if not _is_header(record):
                    yield record


# ----------------------------------------------------------------------------- the cache a run appends to


class ResponseCache:
    """Open with `with ResponseCache(path) as cache:`; `answer_for(key, ...)`, `append(record)`.

    `protected`: paths (the dataset folder, imported files) the cache must not be or lie inside.
    """

    def __init__(self, path: str | Path, *, fsync: bool = False, protected: Iterable[str | Path] = ()):
        self.path = Path(path)
        self.fsync = fsync
        self.protected = list(protected)
        self._index = CacheIndex(self.path)
        self._handle = None
        self._lock = None  # the held lock (filelock) while open
        self._lines = 0  # lines in the file (the next record's line number is one more)

    @property
    def stats(self) -> CacheStats:
        return self._index.stats

    def __enter__(self) -> ResponseCache:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        check_cache_path(self.path, self.protected)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists() and not self.path.is_symlink():
            create_new(self.path, HEADER_LINE)  # a new cache is born with its header (never replacing a file)
        lock = try_lock(self._lock_path)
        if lock is None:
            raise CacheError(f"{self.path}: another run is writing this cache (lock held)")
        try:
            handle = open(self.path, "a+b")  # noqa: SIM115 - held (with its lock) until close()
        except BaseException:
            self._unlock(lock)
            raise
        try:
            self._load(handle)
        except BaseException:
            handle.close()
            self._unlock(lock)
            raise
        self._handle, self._lock = handle, lock

    @property
    def _lock_path(self) -> Path:
        """Beside the cache's real file (links resolved): a cache reached through a symlink or a linked folder is
        one cache with one lock. (Two hard links to one file are two paths the lock cannot tell apart.)"""
        real = resolve_path(self.path)
        return real.with_name(f".{real.name}.lock")

    def _unlock(self, lock) -> None:
        """Release the lock and keep its file: deleting a lock file another run may have just opened would let
        two runs hold two different locks (filelock's own advice); the next run reuses it."""
        lock.release()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self._lock is not None:
            self._unlock(self._lock)
            self._lock = None

    def _load(self, handle) -> None:
        handle.seek(0)
        data = handle.read()
        prove_cache(self.path, data)  # before anything is changed
        end = data.rfind(b"\n") + 1
        index = index_cache(data[:end], self.path)  # every complete line checked before anything is changed
        if not data:
            handle.write(HEADER_LINE)
            handle.flush()
        if end < len(data):
            logger.warning(
                "%s: dropping a torn last line (%d bytes) left by an interrupted run", self.path, len(data) - end
            )
            handle.truncate(end)
            handle.flush()
        index.stats.torn_tail_bytes = len(data) - end
        self._index = index
        self._lines = data[:end].count(b"\n") + (0 if data else 1)
        handle.seek(0, os.SEEK_END)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def get(self, key: str) -> dict | None:
        return self._index.get(key)

    def answer_for(self, key: str, *, video_id: str, dimension: str, prompt_hash: str) -> dict | None:
        return self._index.answer_for(key, video_id=video_id, dimension=dimension, prompt_hash=prompt_hash)

    def __len__(self) -> int:
        return len(self._index)

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line and flush it; ok records become answers.

        The line is strict JSON in UTF-8 (no NaN, no lone surrogate): a record that cannot be
        written so is refused with ValueError (the caching wrapper never hands one over).
        """
        if self._handle is None:
            raise CacheError(f"{self.path}: cache is not open")
        if record["status"] not in STATUSES:
            raise ValueError(f"cache record status must be one of {', '.join(STATUSES)}, got {record['status']!r}")
        if record["status"] == STATUS_OK and self._index.answers_row(record):
            return  # already answered: never a second row for the same key and row
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"
        self._handle.write(line)
        self._handle.flush()
        if self.fsync:
            os.fsync(self._handle.fileno())
        self._lines += 1
        self._index.add(self._lines, dict(record))
