"""How a row's answers become its score: each sample's readout (the parser on the text, or the expected
score from the model's digit distribution), then the mean (and median) over the row's samples.

- A sample whose request failed, or whose answer was cut by the token limit, is not an answer, with
  the one exception the one rule (`eval_scripts.answers.outcome.outcome_status`) makes: an expected-score
  readout of a style whose answer starts with its score (``direct``, ``paper``) needs only the
  score's first tokens, so its small token limit cutting the text is by design. The text readout
  of a cut text is never parsed.
- A row is answered when every one of its samples is (a failed or cut sample leaves the row
  unanswered: the next run asks for that sample only); its prediction is the mean of the samples'
  scores that could be read, None when none could.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from eval_scripts.answers.outcome import FINISH_LENGTH, STATUS_FAILED, STATUS_OK, STATUS_TRUNCATED, outcome_status
from eval_scripts.answers.parse import parse_score
from eval_scripts.backends.base import Completion, DecodingConfig


@dataclass(frozen=True)
class SampleOutcome:
    """One sample of one row: its status, text, both readouts, and the one the run scores."""

    completion: Completion | None
    status: str
    text: str | None
    text_value: float | None
    expected: dict | None
    value: float | None


def sample_outcome(completion: Completion | None, decoding: DecodingConfig, style: str) -> SampleOutcome:
    if completion is None:
        return SampleOutcome(None, STATUS_FAILED, None, None, None, None)
    status = outcome_status(
        completion.ok, completion.finish_reason, score_from=decoding.score_from, style=decoding.style
    )
    text = completion.text if status == STATUS_OK else None
    complete_text = text is not None and completion.finish_reason != FINISH_LENGTH
    text_value = parse_score(text, style) if complete_text else None
    expected = completion.expected if status == STATUS_OK and decoding.expected else None
    value = (expected or {}).get("score") if decoding.expected else text_value
    return SampleOutcome(completion, status, text, text_value, expected, value)


@dataclass(frozen=True)
class RowReadout:
    """A row's samples and what they give: its status, prediction (mean), median and spread."""

    samples: tuple[SampleOutcome, ...]
    status: str
    prediction: float | None
    median: float | None
    sd: float | None  # sample standard deviation of the scores read (None below two)
    values: tuple[float | None, ...]

    @property
    def spread(self) -> float | None:
        """max - min of the scores read (None below two)."""
        read = [v for v in self.values if v is not None]
        return max(read) - min(read) if len(read) > 1 else None


def row_readout(samples: Sequence[SampleOutcome]) -> RowReadout:
    statuses = {sample.status for sample in samples}
    status = next((s for s in (STATUS_FAILED, STATUS_TRUNCATED) if s in statuses), STATUS_OK)
    values = tuple(sample.value for sample in samples)
    read = [v for v in values if v is not None] if status == STATUS_OK else []
    return RowReadout(
        samples=tuple(samples),
        status=status,
        prediction=statistics.fmean(read) if read else None,
        median=statistics.median(read) if read else None,
        sd=statistics.stdev(read) if len(read) > 1 else None,
        values=values,
    )
