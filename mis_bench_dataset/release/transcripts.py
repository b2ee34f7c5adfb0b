"""The transcripts CSV (`video,transcript`), the form the original repository ships for all 996 videos."""

from __future__ import annotations

import csv
from pathlib import Path

from mis_bench_dataset.release.problems import BuildError, Problem
from mis_bench_dataset.toolkit.atomic import atomic_open
from mis_bench_dataset.video_ids import id_column as find_id_column
from mis_bench_dataset.video_ids import parse_video_id


def read_transcripts_csv(path: str | Path) -> tuple[dict[str, str], list[Problem]]:
    """Map canonical video id -> transcript. Malformed and duplicate rows are reported, not fatal."""
    path = Path(path)
    problems: list[Problem] = []
    transcripts: dict[str, str] = {}
    try:
        return _read(path, problems, transcripts)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: not a readable UTF-8 CSV: {exc}") from exc


def _read(path: Path, problems: list[Problem], transcripts: dict[str, str]) -> tuple[dict[str, str], list[Problem]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        id_column = find_id_column(header)
        if id_column is None or "transcript" not in header:
            raise BuildError(
                f"{path}: transcripts CSV needs columns 'video' (or 'video_id') and 'transcript'; found {header}"
            )
        for row_number, row in enumerate(reader, start=2):
            raw = row.get(id_column) or ""
            try:
                video_id = parse_video_id(raw).video_id
            except ValueError as exc:
                problems.append(Problem("malformed_id", str(exc), path=str(path), row=row_number))
                continue
            if video_id in transcripts:
                problems.append(
                    Problem(
                        "duplicate_id",
                        "video appears twice in the transcripts CSV; first row kept",
                        video_id=video_id,
                        modality="text",
                        path=str(path),
                        row=row_number,
                    )
                )
                continue
            transcripts[video_id] = row.get("transcript") or ""
    return transcripts, problems


def write_transcripts_csv(path: str | Path, transcripts: dict[str, str]) -> Path:
    path = Path(path)
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video", "transcript"])
        for video_id in sorted(transcripts):
            writer.writerow([video_id, transcripts[video_id]])
    return path
