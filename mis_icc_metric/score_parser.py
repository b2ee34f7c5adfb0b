"""The deterministic score parser g of the paper (eq. 2): model text -> score in [1.0, 5.0] or None.

A parser that guesses inflates or deflates ICC silently, and a wrong number is worse than a
missing one, so this one is strict. It was written against real answers of fine-tuned judges
(the authors' committed predictions: long reasoning that quotes the rubric, conclusions such as
"Therefore, the clinician scores a 3.375.", runaway digit strings, texts cut off mid-sentence)
as well as the answers zero-shot models give to the toolkit's prompts. `parse_score(text,
style)` returns the value; `parse_details(text, style)` also says which rule decided, why a text
has no score, and where the value sits in the text (the expected-score readout of a CoT answer
reads the model's distribution there).

**1. Preparing the text.** Each character is NFKC-normalised (full-width digits become ASCII;
only ASCII digits count). Closed ``<think>...</think>`` (also ``<thinking>``, ``<reasoning>``)
blocks are blanked; an unclosed opening tag means the model never finished thinking: ``None``;
a closing tag without an opening one (templates that pre-fill ``<think>``) keeps only the text
after it. Mentions of the 1-5 scale itself ("(1-5)", "(out of 5)", "on a scale of 1 to 5", "a
number from 1.0 to 5.0", "between 1 and 5", "a 5-point scale") and level ranges ("between Score
3 and Score 4", "between 3 and 4") are blanked: they are not answers.

**2. Candidates, strongest kind first.** The first kind that has a candidate decides; a weaker
kind never replaces a stronger one's verdict.

A. *Declared final score*: "Final score", "Overall score", "Final rating", "Final answer",
   "Overall rating", "score prediction" (MIS-RAFT's completion "The score prediction is: 3.4"),
   or a JSON-style ``"score"``/``"final_score"``/``"rating"`` key, followed by the value.
B. *Conclusion*: a verb phrase that gives the score: "scores a 1.00", "scores 1", "scores at
   level 3", "receives / gets / earns / deserves a score of 2.00", "is given a 4", "is rated as
   Score 4", "rated 3.9", "coded as Score 3", "meets the criteria for (a) Score (of) 5", "the
   (overall) score is 2", "is at Score 2", "I would rate this response 3.8", "I'd give it a 3.5".
   Between the verb and the value only articles, pronouns, the words score / rating / grade /
   level / mark, of / as / at / for, and markup may stand (so "does not receive a score higher
   than 3.375" is no conclusion); "receives"-type verbs need an article or one of those nouns
   ("the patient gets 3 sessions" is none). Also a concluding sentence that ends on its value:
   one opening with "Therefore", "Thus", "Hence", "So", "Overall", "In conclusion", "In summary",
   "All in all" or "Finally" whose value follows "is", "be", "was", "of", "at", "as", "a", "an",
   a label noun, ":" or "..." and ends the sentence ("Therefore, the response is 3.375.",
   "Therefore, ... 3.375"), unless a bound stands before it ("than", "below", "at most", "not" ...).
C. *Fraction of five*: ``x/5`` or ``x out of 5``.
D. *Score mention*: "score", "rating", "rated", "rate", "level", "grade" followed by the value
   ("Score: 3.5", "a score of 4", "Rating 2.6").
E. *Lone number*: for ``direct`` and ``paper`` the whole answer or its first line is one number;
   for ``cot`` the last non-empty line is.

**3. Numbers quoted from the rubric or the instructions are never the answer.** A candidate of
kinds B-D is set aside (and its value is then no candidate of a weaker kind either) when:

- its value is in quotes: ``a "5" should not be rated``, ``not coded as a “5”``;
- it is negated or hypothetical: "not", "never", "cannot" just before the verb; "to", "in order
  to", "must", "may", "might", "could" before it ("to receive a "5""); an "if", "unless" or
  "whether" earlier in its sentence ("If it were warmer, the score would be 4");
- rubric talk follows the value: "if", "when", "only", "would" (but not "would be
  appropriate / fair / reasonable / the best ..."), "should", "must", "requires", "means",
  "describes", "is the maximum" ... ("a score of 5 requires ...", "Give a rating of 1 if ...",
  "the score 4 is the lowest score");
- (kind D) it names an end of the scale ("the maximum rating of 5", "the lowest score of 1"; a
  conclusion may: "receives the highest score of 5"), or "not a" stands before it;
- (kind D) it is a rubric line echoed back: the word, a bare integer and then more text, no
  connector ("Score 3: A moderate level ...", "Score 5. The participant ...");
- (kind B) "scores" is the plural noun ("the scores 4 and 5 differ").

**4. Which candidate.** Kinds A and B are final statements: every one must give the same score
(after rounding) and be valid; two different final scores, or one unusable, give ``None``. Kinds
C and D are deliberation: the last one decides. A text cut off inside a sentence, as when the
model loops until the token limit, may have lost its conclusion: there only kinds A and B count,
plus, for ``direct`` and ``paper``, a candidate or lone number on a finished first line (where
such an answer states its score). Cut off means: the text does not end on a sentence end (``.``,
``!``, ``?``, a closing bracket or quote, markup, a digit), and its last line either holds a
finished sentence before the unfinished one or is at least `CUT_OFF_MIN_WORDS` words long (a
short answer may just lack its full stop).

**5. The decisive value is validated**, never repaired:

- an explicit sign ("+3.5", "-1"): ``None``;
- not a plain number: a second decimal point ("3.375.375.375"), more than 17 digits (no program
  prints a number that long: a runaway digit string such as "44575555555..."), letters or an
  exponent attached ("1e308", "4th"), a decimal comma or a list ("3,5", "3, 4"): ``None``;
- another scale anywhere in the value's sentence: a denominator other than 5 ("8/10", "7 out of
  10"), "on a scale of 1-10", "(0-100)", "a 10-point scale", "2.5 points", "%", "percent": ``None``;
- a second value right after it ("3-4", "3 to 4", "3.5 or 4"): a range or ambiguity, ``None``;
- outside [1, 5] before rounding: ``None`` (never clipped);
- otherwise the value is rounded to one decimal, half up, on its exact decimal text
  (`mis_bench_dataset.toolkit.numbers.round_half_up`: 3.375 -> 3.4, 3.45 -> 3.5, 3.449 -> 3.4).

A value rejected for itself alone (out of range, a runaway digit string) still says where the score
stands (`ParseResult.stands`): the expected-score readout lets the model's distribution there decide.

The function never raises on any string and returns ``None`` for non-strings.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

from mis_bench_dataset.dimensions import PROMPT_STYLES, SCORE_MAX, SCORE_MIN, prompt_style
from mis_bench_dataset.toolkit.numbers import round_half_up

__all__ = ["PARSE_STYLES", "ParseResult", "parse_details", "parse_score"]

PARSE_STYLES: tuple[str, ...] = PROMPT_STYLES
# The longest number a program prints for a double (its shortest round-trip repr); longer is a runaway.
MAX_NUMBER_DIGITS = 17
# A last line this long that stops mid-sentence was cut off (a short one may just lack its full stop).
CUT_OFF_MIN_WORDS = 12

_FLAGS = re.IGNORECASE | re.ASCII
_QUOTES = "\"'\u201c\u201d\u2018\u2019"
_SLASH = "/\u2044\u2215"

_CLOSED_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")

# A number token; the sign is captured so that "-1" and "+3.5" are rejected rather than read as 1 or 3.5.
_NUMBER = r"(?<![\w.,])(?P<sign>[-\u2212+])?(?P<num>\d+(?:\.\d+)?)"
_ONE = r"1(?:\.0+)?"
_FIVE = r"5(?:\.0+)?"
_TO = r"[ \t]*(?:[-\u2013\u2014]|to)[ \t]*"
_SCALE_NOTE = re.compile(
    rf"[(\[][ \t]*(?:out[ \t]+of[ \t]+{_FIVE}|{_ONE}{_TO}{_FIVE})[ \t]*[)\]]"
    rf"|\b(?:on[ \t]+)?(?:a|the)[ \t]+(?:[\w-]+[ \t]+)?scale[ \t]+(?:of|from)[ \t]+{_ONE}{_TO}{_FIVE}(?![\d.])"
    rf"|\bon[ \t]+(?:a|the)[ \t]+{_ONE}{_TO}{_FIVE}(?:[ \t]+scale)?"
    rf"|\b(?:from|between)[ \t]+{_ONE}[ \t]+(?:to|and)[ \t]+{_FIVE}(?![\d.])"
    r"|\b(?:a|the)[ \t]+(?:five|5)[- ]point[ \t]+scale\b",
    _FLAGS,
)
_LEVEL = r"(?:(?:score|level|rating)s?[ \t]+)?"
_LEVEL_RANGE = re.compile(rf"\bbetween[ \t]+{_LEVEL}\d(?:\.\d+)?[ \t]*(?:and|&)[ \t]*{_LEVEL}\d(?:\.\d+)?", _FLAGS)

# What may stand between a label and its value (kinds A, D): markup, punctuation and a few words.
_CONNECTOR = (
    r"(?:[\s*_`\"'\u201c\u201d\u2018\u2019:=#>\[\(]"
    r"|\s[-\u2013\u2014]\s"
    r"|\b(?:is|of|was|would\s+be|should\s+be|will\s+be|be|at|as|it|this|a|an|the|response|therapist)\b)*"
)
_VALUE_AFTER_LABEL = re.compile(r"(?P<connector>" + _CONNECTOR + r")" + _NUMBER, _FLAGS)
_DECLARED_LABEL = re.compile(
    r"(?:\b(?:final|overall)\s+(?:fis\s+)?(?:score|rating|answer|grade)\b"
    r"|\bscore\s+prediction\b"
    r"|[\"'](?:final_score|overall_score|score|rating)[\"']\s*:)",
    _FLAGS,
)
_MENTION_LABEL = re.compile(r"\b(?:score|rating|rated|rate|level|grade)\b", _FLAGS)
_FRACTION = re.compile(_NUMBER + rf"\s*\**\s*(?:[{_SLASH}]|out\s+of)\s*5(?:\.0+)?(?!\.?\d)", _FLAGS)

_FILLER_WORDS = (
    r"a|an|the|it|this|that|them|him|her|response|answer|therapist|clinician|participant|"
    r"score|rating|grade|level|mark|of|as|at|for|overall|final|highest|lowest|maximum|minimum|top|perfect|full"
)
_CONCLUSION = re.compile(
    r"(?:(?P<scores>\bscor(?:es|ed)\b)"
    r"|(?P<receives>\b(?:receive[sd]?|gets?|got|earn(?:s|ed)?|deserve[sd]?|merit(?:s|ed)?|warrant(?:s|ed)?"
    r"|achieve[sd]?|obtain(?:s|ed)?|given|assigned|awarded)\b)"
    r"|(?P<rated>\b(?:rated|coded|graded|categori[sz]ed|classified)\b)"
    r"|(?P<gives>(?:\b(?:i|we|would|will)|['\u2019](?:d|ll))\s+(?:(?:would|will|therefore|then|also|now)\s+)?"
    r"(?:rate|score|give|assign|award|put)\b)"
    r"|(?P<meets>\bmeets?\s+(?:all\s+)?(?:the\s+)?(?:criteria|criterion|requirements?|description|definition)\s+"
    r"(?:for|of)\b)"
    r"|(?P<copula>\b(?:score|rating|grade)\s+(?:is|was|would\s+be|should\s+be|will\s+be|equals|=))"
    r"|(?P<placed>\b(?:is|was|falls?|lies|sits)\s+(?:(?:at|in|into|under|within|a|an)\s+)+(?=(?:score|level|rating)\b))"
    r")"
    rf"(?P<filler>(?:[\s*_`:=#>\[(]|\b(?:{_FILLER_WORDS})\b)*)"
    rf"(?P<open>[{_QUOTES}]?)" + _NUMBER,
    _FLAGS,
)
_LABEL_NOUN = re.compile(r"\b(?:score|rating|grade|level|mark|a|an)\b", _FLAGS)
# "Therefore, the response is 3.375." / "Therefore, ... 3.375": a concluding sentence that ends on its value.
_CONCLUDING_SENTENCE = re.compile(
    r"(?:^|(?<=[.!?\n]))[ \t*#>_]*(?:therefore|thus|hence|so|overall|in\s+conclusion|in\s+summary|all\s+in\s+all"
    r"|finally)\b(?:[^.!?\n]|\.\.\.|(?<=\d)\.(?=\d))*?"
    r"(?:\b(?:is|be|was|of|at|as|a|an|score|level|rating|grade)|[:=]|\.\.\.)[\s*_`]*"
    rf"(?P<open>[{_QUOTES}]?)" + _NUMBER + rf"(?=[ \t*_`{_QUOTES})\]]*(?:[.!?](?:\s|$)|\n|$))",
    _FLAGS,
)
_BOUND_BEFORE = re.compile(
    r"\b(?:than|below|above|under|over|beyond|exceeds?|at\s+least|at\s+most|up\s+to|not)\s+(?:a|an|the)?[\s*_`]*$",
    _FLAGS,
)

# Contexts that make a candidate a quotation of the rubric or the instructions, not an answer.
_NEGATED_BEFORE = re.compile(
    r"(?:\bnot|n['\u2019]t|\bnever|\bcannot|\bno\s+longer)\s+(?:(?:be|been|being|yet|even|really|quite|always|"
    r"likely|necessarily)\s+)*$",
    _FLAGS,
)
_HYPOTHETICAL_BEFORE = re.compile(
    r"\b(?:to|in\s+order\s+to|must|may|might|could)\s+(?:(?:be|have|been|also|only|ever|possibly)\s+)*$", _FLAGS
)
_CONDITIONAL = re.compile(r"\b(?:if|unless|whether)\b", _FLAGS)
_SCALE_END_BEFORE = re.compile(
    r"\b(?:maximum|minimum|highest|lowest|max|min|top|bottom|possible|perfect|full)\s+$", _FLAGS
)
_PLURAL_BEFORE = re.compile(
    r"\b(?:the|these|those|low|high|higher|lower|both|two|all|of|and|such|some|its|their|his|her)\s+$", _FLAGS
)
_RUBRIC_TALK_AFTER = re.compile(
    r"[ \t\"'\u201c\u201d\u2018\u2019*]*,?[ \t]*(?:if|unless|when|whenever|only|would(?!\s+be\s+(?:an?\s+|the\s+)?"
    r"(?:most\s+)?(?:appropriate|fair|fitting|reasonable|justified|warranted|suitable|accurate|right|correct|best))|"
    r"should|could|might|may|must|"
    r"requires?|needs?|means|describes?|indicates?|is\s+(?:the\s+)?(?:maximum|minimum|highest|lowest|reserved|"
    r"given|used)|are)\b",
    _FLAGS,
)
# "Score 3: A moderate level ..." -- a rubric line quoted back, not an answer.
_ECHO_TAIL = re.compile(r"\s*[:.)\]\u2013\u2014-]?\s*[^\s*.!]", _FLAGS)
_NEGATED_ARTICLE_BEFORE = re.compile(r"\bnot\s+(?:a|an|the)?\s*$", _FLAGS)

# What the decisive value may not have around it.
_SECOND_POINT = re.compile(r"\.\d")
_ATTACHED = re.compile(r"[A-Za-z_]|-[A-Za-z]")
_LIST_OR_RANGE = re.compile(
    r",[ \t]*[-\u2212+]?\d"
    r"|[ \t]*\**[ \t]*(?:[-\u2013\u2014~]|\bto\b|\bor\b|\band\b)[ \t]*\**[ \t]*[-\u2212+]?\d",
    _FLAGS,
)
_DENOMINATOR_TAIL = re.compile(
    rf"[ \t]*\**[ \t]*\(?[ \t]*(?:[{_SLASH}]|out[ \t]+of)[ \t]*(?P<den>\d+(?:\.\d+)?)(?![\d.]*\d)", _FLAGS
)
_PERCENT_TAIL = re.compile(r"[ \t]*%")
_OTHER_SCALE = re.compile(
    rf"\d[ \t]*\**[ \t]*[{_SLASH}][ \t]*\**[ \t]*(?P<den1>\d+(?:\.\d+)?)"
    r"|\bout[ \t]+of[ \t]+(?P<den2>\d+(?:\.\d+)?)"
    r"|\bscale[ \t]+(?:of|from)[ \t]+(?P<lo1>\d+)[ \t]*(?:[-\u2013\u2014]|to)[ \t]*(?P<hi1>\d+)"
    r"|[(\[][ \t]*(?P<lo2>[01])[ \t]*(?:[-\u2013\u2014]|to)[ \t]*(?P<hi2>\d+)[ \t]*[)\]]"
    r"|\b(?P<points>\d+)[- ]point[ \t]+scale\b"
    r"|\d[ \t]*(?:points|point|pts)\b|%|\bper[ \t]?cent\b",
    _FLAGS,
)
_SENTENCE_END = re.compile(rf"\n|[.!?](?=[ \t]+[{_QUOTES}*(\[]?[A-Z])")
_LONE_NUMBER = re.compile(r"[\s*_`\"'#>:=\[\](){}]*" + _NUMBER + r"[\s*_`\"'\[\](){}.!]*", _FLAGS)
_SENTENCE_BREAK = re.compile(r"[.!?][ \t]+\S")
_COMPLETE_END = re.compile(rf"[.!?)\]}}>*`\d{_QUOTES}\u2026]\s*\Z")


@dataclass(frozen=True)
class ParseResult:
    """What the parser read: the score (or None), the rule that decided or why there is none, and
    where the decisive value lies in the original text (`start`, `end`; None when there is none).

    `stands` is where a score stands when its value was rejected for the value alone (out of range,
    a runaway digit string: "5.8", "3.375.375"), the one decisive candidate; None otherwise (no
    candidate, several, or one set aside for its context: another scale, a range, a sign). The
    expected-score readout reads the model's distribution there (`eval_scripts.answers.expected_score`).
    """

    value: float | None
    rule: str | None = None
    reason: str | None = None
    start: int | None = None
    end: int | None = None
    stands: tuple[int, int] | None = None


class _Rejected(Exception):
    """The decisive candidate is unusable (runaway digits, another scale, a range, out of range ...);
    `value_only` when the value alone was wrong and the place is still where the score stands."""

    def __init__(self, reason: str, *, value_only: bool = False):
        super().__init__(reason)
        self.value_only = value_only


@dataclass(frozen=True)
class _Text:
    """The prepared text (same length as the normalised input) and the map back to the original offsets."""

    body: str
    offsets: list[int] | None  # None: identity (an ASCII text)
    length: int

    def original(self, start: int, end: int) -> tuple[int, int]:
        if self.offsets is None:
            return start, end
        return self.offsets[start], (self.offsets[end - 1] + 1) if end > start else self.offsets[start]


def parse_score(text: object, style: str = "direct") -> float | None:
    """Score in [1.0, 5.0] at one decimal from a model response, or None: the paper's deterministic parser g.

    Strict on purpose (a guess would move ICC silently): closed think blocks and mentions of the scale are set
    aside, then the strongest kind of candidate decides (a declared final score, then a concluding phrase, then
    `x/5`, then a score mention); a value outside [1, 5] or two disagreeing candidates of that kind give None.
    `style` ("direct", "cot", "paper") is the prompt style the answer was given to. `parse_details` also says which
    rule decided and why a text has no score ([Readouts](../readouts.md))."""
    return parse_details(text, style).value


def parse_details(text: object, style: str = "direct") -> ParseResult:
    """`parse_score` with the rule that decided, the reason for a None, and the value's place in `text`."""
    if style not in PARSE_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {PARSE_STYLES}")
    if not isinstance(text, str):
        return ParseResult(None, reason="not a text")
    prepared = _prepare(text)
    if prepared is None:
        return ParseResult(None, reason="unfinished reasoning block")
    body = prepared.body
    cut_off = _is_cut_off(body)
    skipped: set[int] = set()
    # a style whose answer states the score first: a cut-off explanation after it does not matter
    score_first = prompt_style(style).score_first
    for rule, finder, final in _KINDS:
        candidates = finder(body, skipped)
        if cut_off and not final:
            candidates = [c for c in candidates if score_first and _on_first_line(body, c)]
        if candidates:
            return _decide(prepared, rule, candidates if final else candidates[-1:])
    if not cut_off or score_first:
        lone = _lone_number(body, style)
        if lone is not None:
            return _decide(prepared, "lone number", [lone])
    return ParseResult(None, reason="text cut off before its conclusion" if cut_off else "no score stated")


