"""Re-parse the saved answers of a run with the current parser (`mis-bench parse`): a parser fix never needs the
model again.

Input: a run's `raw_responses.jsonl` (one record per row and sample: `response`, `status`,
`finish_reason`, `prediction`, and for an expected-score run `text_prediction`), or a predictions
file with `raw_response` (`predictions.jsonl` / `.csv` / `.json`). Only complete answers are parsed,
as a run parses them (status ok, not cut by the token limit). The prompt style comes from the
`results.json` beside the file unless given.

The output is what changed: per answer the old and the new value, the rule that decided or why
there is none; and, per row, the re-parsed text readout (the mean of its samples' values), which
`mis-bench parse --out` writes as a predictions file.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.answers.answer_status import FINISH_LENGTH, STATUS_OK
from eval_scripts.formats.results import RESULTS_NAME
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric.score_parser import PARSE_STYLES, parse_details

RAW_RESPONSES_SUFFIX = "raw_responses.jsonl"


@dataclass(frozen=True)
class Reparsed:
    """One answer: its row and sample, the value saved with it, the value the current parser reads."""

    video_id: str
    dimension: str
    sample: int
    text: str | None
    old: float | None
    new: float | None
    rule: str | None
    reason: str | None

    @property
    def changed(self) -> bool:
        return self.old != self.new


@dataclass(frozen=True)
class Reparse:
    source: Path
    style: str
    answers: list[Reparsed]

    @property
    def changed(self) -> list[Reparsed]:
        return [a for a in self.answers if a.changed]

    def counts(self) -> dict[str, int]:
        changed = self.changed
        return {
            "answers": len(self.answers),
            "changed": len(changed),
            "number_to_none": sum(a.old is not None and a.new is None for a in changed),
            "none_to_number": sum(a.old is None and a.new is not None for a in changed),
            "number_to_number": sum(a.old is not None and a.new is not None for a in changed),
        }

    def predictions(self) -> list[dict[str, Any]]:
        """Per row (first-seen order): the re-parsed text readout, the mean of its samples' values."""
        rows: dict[tuple[str, str], list[Reparsed]] = {}
        for answer in self.answers:
            rows.setdefault((answer.video_id, answer.dimension), []).append(answer)
        records = []
        for (video, dimension), answers in rows.items():
            read = [a.new for a in answers if a.new is not None]
            first = min(answers, key=lambda a: a.sample)
            records.append(
                {
                    "video_id": video,
                    "dimension": dimension,
                    "prediction": statistics.fmean(read) if read else None,
                    "raw_response": first.text,
                }
            )
        return records


def run_style(path: Path, style: str | None) -> str:
    """The prompt style: as given, else the one the `results.json` beside `path` records."""
    if style is not None:
        if style not in PARSE_STYLES:
            raise UsageError(f"unknown prompt style {style!r}", where="--prompt", hint=f"use {', '.join(PARSE_STYLES)}")
        return style
    results = path.with_name(RESULTS_NAME)
    if results.is_file():
        from mis_bench_dataset.toolkit.jsonio import JSONInputError, read_json

        try:
            recorded = (read_json(results).get("setting") or {}).get("prompt_style")
        except (JSONInputError, AttributeError):
            recorded = None
        if recorded in PARSE_STYLES:
            return recorded
    raise UsageError(
        f"cannot tell the prompt style of {path} (no results.json beside it says)",
        where=str(path),
        hint=f"give it with --prompt ({', '.join(PARSE_STYLES)})",
    )


def _answers_of_raw(records: Sequence[Mapping[str, Any]], style: str, path: Path) -> list[Reparsed]:
    answers = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record.get("video_id"), str) or not isinstance(record.get("dimension"), str):
            raise DataError("a record without video_id / dimension", where=f"{path}, line {number}")
        text = record.get("response")
        complete = record.get("status") == STATUS_OK and record.get("finish_reason") != FINISH_LENGTH
        old = record["text_prediction"] if "text_prediction" in record else record.get("prediction")
        answers.append(_reparsed(record, text if complete else None, old, style))
    return answers


def _reparsed(record: Mapping[str, Any], text: object, old: object, style: str) -> Reparsed:
    parsed = parse_details(text, style) if isinstance(text, str) else None
    return Reparsed(
        video_id=record["video_id"],
        dimension=record["dimension"],
        sample=int(record.get("sample") or 0),
        text=text if isinstance(text, str) else None,
        old=float(old) if isinstance(old, (int, float)) and not isinstance(old, bool) else None,
        new=parsed.value if parsed else None,
        rule=parsed.rule if parsed else None,
        reason=parsed.reason if parsed else "no complete answer saved",
    )


def reparse(path: str | Path, style: str | None = None) -> Reparse:
    """Re-parse every saved answer of `path` (see the module doc)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such file", where=str(path), hint="give a run's raw_responses.jsonl or predictions file")
    style = run_style(path, style)
    if path.name.endswith(RAW_RESPONSES_SUFFIX):
        from mis_bench_dataset.toolkit.jsonio import JSONInputError, loads_strict

        records = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    records.append(loads_strict(line, f"{path}, line {number}"))
                except JSONInputError as err:
                    raise DataError(f"not a JSON line ({err.reason})", where=f"{path}, line {number}") from None
        return Reparse(path, style, _answers_of_raw(records, style, path))
    from mis_icc_metric.predictions_io import read_predictions

    records = read_predictions(path)
    if not any("raw_response" in r for r in records):
        raise DataError(
            "the predictions have no raw_response to re-parse",
            where=str(path),
            hint="give the run's raw_responses.jsonl, or predictions written with their raw responses",
        )
    return Reparse(path, style, [_reparsed(r, r.get("raw_response"), r["prediction"], style) for r in records])
