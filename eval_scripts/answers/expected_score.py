"""The probability-weighted ("expected") score of an answer, from the log-probabilities a server returns.

The paper's own readout (§5.2, eq. 9-11; G-Eval's probability-weighted score): at the position of
the score's integer digit, E[int] = sum_d p(d) d; at the position of its first decimal, E[frac];
the score is E[int] + 0.1 E[frac | the generated integer digit] (the greedy form of
`raft_trainer.predict`: one request cannot see the fraction after an integer it did not generate).

A server returns only the top-k candidates of each position (`top_logprobs`, at most
`TOP_LOGPROBS`), so each expectation is renormalised over the digit tokens present in that list
(" 3" and "3" count as the digit 3; a multi-digit token is no digit), and the probability mass those
digits cover is recorded with the answer: a small mass says the model was not writing a digit there.

Where the score sits: the position of the value the parser reads (`mis_icc_metric.score_parser.parse_details`)
in the text the tokens spell, for every style (for CoT, the final score after the reasoning). The
distribution decides, not the text: when the parser rejects the value it found for the value alone
("5.8" out of the scale, a runaway "3.375.375"), the digits where that value stands are read all the
same (`score_span`), so a greedy text out of the scale never drops a row the distribution can score
(the harness counts such rows: `eval_scripts.harness.readouts`). An answer whose value is an integer
("4" then the end) has fractional part 0. No place where a score stands, a value with more than one
integer digit, digits that are not single tokens, a fraction cut by the token limit, or an expectation
outside [1, 5] (never clipped) give no expected score, with the reason recorded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mis_icc_metric.expected_record import ExpectedScore
from mis_icc_metric.score_parser import parse_details

__all__ = [
    "TOP_LOGPROBS",
    "TokenChoice",
    "digit_expectation",
    "expected_from_tokens",
    "score_span",
    "tokens_from_openai",
]

# The most candidates OpenAI's Chat Completions API returns per position (vLLM's default ceiling too).
TOP_LOGPROBS = 20
_DIGITS = "0123456789"
_ONE_INTEGER_DIGIT = re.compile(r"\d(?:\.\d+)?")


@dataclass(frozen=True)
class TokenChoice:
    """One generated position: the token written and the top-k candidates (token text, log-probability)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]


def _digit(token: str) -> int | None:
    stripped = token.strip()
    return int(stripped) if len(stripped) == 1 and stripped in _DIGITS else None


def digit_expectation(choice: TokenChoice) -> tuple[float, float] | None:
    """(E[digit], mass the digits cover) over the single-digit candidates of one position; None: no digit."""
    candidates = dict(choice.top)
    candidates.setdefault(choice.token, choice.logprob)  # the written token, were it outside the top-k list
    weights = [0.0] * 10
    for token, logprob in candidates.items():
        digit = _digit(token)
        # a log-probability is at most 0: a positive or non-finite one (a hostile reply) is ignored
        if digit is not None and logprob is not None and math.isfinite(logprob) and logprob <= 1e-6:
            weights[digit] += math.exp(min(logprob, 0.0))
    mass = sum(weights)
    if mass <= 0.0:
        return None
    return sum(d * w for d, w in enumerate(weights)) / mass, mass


def _token_at(tokens: Sequence[TokenChoice], offset: int) -> int | None:
    """Index of the token whose text covers character `offset` of the tokens' concatenation."""
    end = 0
    for index, choice in enumerate(tokens):
        end += len(choice.token)
        if offset < end:
            return index
    return None


def score_span(text: str, style: str) -> tuple[int, int] | str:
    """Where the score's digits stand in `text` (start, end), or why nowhere: the value the parser reads, or
    the one it rejected for the value alone (`ParseResult.stands`: out of the scale, runaway digits), when
    that value has one integer digit."""
    parsed = parse_details(text, style)
    span = (parsed.start, parsed.end) if parsed.start is not None and parsed.end is not None else parsed.stands
    if span is None:
        return f"no score in the answer ({parsed.reason})"
    if _ONE_INTEGER_DIGIT.fullmatch(text[span[0] : span[1]]) is None:  # "10", "45.5": no digit of a 1-5 score
        return f"the value where the score stands has more than one integer digit ({parsed.reason})"
    return span


def expected_from_tokens(tokens: Sequence[TokenChoice], style: str) -> ExpectedScore:
    """The expected score of the answer `tokens` spell (with each position's top log-probabilities): at the
    score's integer digit E[int] = sum_d p(d) d, at its first decimal E[frac], the score E[int] + 0.1 E[frac],
    each renormalised over the digit tokens the server returned; the digits' probability mass is recorded with it
    (the paper's §5.2 readout, G-Eval's probability-weighted score). Missing, with why, when no score is found."""
    text = "".join(choice.token for choice in tokens)
    span = score_span(text, style)
    if isinstance(span, str):
        return ExpectedScore.missing(span)
    start, end = span
    index = _token_at(tokens, start)
    if index is None or _digit(tokens[index].token) is None or tokens[index].token.strip() != text[start]:
        return ExpectedScore.missing("the score's integer digit is not a token of its own")
    integer = digit_expectation(tokens[index])
    if integer is None:  # every digit's log-probability there was hostile (positive, NaN, infinite): ignored
        return ExpectedScore.missing("no usable probability for the score's integer digit")
    value = text[start:end]
    fraction: tuple[float, float | None] = (0.0, None)
    point_next = index + 1 < len(tokens) and tokens[index + 1].token == "."
    if "." in value or (point_next and index + 2 == len(tokens)):  # "3." at the end: its decimal may follow
        if index + 2 < len(tokens) and point_next and _digit(tokens[index + 2].token) is None:
            return ExpectedScore.missing("the score's decimal point and digit are not tokens of their own")
        if not point_next and index + 1 < len(tokens):
            return ExpectedScore.missing("the score's decimal point and digit are not tokens of their own")
        if index + 2 >= len(tokens):
            return ExpectedScore.missing("the score's decimal was cut by the token limit")
        fraction = digit_expectation(tokens[index + 2])
        if fraction is None:
            return ExpectedScore.missing("no usable probability for the score's decimal digit")
    return ExpectedScore.of(_digit(tokens[index].token), integer, fraction)


def tokens_from_openai(logprobs: object) -> list[TokenChoice] | None:
    """The positions of a Chat Completions choice's `logprobs` (`{"content": [{"token", "logprob",
    "top_logprobs": [...]}, ...]}`); None when the server sent none (a server that ignores the request)."""
    if not isinstance(logprobs, Mapping) or not isinstance(logprobs.get("content"), list):
        return None
    tokens = []
    for position in logprobs["content"]:
        if not isinstance(position, Mapping) or not isinstance(position.get("token"), str):
            raise TypeError("a logprobs position without a token")
        top = position.get("top_logprobs") or []
        tokens.append(TokenChoice(position["token"], _logprob(position.get("logprob")), tuple(_candidates(top))))
    return tokens


def _logprob(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a log-probability is {type(value).__name__}")
    return float(value)


def _candidates(top: Iterable) -> Iterable[tuple[str, float]]:
    for candidate in top:
        if isinstance(candidate, Mapping) and isinstance(candidate.get("token"), str):
            yield candidate["token"], _logprob(candidate.get("logprob"))