def _decide(prepared: _Text, rule: str, candidates: list[re.Match]) -> ParseResult:
    """Validate every candidate of the deciding kind; they must all give one value."""
    body = prepared.body
    try:
        values = {_validated(body, match) for match in candidates}
    except _Rejected as err:
        only = err.value_only and len(candidates) == 1
        stands = prepared.original(candidates[0].start("num"), candidates[0].end("num")) if only else None
        return ParseResult(None, rule, str(err), stands=stands)
    if len(values) > 1:
        shown = ", ".join(f"{v:g}" for v in sorted(values))
        return ParseResult(None, rule, f"different final scores stated ({shown})")
    start, end = prepared.original(candidates[-1].start("num"), candidates[-1].end("num"))
    return ParseResult(values.pop(), rule, None, start, end)


# -- preparing the text -------------------------------------------------------------------------


def _blank(text: str) -> str:
    """`text` with every character but newlines made a space (offsets and lines stay where they were)."""
    return re.sub(r"[^\n]", " ", text)


def _normalise(text: str) -> tuple[str, list[int] | None]:
    """NFKC per character (ASCII stays as it is), with the original offset of each output character."""
    if text.isascii():
        return text, None
    parts: list[str] = []
    offsets: list[int] = []
    position = 0
    for run in _NON_ASCII.finditer(text):
        parts.append(text[position : run.start()])
        offsets.extend(range(position, run.start()))
        for index in range(run.start(), run.end()):
            normalised = unicodedata.normalize("NFKC", text[index])
            parts.append(normalised)
            offsets.extend([index] * len(normalised))
        position = run.end()
    parts.append(text[position:])
    offsets.extend(range(position, len(text)))
    return "".join(parts), offsets


