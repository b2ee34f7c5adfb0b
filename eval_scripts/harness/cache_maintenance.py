"""`mis-bench cache check|merge`: what a response cache holds, and one cache from several machines' caches.

`check_cache` proves a file a cache (it is never changed) and counts its answers, failed and
truncated records, repeated answers, answers that can never be served (`cache.record_problem`)
and conflicts: a key with two different answers, or with records naming different rows.

`merge_caches` reads every input (each proven first), and writes one cache: the header, then
every record in input order, an answer repeated with the same text once, the unusable ones
left out. The records of conflicting keys go to a separate file instead (`--conflicts`, by
default `OUT.conflicts.jsonl`, written only when there are conflicts), so the merged cache
serves neither answer (the next run asks those rows again) and nothing is lost. The outputs
are written atomically and never onto an input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eval_scripts.answers.answer_status import STATUS_OK
from eval_scripts.harness.response_cache import HEADER_LINE, CacheIndex, Candidate, prove_cache, scan_records
from mis_bench_dataset.toolkit.atomic import AtomicFiles
from mis_bench_dataset.toolkit.ownership import OutputFolder

MERGE_WRITER = "cache-merge"
CONFLICTS_SUFFIX = ".conflicts.jsonl"


@dataclass
class CacheReport:
    """What one cache file holds (`check_cache`)."""

    path: str
    header: bool
    records: int
    answers: int
    failed_records: int
    duplicates: int
    torn_tail_bytes: int
    unusable: list[dict] = field(default_factory=list)  # {"line", "why"}
    conflicts: list[dict] = field(default_factory=list)  # {"key", "answers": [{"line", row fields, "response"}]}

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _read(path: Path) -> tuple[bytes, list[tuple[int, dict]]]:
    data = path.read_bytes()
    prove_cache(path, data)
    complete = data[: data.rfind(b"\n") + 1]
    return data, list(scan_records(complete, path))


def _conflicts(index: CacheIndex) -> list[dict]:
    return [
        {"key": key, "answers": [_described(c) for c in found]}
        for key, found in index.candidates.items()
        if len(found) > 1
    ]


def _described(candidate: Candidate) -> dict[str, Any]:
    record = candidate.record
    return {
        "line": candidate.line,
        "video_id": record.get("video_id"),
        "dimension": record.get("dimension"),
        "prompt_hash": record.get("prompt_hash"),
        "response": record.get("response"),
    }


def check_cache(path: str | Path) -> CacheReport:
    """Prove `path` a cache and describe it (the file is only read)."""
    path = Path(path)
    data, records = _read(path)
    index = CacheIndex(path, warn=False)
    for line, record in records:
        index.add(line, record)
    first = data.split(b"\n", 1)[0]
    return CacheReport(
        path=str(path),
        header=bool(first) and first + b"\n" == HEADER_LINE,
        records=len(records),
        answers=len(index),
        failed_records=index.stats.failed_records,
        duplicates=index.stats.duplicates,
        torn_tail_bytes=len(data) - len(data[: data.rfind(b"\n") + 1]),
        unusable=[{"line": line, "why": why} for line, why in index.stats.unusable],
        conflicts=_conflicts(index),
    )


@dataclass
class MergeReport:
    inputs: list[str]
    out: str
    conflicts_path: str | None
    records_in: int
    records_out: int
    answers_out: int
    conflicting_keys: int
    conflict_records: int
    duplicates: int
    unusable_dropped: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _line(record: dict) -> str | None:
    """A record as one strict JSON line (None when it cannot be one: a NaN an older version cached)."""
    try:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    except ValueError:
        return None


def merge_caches(
    paths: Sequence[str | Path], out: str | Path, *, conflicts: str | Path | None = None, command: str = "cache"
) -> MergeReport:
    """Merge caches into `out`; conflicting keys' records go to `conflicts` (see the module docstring)."""
    paths = [Path(p) for p in paths]
    out = Path(out).expanduser()
    conflicts_path = Path(conflicts).expanduser() if conflicts else out.with_name(out.name + CONFLICTS_SUFFIX)
    everything = [(path, line, record) for path in paths for line, record in _read(path)[1]]
    index = CacheIndex(out, warn=False)
    for _, line, record in everything:
        index.add(line, record)
    conflicting = {key for key, found in index.candidates.items() if len(found) > 1}
    kept: list[str] = []
    apart: list[str] = []
    seen: set[str] = set()
    unusable = len(index.stats.unusable)  # answers never served (counted by the index)
    for _, _, record in everything:
        text = _line(record)
        if text is None:  # a NaN an older version wrote: an unusable answer (counted) or a failed record
            unusable += record["status"] != STATUS_OK
            continue
        if record["key"] in conflicting and record["status"] == STATUS_OK:
            apart.append(text)
        elif text not in seen and _served_or_kept(index, record):
            seen.add(text)
            kept.append(text)
    targets = [out, *([conflicts_path] if apart else [])]
    claimed = [  # each checked before anything is written: never an input, never a file mis-bench did not write
        OutputFolder(t.parent, command=command, arg="--out", inputs=paths).claim(t.name, MERGE_WRITER) for t in targets
    ]
    with AtomicFiles() as files:  # the merged cache and the conflicts appear together
        for target, lines in zip(claimed, (kept, apart), strict=False):
            files.write(target, HEADER_LINE + "".join(lines).encode("utf-8"))
    return MergeReport(
        inputs=[str(p) for p in paths],
        out=str(out),
        conflicts_path=str(conflicts_path) if apart else None,
        records_in=len(everything),
        records_out=len(kept),
        answers_out=sum(1 for key in index.candidates if key not in conflicting),
        conflicting_keys=len(conflicting),
        conflict_records=len(apart),
        duplicates=index.stats.duplicates,
        unusable_dropped=unusable,
    )


def _served_or_kept(index: CacheIndex, record: dict) -> bool:
    """Whether a record goes to the merged cache: an answer the index kept, or any failed/truncated record."""
    if record["status"] != STATUS_OK:
        return True
    return any(c.record is record for c in index.candidates.get(record["key"], ()))
