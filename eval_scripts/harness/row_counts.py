"""What happened to each row of a run, counted once for every reader.

A row is `answered` (the parser g read a score), `unparsed` (a complete answer it could not
read), `truncated` (the answer ended at the token limit, `finish_reason` "length": never
scored, see `eval_scripts.answers.answer_status.outcome_status`) or `failed` (no answer after the retries).
The results JSON (`outcomes`, schema 1.1), the run summary, the report and the leaderboard
all show these counts, so an answer cut short is never mistaken for one the parser could not
read. Failed requests are also counted per kind of failure, with one example each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from eval_scripts.answers.answer_status import STATUS_FAILED, STATUS_TRUNCATED

OUTCOME_ANSWERED = "answered"
OUTCOME_UNPARSED = "unparsed"
OUTCOME_TRUNCATED = "truncated"
OUTCOME_FAILED = "failed"
OUTCOME_KINDS: tuple[str, ...] = (OUTCOME_ANSWERED, OUTCOME_UNPARSED, OUTCOME_TRUNCATED, OUTCOME_FAILED)
# How long an example failure message may be in the results and summaries.
FAILURE_EXAMPLE_CHARS = 400
TRUNCATION_HINT = "raise --max-tokens"


def row_outcome(status: str, prediction: float | None) -> str:
    """The outcome of one row from its cache status and parsed prediction."""
    if status == STATUS_FAILED:
        return OUTCOME_FAILED
    if status == STATUS_TRUNCATED:
        return OUTCOME_TRUNCATED
    return OUTCOME_ANSWERED if prediction is not None else OUTCOME_UNPARSED


def count_outcomes(rows: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """`{"overall": counts, "dimensions": {dimension: counts}}` from (dimension, outcome) pairs; every kind listed."""
    per_dimension: dict[str, Counter] = {}
    for dimension, outcome in rows:
        if outcome not in OUTCOME_KINDS:
            raise ValueError(f"unknown outcome {outcome!r}; expected one of {OUTCOME_KINDS}")
        per_dimension.setdefault(dimension, Counter())[outcome] += 1
    overall = sum(per_dimension.values(), Counter())
    return {
        "overall": {kind: overall[kind] for kind in OUTCOME_KINDS},
        "dimensions": {d: {kind: counts[kind] for kind in OUTCOME_KINDS} for d, counts in per_dimension.items()},
    }


def summarise_failures(failures: Iterable[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """`{kind: {"count": n, "example": first message}}` from (kind, message) pairs, most frequent first."""
    counts: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for kind, message in failures:
        counts[kind] += 1
        example = message or kind
        if len(example) > FAILURE_EXAMPLE_CHARS:
            example = example[: FAILURE_EXAMPLE_CHARS - 1] + "\u2026"
        examples.setdefault(kind, example)
    return {kind: {"count": n, "example": examples[kind]} for kind, n in counts.most_common()}


def failure_lines(failures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A failure summary as lines for a terminal: `  12 x connection dropped, e.g. ...`."""
    return [f"  {entry['count']} x {kind}, e.g. {entry['example']}" for kind, entry in failures.items()]