def _prepare(text: str) -> _Text | None:
    """Normalised text with reasoning blocks, scale notes and level ranges blanked; None: unfinished reasoning."""
    body, offsets = _normalise(text)
    body = _CLOSED_BLOCK.sub(lambda m: _blank(m.group()), body)
    if _OPEN_TAG.search(body):
        return None  # unclosed: the model ran out of tokens while thinking
    closing = max(_CLOSE_TAG.finditer(body), key=lambda m: m.end(), default=None)
    if closing is not None:  # a pre-filled opening tag: only the text after the reasoning counts
        body = _blank(body[: closing.end()]) + body[closing.end() :]
    for pattern in (_SCALE_NOTE, _LEVEL_RANGE):
        body = pattern.sub(lambda m: _blank(m.group()), body)
    return _Text(body, offsets, len(text))


# -- candidates -------------------------------------------------------------------------------


def _declared(body: str, skipped: set[int]) -> list[re.Match]:
    found = []
    for label in _DECLARED_LABEL.finditer(body):
        value = _VALUE_AFTER_LABEL.match(body, label.end())
        if value is not None:
            found.append(value)
    return found


def _conclusions(body: str, skipped: set[int]) -> list[re.Match]:
    """Kind B; the values of conclusions set aside as quotations go into `skipped` for the weaker kinds."""
    found = []
    for match in _CONCLUSION.finditer(body):
        if match["receives"] and not _LABEL_NOUN.search(match["filler"]):
            continue  # "the patient gets 3 sessions": no score named
        if match["scores"] and _PLURAL_BEFORE.search(body[max(0, match.start() - 60) : match.start()]):
            continue  # "the scores 4 and 5 differ": the noun, not the verb
        _keep_conclusion(body, match, match.start(), found, skipped)
    for match in _CONCLUDING_SENTENCE.finditer(body):
        if match.start("num") not in {m.start("num") for m in found} | skipped:
            _keep_conclusion(body, match, match.start("num"), found, skipped)
    return sorted(found, key=lambda m: m.start("num"))


