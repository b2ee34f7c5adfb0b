"""The outcome of one answer: its status (ok, failed, truncated), the one truncation rule, and the one rule of
what may be cached or served as an answer (`answer_problem`). Every backend and the response cache use these,
so a backend needs nothing of the harness."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mis_bench_dataset.dimensions import SCORE_EXPECTED, SCORE_TEXT, prompt_style

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_TRUNCATED = "truncated"
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_FAILED, STATUS_TRUNCATED)
# The finish reason of an answer cut by the token limit (OpenAI-compatible servers, vLLM, transformers).
FINISH_LENGTH = "length"
# The kind of failure of an answer that cannot be cached or served (as `openai_backend` names it).
FAILURE_MALFORMED = "malformed response"
# Token counts a response may report; more than this in one request is not a count but garbage.
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
MAX_USAGE_TOKENS = 100_000_000
MAX_FINISH_REASON_CHARS = 64


def outcome_status(
    ok: bool, finish_reason: str | None, *, score_from: str = SCORE_TEXT, style: str | None = None
) -> str:
    """The one truncation rule: an answer that ended by the token limit is not an answer ("3." may be what is
    left of "3.5"), except the expected-score readout (`score_from`) of a style whose answer starts with its score
    (direct, paper: `PromptStyle.score_first`). That readout takes the score from the first tokens'
    log-probabilities and asks for only those tokens (`PROMPT_STYLE_TABLE`), so the limit cutting the rest of
    the text is by design; a score the limit cut is itself no expected score (`eval_scripts.answers.expected_score`)."""
    if not ok:
        return STATUS_FAILED
    if finish_reason != FINISH_LENGTH:
        return STATUS_OK
    score_in_prefix = score_from == SCORE_EXPECTED and style is not None and prompt_style(style).score_first
    return STATUS_OK if score_in_prefix else STATUS_TRUNCATED


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Mapping):
        return any(non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(non_finite(v) for v in value)
    return False


def usage_problem(usage: Any) -> str | None:
    """Why a response's `usage` block is not believable (None when it is, or when there is none)."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        return f"usage is {type(usage).__name__}, not an object"
    for name in USAGE_FIELDS:
        if name not in usage:
            continue
        value = usage[name]
        if isinstance(value, bool) or not isinstance(value, int):
            return f"usage.{name} is {value!r}, not a whole number"
        if not 0 <= value <= MAX_USAGE_TOKENS:
            return f"usage.{name} is {value:,}, outside 0 to {MAX_USAGE_TOKENS:,}"
    return None


def answer_problem(text: Any, finish_reason: Any, usage: Any, expected: Any = None) -> str | None:
    """Why an answer must not be cached or served (None when it may be): the one rule for every backend.

    The text must be a string of valid Unicode (no lone surrogate: it could not be written as
    UTF-8), the finish reason absent or a short string, the token counts whole, non-negative and
    plausible (`usage_problem`), the expected-score readout, when there is one, an object whose
    numbers are finite (an undefined one is null, never NaN).
    """
    if expected is not None and (not isinstance(expected, Mapping) or non_finite(expected)):
        return "the expected-score readout is not an object of finite numbers"
    if not isinstance(text, str):
        return "no response text" if text is None else f"the response is {type(text).__name__}, not text"
    if _has_surrogate(text):
        return "the response holds a lone surrogate (not valid Unicode)"
    if finish_reason is not None:
        if not isinstance(finish_reason, str):
            return f"finish_reason is {finish_reason!r}, not text"
        if len(finish_reason) > MAX_FINISH_REASON_CHARS or _has_surrogate(finish_reason):
            return "finish_reason is not a short text"
    return usage_problem(usage)
