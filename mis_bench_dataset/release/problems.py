"""Problems found while reading a release, its labels or its transcripts.

A problem never aborts a normal build and never silently drops data: the
affected modality becomes empty (its presence flag false) and the problem is
listed in the build report. `--strict` turns any problem into a failure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.text_safety import clean_line

# Kinds of problems, with a one-line meaning (the card and the report use these).
PROBLEM_KINDS: dict[str, str] = {
    "missing_modality_folder": "a modality folder is absent from the whole release; that modality is empty everywhere",
    "missing_file": "the video has no file for this modality; the modality is empty for that video",
    "unreadable": "the npz could not be opened (truncated zip, not an npz, pickled object)",
    "too_large": "an array is longer than the limit (two hours of frames by default); it is not decompressed",
    "bad_keys": "the npz lacks the expected arrays",
    "bad_width": "the features array is not T x W with the modality's width",
    "bad_dtype": "the array is not numeric (or the transcript not a string)",
    "non_finite": "the features or timestamps contain NaN or infinity",
    "timestamp_mismatch": "timestamps are not one per feature row",
    "unknown_file": "a file the release layout does not define (ignored)",
    "malformed_id": "a file or row whose name is not a valid video id (ignored)",
    "inexact_name": "a file whose name is not exactly {id}.npz (a stray space, another spelling); used only when "
    "no file has the exact name",
    "duplicate_id": "two files or rows map to the same video id (the first kept)",
    "missing_video": "a video listed in the manifest has no file in any modality",
    "transcript_conflict": "the transcripts CSV and text/words disagree (the CSV wins)",
    "label_unknown_video": "labels name a video that is not in the release",
    "label_unknown_dimension": "labels name a dimension that is not one of the eight",
    "label_out_of_range": "a score outside [1, 5]",
    "label_unparseable": "a score that is not a number",
    "label_duplicate": "the same (video, rater, dimension) rated twice",
    "label_bad_header": "the labels file lacks the required columns",
}


@dataclass(frozen=True)
class Problem:
    """One problem: what kind, where (video, modality, file, row) and why."""

    kind: str
    reason: str
    video_id: str | None = None
    modality: str | None = None
    path: str | None = None
    row: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in PROBLEM_KINDS:
            raise ValueError(f"unknown problem kind {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def __str__(self) -> str:
        where = " ".join(
            part
            for part in (
                self.video_id or "",
                f"[{self.modality}]" if self.modality else "",
                f"{self.path}" if self.path else "",
                f"row {self.row}" if self.row is not None else "",
            )
            if part
        )
        text = f"{self.kind}: {where}: {self.reason}" if where else f"{self.kind}: {self.reason}"
        return clean_line(text)  # one line whatever a file name holds (a newline, an escape sequence)


class BuildError(DataError):
    """A build that cannot (or, with --strict, must not) produce a dataset.

    The message is one line; the problems behind it travel along (`problems`, `listing()`)
    so the CLI can show them before its one error line.
    """

    def __init__(
        self,
        message: str,
        problems: list[Problem] | tuple[Problem, ...] = (),
        *,
        where: str | None = None,
        hint: str | None = None,
    ):
        super().__init__(message, where=where, hint=hint)
        self.problems = list(problems)

    def listing(self, limit: int = 50) -> str:
        lines = [f"  - {p}" for p in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"  ... and {len(self.problems) - limit} more")
        return "\n".join(lines)