def _keep_conclusion(body: str, match: re.Match, verb: int, found: list[re.Match], skipped: set[int]) -> None:
    """Add `match` to `found`, or its value to `skipped` when it is a quotation (quoted, negated, hypothetical)."""
    before = body[max(0, verb - 60) : verb]
    value_before = body[max(0, match.start("num") - 40) : match.start("num")]
    quoted = bool(match["open"]) and _quoted(body, match)
    if (
        quoted
        or _NEGATED_BEFORE.search(before)
        or _HYPOTHETICAL_BEFORE.search(before)
        or _BOUND_BEFORE.search(value_before)
        or _conditional_sentence(body, verb)
        or _RUBRIC_TALK_AFTER.match(body, match.end())
    ):
        skipped.add(match.start("num"))
    else:
        found.append(match)


def _fractions(body: str, skipped: set[int]) -> list[re.Match]:
    return [m for m in _FRACTION.finditer(body) if not _set_aside(body, m, skipped)]


def _mentions(body: str, skipped: set[int]) -> list[re.Match]:
    found = []
    for label in _MENTION_LABEL.finditer(body):
        value = _VALUE_AFTER_LABEL.match(body, label.end())
        if value is None or _set_aside(body, value, skipped) or _is_rubric_echo(body, value):
            continue
        before = body[max(0, label.start() - 40) : label.start()]
        if _SCALE_END_BEFORE.search(before) or _NEGATED_ARTICLE_BEFORE.search(before):
            continue
        found.append(value)
    return found


