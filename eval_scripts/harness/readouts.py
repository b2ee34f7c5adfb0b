"""How a row's answers become its score: each sample's readout (the parser on the text, or the expected
score from the model's digit distribution), then the mean (and median) over the row's samples.

- A sample whose request failed, or whose answer was cut by the token limit, is not an answer, with
  the one exception the one rule (`eval_scripts.answers.answer_status.outcome_status`) makes: an expected-score
  readout of a style whose answer starts with its score (``direct``, ``paper``) needs only the
  score's first tokens, so its small token limit cutting the text is by design. The text readout
  of a cut text is never parsed.
- The distribution decides, not the text: an expected-score sample whose text gives no score (out of
  the scale, unparsed, cut) but whose digit distribution does is scored, and says why its text did not
  (`SampleOutcome.distribution_only`; counted per run by `distribution_only_counts`).
- A row is answered when every one of its samples is (a failed or cut sample leaves the row
  unanswered: the next run asks for that sample only); its prediction is the mean of the samples'
  scores that could be read, None when none could.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from eval_scripts.answers.answer_status import FINISH_LENGTH, STATUS_FAILED, STATUS_OK, STATUS_TRUNCATED, outcome_status
from eval_scripts.backends.base import Completion, DecodingConfig
from mis_icc_metric.score_parser import parse_details, parse_score


@dataclass(frozen=True)
class SampleOutcome:
    """One sample of one row: its status, text, both readouts, and the one the run scores."""

    completion: Completion | None
    status: str
    text: str | None
    text_value: float | None
    expected: dict | None
    value: float | None
    # why the text gives no score, for an expected-score sample the distribution scored all the same
    distribution_only: str | None = None


# The reason of a distribution-scored sample whose text was cut by the token limit (so never parsed).
TEXT_CUT = "text cut by the token limit"


def sample_outcome(completion: Completion | None, decoding: DecodingConfig, style: str) -> SampleOutcome:
    if completion is None:
        return SampleOutcome(None, STATUS_FAILED, None, None, None, None)
    status = outcome_status(
        completion.ok, completion.finish_reason, score_from=decoding.score_from, style=decoding.style
    )
    text = completion.text if status == STATUS_OK else None
    complete_text = text is not None and completion.finish_reason != FINISH_LENGTH
    text_value = parse_score(text, style) if complete_text else None
    expected = completion.expected if status == STATUS_OK and decoding.reads_value else None
    value = (expected or {}).get("score") if decoding.reads_value else text_value
    distribution_only = None
    if decoding.reads_value and value is not None and text_value is None:
        distribution_only = parse_details(text, style).reason if complete_text else TEXT_CUT
    return SampleOutcome(completion, status, text, text_value, expected, value, distribution_only)


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


OUT_OF_RANGE = "out of range"


def out_of_range(readout: RowReadout, style: str) -> bool:
    """Whether an answered row gave no score because the score it stated, or its expected score, lies outside
    [1, 5] (never clipped): counted as "out of range", not as an answer the parser could not read."""
    if readout.prediction is not None or readout.status != STATUS_OK:
        return False
    for sample in readout.samples:
        if sample.expected is not None and "outside [1, 5]" in str(sample.expected.get("reason") or ""):
            return True
        if (
            sample.expected is None
            and sample.text is not None
            and parse_details(sample.text, style).reason == OUT_OF_RANGE
        ):
            return True
    return False


def distribution_only_counts(readouts: Sequence[RowReadout]) -> dict[str, int]:
    """Rows scored from the distribution where a sample's text gives no score, per reason (the row's first such
    sample's; most frequent first): what the run line, readouts.json and the report show."""
    reasons = (next((s.distribution_only for s in row.samples if s.distribution_only), None) for row in readouts)
    return dict(Counter(reason for reason in reasons if reason).most_common())
