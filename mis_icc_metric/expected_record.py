"""One answer's expected-score readout as the harness records it (results.json's `expected` field): the score
E[int] + 0.1 E[frac] (paper eq. 11), the digits and expectations it came from and the probability mass the digit
tokens held, or the reason there is none.

Defined here, below both of its writers: the harness reads it from a server's top logprobs
(`eval_scripts.answers.expected_score`) and the trainer's digit readout (`raft_trainer.predict.DigitReadout`, the
same columns for a batch of prompts) gives one per prompt (`DigitReadout.expected_score`), which the transformers
backend records. A score outside [1, 5] is none, never clipped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mis_bench_dataset.dimensions import SCORE_MAX, SCORE_MIN

__all__ = ["ExpectedScore"]


@dataclass(frozen=True)
class ExpectedScore:
    """The readout of one answer; `score` None with a `reason` when it cannot be read."""

    score: float | None
    integer_digit: int | None = None
    integer_expected: float | None = None
    integer_mass: float | None = None
    fraction_expected: float | None = None
    fraction_mass: float | None = None
    reason: str | None = None

    def as_record(self) -> dict:
        return asdict(self)

    @classmethod
    def missing(cls, reason: str) -> ExpectedScore:
        return cls(None, reason=reason)

    @classmethod
    def of(
        cls,
        integer_digit: int,
        integer: tuple[float, float | None],
        fraction: tuple[float, float | None],
        score: float | None = None,
    ) -> ExpectedScore:
        """E[int] + 0.1 E[frac] from the two positions' (expectation, digit mass), or `score` when the caller
        computed it; None outside [1, 5], never clipped."""
        score = integer[0] + 0.1 * fraction[0] if score is None else score
        inside = SCORE_MIN <= score <= SCORE_MAX
        return cls(
            score if inside else None,
            integer_digit=integer_digit,
            integer_expected=integer[0],
            integer_mass=integer[1],
            fraction_expected=fraction[0],
            fraction_mass=fraction[1],
            reason=None if inside else f"expected score {score:.3f} outside [1, 5]",
        )