# (rule, finder, whether its candidates are final statements that must agree), strongest first.
_KINDS = (
    ("declared final score", _declared, True),
    ("conclusion", _conclusions, True),
    ("fraction of five", _fractions, False),
    ("score mention", _mentions, False),
)


def _set_aside(body: str, value: re.Match, skipped: set[int]) -> bool:
    """A quotation (of kind C or D): a value a conclusion set aside, quoted, hypothetical or followed by rubric talk."""
    start = value.start("num")
    return (
        start in skipped
        or (start > 0 and body[start - 1] in _QUOTES and _quoted(body, value))
        or _conditional_sentence(body, start)
        or _RUBRIC_TALK_AFTER.match(body, value.end()) is not None
    )


def _quoted(body: str, value: re.Match) -> bool:
    return body[value.end() : value.end() + 1] in tuple(_QUOTES) and body[value.start("num") - 1] in _QUOTES


def _conditional_sentence(body: str, position: int) -> bool:
    """An "if", "unless" or "whether" earlier in the sentence that holds `position`."""
    return _CONDITIONAL.search(body, _sentence_start(body, position), position) is not None


def _is_rubric_echo(body: str, value: re.Match) -> bool:
    """'Score 3: ...' / 'score 4 requires ...': bare integer, no connector word, text follows."""
    if value["connector"].strip() or "." in value["num"] or value["sign"]:
        return False
    rest = body[value.end() :].split("\n", 1)[0]
    return bool(_ECHO_TAIL.match(rest)) and rest.strip(" .*!") != ""


