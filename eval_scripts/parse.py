"""The deterministic score parser g of the paper (eq. 2): model text -> score in [1.0, 5.0] or None.

A parser that guesses inflates or deflates ICC silently, so this one is strict and
its rules are fixed and ordered. `parse_score(text, style)` applies them in turn:

1. **Reasoning blocks and scale notes.** Closed ``<think>...</think>`` (also ``<thinking>``,
   ``<reasoning>``) blocks are removed. An unclosed opening tag means the model
   never finished thinking: the answer is ``None``. A closing tag without an
   opening one (chat templates that pre-fill ``<think>``) keeps only the text after it.
   Mentions of the scale itself ("(1-5)", "(out of 5)", "on a scale of 1 to 5") are removed.
2. **Explicit final score** (tier A): "Final score", "Overall score", "Final rating",
   "Final answer", "Overall rating", "score prediction" (the completion MIS-RAFT trains,
   "The score prediction is: 3.4"), or a JSON-style ``"score"``/``"final_score"``/
   ``"rating"`` key, followed by the value. The last such mention wins.
3. **Fractions of five** (tier B): ``x/5`` or ``x out of 5`` anywhere; the last wins.
4. **Score mentions** (tier C): "score", "rating", "rated", "rate" followed by a
   value ("Score: 3.5", "a score of 4", "I rate it 3.2"); the last wins. Rubric echoes
   such as ``Score 3: A moderate level ...`` (the word, a bare integer and then more
   text, no connector) are ignored.
5. **Lone number** (tier D): for ``style="direct"`` and ``style="paper"`` the whole answer,
   or its first line, is one number; for ``style="cot"`` the last non-empty line is one number.

The first tier that finds a mention decides; its chosen value is then validated and
never replaced by a lower tier's:

- a denominator other than 5 ("8/10", "7 out of 10") or a percent sign: other scale, ``None``;
- a second value right after it ("3-4", "3 to 4", "3.5 or 4"): a range or ambiguity, ``None``;
- a signed or out-of-range value (outside [1, 5] before rounding): ``None`` (never clipped);
- otherwise the value is rounded to one decimal, half up, on its exact decimal text
  (``3.45`` -> 3.5, ``3.449`` -> 3.4).

Only ASCII digits count, after Unicode NFKC normalisation (so full-width digits work).
The function never raises on any string and returns ``None`` for non-strings.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

from mis_bench_dataset.dimensions import PROMPT_STYLES, SCORE_MAX, SCORE_MIN, prompt_style
from mis_bench_dataset.numbers import round_half_up

__all__ = ["PARSE_STYLES", "parse_score"]

PARSE_STYLES: tuple[str, ...] = PROMPT_STYLES

_FLAGS = re.IGNORECASE | re.ASCII
_REASONING_TAGS = ("think", "thinking", "reasoning")
_CLOSED_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)

# A number token; the sign is captured so that "-1" is rejected rather than read as 1.
_NUMBER = r"(?P<sign>[-\u2212+])?(?P<num>\d+(?:\.\d+)?)(?![\d])"
# What may stand between a label and its value: markup, punctuation and a few words.
_CONNECTOR = (
    r"(?:[\s*_`\"'\u201c\u201d\u2018\u2019:=#>\[\(]"
    r"|\s[-\u2013\u2014]\s"
    r"|\b(?:is|of|was|would\s+be|should\s+be|will\s+be|be|at|as|it|this|a|an|the|response|therapist)\b)*"
)

_TIER_A_LABEL = re.compile(
    r"(?:\b(?:final|overall)\s+(?:fis\s+)?(?:score|rating|answer|grade)\b"
    r"|\bscore\s+prediction\b"
    r"|[\"'](?:final_score|overall_score|score|rating)[\"']\s*:)",
    _FLAGS,
)
_TIER_B = re.compile(_NUMBER + r"\s*\**\s*(?:/|out\s+of)\s*5(?:\.0+)?(?!\.?\d)", _FLAGS)
_TIER_C_LABEL = re.compile(r"\b(?:score|rating|rated|rate)\b", _FLAGS)
_VALUE_AFTER_LABEL = re.compile(r"(?P<connector>" + _CONNECTOR + r")" + _NUMBER, _FLAGS)

# Tails are read on the value's own line only.
_OTHER_SCALE_TAIL = re.compile(r"[ \t]*\**[ \t]*\(?[ \t]*(?:/|out[ \t]+of)[ \t]*(?P<den>\d+(?:\.\d+)?)", _FLAGS)
_PERCENT_TAIL = re.compile(r"[ \t]*%")
_RANGE_TAIL = re.compile(
    r"[ \t]*\**[ \t]*(?:[-\u2013\u2014~]|\bto\b|\bor\b|\band\b)[ \t]*\**[ \t]*[-\u2212+]?\d",
    _FLAGS,
)
# "Score 3: A moderate level ..." -- a rubric line quoted back, not an answer.
_ECHO_TAIL = re.compile(r"\s*[:.)\]\u2013\u2014-]?\s*[^\s*.!]", _FLAGS)
# Mentions of the scale itself ("(1-5)", "on a scale of 1 to 5") are not answers.
_SCALE_NOTE = re.compile(
    r"[(\[][ \t]*(?:out[ \t]+of[ \t]+5(?:\.0)?|1(?:\.0)?[ \t]*(?:[-\u2013\u2014]|to)[ \t]*5(?:\.0)?)[ \t]*[)\]]"
    r"|\bon[ \t]+(?:a|the)[ \t]+(?:scale[ \t]+(?:of|from)[ \t]+)?1(?:\.0)?[ \t]*(?:[-\u2013\u2014]|to)[ \t]*5(?:\.0)?"
    r"(?:[ \t]+scale)?",
    _FLAGS,
)
_LONE_NUMBER = re.compile(r"[\s*_`\"'#>:=\[\](){}]*" + _NUMBER + r"[\s*_`\"'\[\](){}.!]*", _FLAGS)


class _Rejected(Exception):
    """The decisive mention is unusable (other scale, range, out of range)."""


def parse_score(text: object, style: str = "direct") -> float | None:
    """Score in [1.0, 5.0] at one decimal from a model response, or None (see module doc)."""
    if style not in PARSE_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {PARSE_STYLES}")
    if not isinstance(text, str):
        return None
    body = _strip_reasoning(unicodedata.normalize("NFKC", text))
    if body is None:
        return None
    body = _SCALE_NOTE.sub(" ", body)
    try:
        for finder in (_tier_a, _tier_b, _tier_c):
            match = finder(body)
            if match is not None:
                return _validated(body, match)
        match = _tier_d(body, style)
        return None if match is None else _validated(body, match)
    except _Rejected:
        return None


def _strip_reasoning(text: str) -> str | None:
    text = _CLOSED_BLOCK.sub(" ", text)
    lowered = text.lower()
    for tag in _REASONING_TAGS:
        if f"<{tag}>" in lowered:
            return None  # unclosed: the model ran out of tokens while thinking
        closing = f"</{tag}>"
        if closing in lowered:
            cut = lowered.rindex(closing) + len(closing)
            text, lowered = text[cut:], lowered[cut:]
    return text


def _tier_a(body: str) -> re.Match | None:
    return _last_value_after(_TIER_A_LABEL, body, skip_echoes=False)


def _tier_b(body: str) -> re.Match | None:
    matches = list(_TIER_B.finditer(body))
    return matches[-1] if matches else None


def _tier_c(body: str) -> re.Match | None:
    return _last_value_after(_TIER_C_LABEL, body, skip_echoes=True)


def _tier_d(body: str, style: str) -> re.Match | None:
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines or sum(_LONE_NUMBER.fullmatch(line) is not None for line in lines) > 1:
        return None  # no answer, or several bare numbers: ambiguous
    whole = _LONE_NUMBER.fullmatch(body)
    if whole is not None:
        return whole
    # an analysis ends with its score, a direct answer starts with it (the style's `lone_number_line`)
    last = prompt_style(style).lone_number_line == "last"
    line = lines[-1] if last else lines[0]
    offset = body.rindex(line) if last else body.index(line)
    match = _LONE_NUMBER.fullmatch(line)
    if match is None:
        return None
    # Re-match in `body` so that tails are checked against the full text.
    return _LONE_NUMBER.match(body, offset, offset + len(line))


def _last_value_after(label: re.Pattern, body: str, *, skip_echoes: bool) -> re.Match | None:
    found = None
    for label_match in label.finditer(body):
        value = _VALUE_AFTER_LABEL.match(body, label_match.end())
        if value is None:
            continue
        if skip_echoes and _is_rubric_echo(body, value):
            continue
        found = value
    return found


def _is_rubric_echo(body: str, value: re.Match) -> bool:
    """'Score 3: ...' / 'score 4 requires ...': bare integer, no connector word, text follows."""
    connector = value["connector"]
    if connector.strip() or "." in value["num"] or value["sign"]:
        return False
    rest = body[value.end() :].split("\n", 1)[0]
    return bool(_ECHO_TAIL.match(rest)) and rest.strip(" .*!") != ""


def _validated(body: str, match: re.Match) -> float:
    tail = body[match.end() :]
    if match.re is not _TIER_B:
        other = _OTHER_SCALE_TAIL.match(tail)
        if other is not None and Decimal(other["den"]) != 5:
            raise _Rejected
        if other is not None:
            tail = tail[other.end() :]
    if _PERCENT_TAIL.match(tail) or _RANGE_TAIL.match(tail):
        raise _Rejected
    if match["sign"] in ("-", "\u2212"):
        raise _Rejected
    try:
        value = Decimal(match["num"])
    except InvalidOperation:  # pragma: no cover - the regex only admits digit strings
        raise _Rejected from None
    if not Decimal(str(SCORE_MIN)) <= value <= Decimal(str(SCORE_MAX)):
        raise _Rejected
    return round_half_up(value)