def _is_cut_off(body: str) -> bool:
    """Ends inside a sentence after a long line or a finished sentence (a loop cut by the token limit)."""
    stripped = body.rstrip()
    if not stripped or _COMPLETE_END.search(stripped):
        return False
    last_line = stripped.rsplit("\n", 1)[-1]
    return len(last_line.split()) >= CUT_OFF_MIN_WORDS or _SENTENCE_BREAK.search(last_line) is not None


def _on_first_line(body: str, value: re.Match) -> bool:
    """On the answer's first line, and that line was finished (the text goes on below it)."""
    first = len(body) - len(body.lstrip())
    newline = body.find("\n", first)
    return newline != -1 and value.start("num") < newline


def _lone_number(body: str, style: str) -> re.Match | None:
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines or sum(_LONE_NUMBER.fullmatch(line) is not None for line in lines) > 1:
        return None  # no answer, or several bare numbers: ambiguous
    whole = _LONE_NUMBER.fullmatch(body)
    if whole is not None:
        return whole
    last = not prompt_style(style).score_first  # an analysis ends with its score, a direct answer starts with it
    line = lines[-1] if last else lines[0]
    if _LONE_NUMBER.fullmatch(line) is None:
        return None
    offset = body.rindex(line) if last else body.index(line)
    return _LONE_NUMBER.match(body, offset, offset + len(line))  # matched in `body`: tails see the full text


# -- validating the decisive value ------------------------------------------------------------------


def _sentence_start(body: str, position: int) -> int:
    start = 0
    for end in _SENTENCE_END.finditer(body, 0, position + 8):  # the lookahead sees the next sentence's start
        if end.end() <= position:
            start = end.end()
    return start


def _sentence(body: str, match: re.Match) -> str:
    """The sentence (at most the line) that holds the value."""
    start = _sentence_start(body, match.start("num"))
    end = _SENTENCE_END.search(body, match.end())
    return body[start : end.start() if end else len(body)]


def _other_scale(sentence: str) -> bool:
    for found in _OTHER_SCALE.finditer(sentence):
        denominator = found["den1"] or found["den2"]
        if denominator is not None:
            if Decimal(denominator) != 5:
                return True
        elif found["lo1"] is not None:
            if (int(found["lo1"]), int(found["hi1"])) != (1, 5):
                return True
        elif found["lo2"] is not None:
            if int(found["hi2"]) > 5:
                return True
        elif found["points"] is not None:
            if int(found["points"]) != 5:
                return True
        else:  # points, percent
            return True
    return False


def _validated(body: str, match: re.Match) -> float:
    number, tail = match["num"], body[match.end() :]
    if match["sign"]:
        raise _Rejected("signed value")
    if _SECOND_POINT.match(tail) or sum(c.isdigit() for c in number) > MAX_NUMBER_DIGITS:
        raise _Rejected("runaway digit string", value_only=True)
    if _ATTACHED.match(tail):
        raise _Rejected("not a plain number (letters or an exponent attached)")
    if _LIST_OR_RANGE.match(tail):
        raise _Rejected("a range, a list or a decimal comma")
    denominator = _DENOMINATOR_TAIL.match(tail) if match.re is not _FRACTION else None
    if denominator is not None and Decimal(denominator["den"]) != 5:
        raise _Rejected("another scale")
    if _PERCENT_TAIL.match(tail) or _other_scale(_sentence(body, match)):
        raise _Rejected("another scale")
    value = Decimal(number)
    if not Decimal(str(SCORE_MIN)) <= value <= Decimal(str(SCORE_MAX)):
        raise _Rejected("out of range", value_only=True)
    return round_half_up(value)
